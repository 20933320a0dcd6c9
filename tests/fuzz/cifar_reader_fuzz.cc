// The CIFAR-10 reader (core/data/dataset.h: ReadCifar10) on arbitrary
// files: whole records only, labels in range.
#include <cstdint>

#include "core/data/dataset.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::InputFile file(data, size);
  (void)strata::ReadCifar10({file.path()});
  return 0;
}
