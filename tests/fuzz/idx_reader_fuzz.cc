// The IDX reader (core/data/dataset.h: ReadIdxFile) on arbitrary files, raw
// or gzip-compressed: a header whose sizes the data does not hold is
// refused before anything that large is allocated.
#include <cstdint>

#include "core/data/dataset.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::InputFile file(data, size);
  (void)strata::ReadIdxFile(file.path());
  return 0;
}
