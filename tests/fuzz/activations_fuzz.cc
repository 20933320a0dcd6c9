// The FC worker's check of a conv worker's activations (core/net/fc_link.h:
// ReadActivations) on arbitrary messages, against the default job's
// boundary ({32, 7, 7, 64}, 10 classes) and a small one ({2, 3}, 4 classes).
#include <cstdint>

#include "core/net/fc_link.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  absl::StatusOr<IncomingMessage> m = Decode(fuzz::FramesOf(data, size), fuzz::SmallLimits());
  if (!m.ok()) return 0;
  try {
    (void)ReadActivations(*m, Shape{32, 7, 7, 64}, 10);
    (void)ReadActivations(*m, Shape{2, 3}, 4);
  } catch (const kj::Exception&) {
  }
  return 0;
}
