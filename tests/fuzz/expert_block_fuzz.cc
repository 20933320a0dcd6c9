// The MoE expert exchange's check of a block (moe/zmq_expert_exchange.h:
// ReadExpertBlock) on arbitrary messages: counts, shape and frame must
// agree before any byte is copied, so nothing reads or allocates past what
// the message holds.
#include <cstdint>

#include "moe/zmq_expert_exchange.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  absl::StatusOr<IncomingMessage> m = Decode(fuzz::FramesOf(data, size), fuzz::SmallLimits());
  if (!m.ok()) return 0;
  try {
    absl::StatusOr<ReceivedBlock> block = ReadExpertBlock(*m, /*rank=*/0, /*size=*/4);
    if (block.ok() && block->block.rows.defined()) (void)block->block.rows.data()[0];
  } catch (const kj::Exception&) {
  }
  return 0;
}
