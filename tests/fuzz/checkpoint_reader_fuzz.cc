// The checkpoint reader (core/train/checkpoint.h) on arbitrary files: a bad
// version, CRC or size is refused; nothing is read or allocated past the
// file.
#include <cstdint>

#include "core/train/checkpoint.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::InputFile file(data, size);
  (void)strata::ReadCheckpoint(file.path());
  return 0;
}
