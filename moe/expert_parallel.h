// ExpertParallel: one MoE layer's experts spread over the F processes of an
// expert group (Tutel's expert parallelism). The one parameter layout,
// whatever the settings (ExpertShare):
//  * E >= F (F divides E): process f owns experts [f*E/F, (f+1)*E/F);
//  * E < F (E divides F, F/E divides H): expert e is sharded over the F/E
//    processes [e*F/E, (e+1)*F/E), each holding a slice of its hidden units
//    (columns of w1 and b1, rows of w2; the first slice holds b2).
// Every process routes its own tokens over all E experts.
//
// Per call, with the group's settings (identical on every process, and free
// to change at any call):
//  * parallelism r = kExpert (tokens travel): each process sends every
//    holder the used slot rows of that holder's experts (all-to-all), the
//    holders run their share over the rows of all processes as one GEMM per
//    expert, and send the outputs back (a sharded expert's partial outputs
//    are summed by the tokens' process); backward sends output gradients to
//    the holders and slot gradients back.
//  * parallelism r = kData (weights travel): every process gathers all
//    experts' parameters, runs all E experts on its own tokens, and sends
//    the gradients of each owner's experts to it (reduce-scatter).
//  * pipelining degree d: the slot buffer is cut into d chunks of capacity
//    rows; an owner computes chunk j while chunk j+1 is still in flight and
//    its outputs of chunk j travel back while it computes chunk j+1.
// Only used slot rows travel and are computed (padding holds no token).
// Every d and r gives the same result up to float summation order.
//
// Gradients of the owned experts are the MEAN over the group's processes of
// each process's gradient (each process's loss is the mean over its own
// tokens), which equals what data-parallel training of a replicated layer
// averages to.
//
// Collective: every process of the group makes the same calls in the same
// order (AgreeCapacity, Forward, Backward, GatherReplica).
#ifndef STRATA_MOE_EXPERT_PARALLEL_H_
#define STRATA_MOE_EXPERT_PARALLEL_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "moe/expert_exchange.h"
#include "moe/expert_ffn.h"

namespace strata::moe {

enum class ExpertParallelism { kData = 0, kExpert = 1 };

// What one process of the group holds: experts [first_expert, first_expert
// + experts), hidden units [hidden_begin, hidden_begin + hidden) of each,
// and their output bias when `output_bias`.
struct ExpertShare {
  int first_expert = 0;
  int experts = 0;
  int64_t hidden_begin = 0;
  int64_t hidden = 0;
  bool output_bias = true;
};
// "data" / "expert", and back (InvalidArgument naming the accepted words).
const char* ParallelismName(ExpertParallelism r);
absl::StatusOr<ExpertParallelism> ParseParallelism(const std::string& name);

struct ParallelSettings {
  int chunks = 1;                                              // pipelining degree d >= 1
  ExpertParallelism parallelism = ExpertParallelism::kExpert;  // r
};

class ExpertParallel {
 public:
  // Takes this process's share of `all` (every expert, initialised as the
  // single-process layer would be). `layer` tells this layer's blocks from
  // other MoE layers'. InvalidArgument when the experts cannot be laid out
  // over the group (see above). `exchange` must outlive this object.
  static absl::StatusOr<std::unique_ptr<ExpertParallel>> Create(const std::string& name_prefix,
                                                                ExpertFfn& all,
                                                                ExpertExchange* exchange,
                                                                int layer);

  // The share of process `rank` (ours: share(exchange.rank())).
  ExpertShare share(int rank) const;
  int local_experts() const { return local_.experts(); }
  std::vector<Parameter*> parameters() { return local_.parameters(); }
  const ParallelSettings& settings() const { return settings_; }
  // InvalidArgument for chunks < 1. Applies from the next Forward.
  absl::Status set_settings(const ParallelSettings& settings);

  // The group's largest need and token count: the maxima of every
  // process's values (capacity rules that depend on them then agree).
  absl::StatusOr<std::pair<int64_t, int64_t>> AgreeCapacity(int64_t largest_need, int64_t tokens);
  // out[e, r] = FFN_e(slots[e, r]) for r < used[e], over all E experts, for
  // this process's slot buffers {E, C, D}. Keeps what Backward needs when
  // `training`.
  absl::Status Forward(const Tensor& slots, const std::vector<int64_t>& used, const Tensor& out,
                       bool training);
  // grad_slots on the used rows from grad_out; the owned experts' gradients.
  absl::Status Backward(const Tensor& grad_out, const Tensor& grad_slots);
  // Every expert's current parameters, gathered from their owners.
  absl::StatusOr<ExpertFfn*> GatherReplica();

 private:
  ExpertParallel(const std::string& name_prefix, const ExpertFfn& all, ExpertExchange* exchange,
                 int layer, const ExpertShare& mine);
  int size() const { return exchange_->size(); }
  int rank() const { return exchange_->rank(); }
  ExchangeTag Tag(ExchangePhase phase, int chunk = 0) const;
  // Sends to a peer, or keeps the block for ourselves (rank()).
  absl::Status Post(int to, const ExchangeTag& tag, ExchangeBlock block);
  absl::StatusOr<ExchangeBlock> Take(int from, const ExchangeTag& tag,
                                     const BlockExpectation& expect);

  // r = kExpert, in four steps per direction: every chunk of our slot rows
  // (or their gradients) to the holders; per chunk, the rows of every
  // source gathered into one buffer {owned, F * chunk rows, D} (sources one
  // after another per expert), computed, and returned to each source; the
  // holders' answers collected into our buffer.
  absl::Status SendToHolders(const Tensor& buf, ExchangePhase phase);
  absl::StatusOr<Tensor> ReceiveChunk(int j, ExchangePhase phase,
                                      std::vector<std::vector<int64_t>>* starts,
                                      std::vector<int64_t>* filled);
  absl::Status ReturnChunk(int j, ExchangePhase phase, const Tensor& rows,
                           const std::vector<std::vector<int64_t>>& starts);
  absl::Status CollectFromHolders(ExchangePhase phase, const Tensor& buf);
  absl::Status ForwardTokens(const Tensor& slots, const std::vector<int64_t>& used,
                             const Tensor& out);
  absl::Status BackwardTokens(const Tensor& grad_out, const Tensor& grad_slots);
  absl::Status ExchangeWeights();  // fills replica_ (phase kWeights)
  absl::Status BackwardWeights(const Tensor& grad_out, const Tensor& grad_slots);

  ExpertExchange* exchange_;
  int layer_;
  std::string name_prefix_;
  int experts_;  // E
  int64_t dim_, hidden_;
  ExpertFfn local_;                     // this process's share
  std::unique_ptr<ExpertFfn> replica_;  // all experts, for r = kData and GatherReplica
  ParallelSettings settings_;
  int64_t call_ = 0;
  std::map<ExchangeTag, ExchangeBlock> kept_;  // blocks posted to ourselves

  // What the training Forward keeps for Backward.
  ParallelSettings call_settings_;
  int64_t capacity_ = 0;
  // kExpert: per chunk, the counts we sent to each owner and received from
  // each source, and the owned experts' activations.
  std::vector<std::vector<std::vector<int64_t>>> sent_, received_;  // [chunk][peer][expert]
  std::vector<ExpertActivations> saved_;
  ExpertActivations replica_saved_;  // kData
};

}  // namespace strata::moe

#endif  // STRATA_MOE_EXPERT_PARALLEL_H_
