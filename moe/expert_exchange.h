// ExpertExchange: the messages between the processes of an expert group
// (the FC workers that hold one MoE layer's experts between them). MoE code
// sees only this interface; moe/zmq_expert_exchange.h carries it over
// ZeroMQ between real processes.
//
// A block is a list of row counts and the rows themselves: `counts` integers
// (rows per expert, parameter sizes, or small values such as a capacity),
// then sum(counts) rows of `width` floats (none when the width is 0: the
// counts are the message). Every block carries a tag naming
// the call, layer, phase and pipelining chunk it belongs to, so blocks that
// arrive early (a faster peer already on its next chunk) wait for their turn.
//
//   exchange.Send(peer, tag, block);                  // returns at once
//   STRATA_ASSIGN_OR_RETURN(ExchangeBlock b, exchange.Receive(peer, tag, expect));
#ifndef STRATA_MOE_EXPERT_EXCHANGE_H_
#define STRATA_MOE_EXPERT_EXCHANGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor/tensor.h"

namespace strata::moe {

// What a block holds (the order of one MoE call's exchanges).
enum class ExchangePhase : uint8_t {
  kCapacity = 0,     // counts {largest need, tokens}: the group agrees on C
  kSlots = 1,        // tokens dispatched to their experts' owner
  kOutputs = 2,      // the experts' outputs, back to the tokens' owner
  kOutputGrads = 3,  // d(loss)/d(outputs), to the experts' owner
  kSlotGrads = 4,    // d(loss)/d(slots), back to the tokens' owner
  kWeights = 5,      // an owner's expert parameters (data-parallel experts)
  kWeightGrads = 6,  // gradients of a peer's experts, to their owner
};
const char* PhaseName(ExchangePhase phase);

struct ExchangeTag {
  int64_t call = 0;   // the MoE call (forward + backward) counted by the layer
  int32_t layer = 0;  // which MoE layer of the model
  ExchangePhase phase = ExchangePhase::kSlots;
  int32_t chunk = 0;   // pipelining chunk in [0, chunks)
  int32_t chunks = 1;  // the pipelining degree the sender used

  bool operator<(const ExchangeTag& o) const;
  bool operator==(const ExchangeTag& o) const;
  std::string ToString() const;  // "slots of layer 0, call 7, chunk 1/2"
};

struct ExchangeBlock {
  std::vector<int64_t> counts;
  Tensor rows;  // {sum(counts), width}; undefined when sum(counts) is 0
};

// What a receiver accepts: `width` floats per row and one count per entry
// of `max_counts`, each in [0, max_counts[i]] — or equal to it when `exact`.
struct BlockExpectation {
  int64_t width = 0;
  std::vector<int64_t> max_counts;
  bool exact = false;
};

// OK when `block` meets `expect`, else InvalidArgument naming what differs.
absl::Status CheckBlock(const ExchangeBlock& block, const BlockExpectation& expect);

class ExpertExchange {
 public:
  virtual ~ExpertExchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Queues `block` for peer `to` (not rank()) and returns; the rows are
  // sent in the background (the block keeps its tensor alive until then).
  virtual absl::Status Send(int to, const ExchangeTag& tag, const ExchangeBlock& block) = 0;
  // The block `tag` from peer `from`. A block that fails `expect` is
  // refused (logged, naming the problem) and the wait goes on for a good
  // one; DeadlineExceeded, naming the peer and the tag, when none comes
  // within the exchange's timeout.
  virtual absl::StatusOr<ExchangeBlock> Receive(int from, const ExchangeTag& tag,
                                                const BlockExpectation& expect) = 0;
};

}  // namespace strata::moe

#endif  // STRATA_MOE_EXPERT_EXCHANGE_H_
