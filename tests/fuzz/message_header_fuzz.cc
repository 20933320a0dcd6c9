// The protocol message decoder (core/net/transport.h: Decode, PeekRequestId)
// on arbitrary frames: it must refuse or accept without crashing, and every
// field of an accepted envelope and of every service's body must read within
// the traversal limit, also through the readers of the knob messages' lists
// (core/net/knob_messages.h).
#include <cstdint>

#include "core/net/admission.h"
#include "core/net/knob_messages.h"
#include "core/net/ps_wire.h"
#include "core/net/stanza_wire.h"
#include "core/net/transport.h"
#include "moe/expert_wire.h"
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
    (void)KindName(TypeOf(h));
    (void)DescribePeer(h.getSenderRole(), h.getSenderRank());
    int64_t sum = h.getJobId() + h.getIteration() + h.getRequestId();
    for (uint64_t b : h.getFrameBytes()) sum += static_cast<int64_t>(b);
    for (auto node : h.getNodes()) sum += node.getRank() + node.getAddress().size();
    sum += h.getJobIdentity().size() + h.getJobToken().size() + h.getErrorMessage().size() +
           h.getJobSpec().size() + h.getBarrierName().size() + h.getAdminToken().size();
    // Every service's body, whatever the message's service says: a body
    // read as another service's struct must not crash either.
    const auto ps = BodyOf<wire::ps::Body>(h);
    for (auto slice : ps.getSlices()) {
      sum += slice.getKey() + static_cast<int64_t>(slice.getOffset() + slice.getLength());
    }
    for (int64_t c : ps.getClocks()) sum += c;
    for (uint32_t slot : ps.getShmSlots()) sum += slot;
    sum += ps.getShmHost().size();
    for (int64_t d : BodyOf<wire::stanza::Body>(h).getShape()) sum += d;
    const auto moe = BodyOf<wire::moe::Body>(h);
    for (int64_t d : moe.getShape()) sum += d;
    for (int64_t c : moe.getCounts()) sum += c;
    sum += moe.getTag().getCall();
    for (auto knob : BodyOf<wire::knob::Body>(h).getKnobs()) {
      sum += knob.getName().size() + knob.getValue().size();
    }
    // The coordinator reads a lease request's reports, a worker its answer's.
    for (const IterationReport& r : IterationReportsOf(h)) sum += r.record.rows + r.rank;
    sum += DeclaredKnobsOf(h).size() + KnobChangesOf(h).size();
    for (size_t i = 0; i < m->num_frames(); ++i) sum += static_cast<int64_t>(m->frame_size(i));
    (void)sum;
  } catch (const kj::Exception&) {
    // A header past the traversal limit throws on the field that passes it:
    // callers catch it the same way.
  }
  return 0;
}
