// The protocol message decoder (core/net/transport.h: Decode, PeekRequestId)
// on arbitrary frames: it must refuse or accept without crashing, and every
// field of an accepted header must read within the traversal limit, also
// through the readers of the knob messages' lists (core/net/knob_messages.h).
#include <cstdint>

#include "core/net/admission.h"
#include "core/net/knob_messages.h"
#include "core/net/transport.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  const WireLimits limits = fuzz::SmallLimits();
  RawMessage raw = fuzz::FramesOf(data, size);
  (void)PeekRequestId(raw, limits);
  absl::StatusOr<IncomingMessage> m = Decode(std::move(raw), limits);
  if (!m.ok()) return 0;
  try {
    const wire::Header::Reader h = m->header();
    (void)KindName(h.getKind());
    (void)DescribePeer(h.getSenderRole(), h.getSenderRank());
    int64_t sum = h.getJobId() + h.getIteration() + h.getRequestId();
    for (int64_t d : h.getShape()) sum += d;
    for (int64_t c : h.getCounts()) sum += c;
    for (uint64_t b : h.getFrameBytes()) sum += static_cast<int64_t>(b);
    for (auto slice : h.getSlices()) {
      sum += slice.getKey() + static_cast<int64_t>(slice.getOffset() + slice.getLength());
    }
    for (auto node : h.getNodes()) sum += node.getRank() + node.getAddress().size();
    for (auto knob : h.getKnobs()) sum += knob.getName().size() + knob.getValue().size();
    // The coordinator reads a lease request's reports, a worker its answer's.
    for (const IterationReport& r : IterationReportsOf(h)) sum += r.record.rows + r.rank;
    sum += DeclaredKnobsOf(h).size() + KnobChangesOf(h).size();
    for (int64_t c : h.getClocks()) sum += c;
    sum += h.getJobIdentity().size() + h.getJobToken().size() + h.getErrorMessage().size() +
           h.getJobSpec().size() + h.getBarrierName().size() + h.getShmRegion().size();
    for (size_t i = 0; i < m->num_frames(); ++i) sum += static_cast<int64_t>(m->frame_size(i));
    (void)sum;
  } catch (const kj::Exception&) {
    // A header past the traversal limit throws on the field that passes it:
    // callers catch it the same way.
  }
  return 0;
}
