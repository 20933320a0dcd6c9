// ParameterStore: one server's shard of a job's keys and the consistency
// rules (BSP, SSP, ASP) that govern when pushes are applied and pulls are
// answered. Pure logic, no sockets: ServerNode drives it from the network.
//
// Keys (core/model/server_keys.h) are parameter keys, whose pushes are
// gradients applied by the optimizer, or state keys, whose pushes are
// values the shard keeps the mean of. Each key is pushed by every conv
// worker or by every FC worker; "pushers" below means those of the key.
//
// Clocks and versions, per chunk. A pusher's clock on a chunk is the number
// of its iterations applied there; a pusher pushes its iterations of a
// chunk in order, each once (a repeat is a duplicate, ignored). A chunk's
// version is the number of iterations every pusher has completed on it: the
// smallest clock (0 after initialisation; -1 before).
//  * BSP: the pushes of all pushers for iteration t are combined and applied
//    as one step (gradients: their mean through the optimizer; state: their
//    mean); version t -> t+1. A push for t is refused while the version is
//    below t (the pusher ran ahead without pulling). A pull for t is
//    answered once the version is >= t. One server step equals one
//    single-process step with the global batch.
//  * SSP(s): every push is applied on arrival (gradient / pushers; state: the
//    mean of each pusher's latest values). A pull for iteration t is
//    answered once t - version <= s, on every chunk it names, so a value
//    served for t holds every pusher's iterations before t - s: exactly s,
//    never s + 1. A push for t is refused when t - version > s or when it
//    skips an iteration (t > the pusher's clock).
//  * ASP: pushes applied on arrival, pulls answered at once; a push that
//    skips an iteration is refused.
// A refused push changes nothing. Check() tells whether a push would be
// accepted without changing anything, so a request naming several chunks
// can be validated whole before any chunk is applied.
//
// Thread safety: not thread-safe; the server's event loop owns it.
#ifndef STRATA_SERVER_PARAMETER_STORE_H_
#define STRATA_SERVER_PARAMETER_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/server_keys.h"
#include "core/net/partition_plan.h"
#include "core/optim/lr_schedule.h"
#include "core/optim/optimizer.h"
#include "core/tensor/tensor.h"
#include "core/train/checkpoint.h"

namespace strata {

enum class Consistency { kBsp, kSsp, kAsp };

// Parses "bsp", "ssp" or "asp".
absl::StatusOr<Consistency> ParseConsistency(const std::string& name);
const char* ConsistencyName(Consistency c);

// What a key holds and who pushes it.
struct KeyRule {
  KeyKind kind = KeyKind::kParameter;
  KeyOwner owner = KeyOwner::kConvWorkers;
};

struct StoreOptions {
  Consistency consistency = Consistency::kBsp;
  int staleness = 0;  // SSP bound s
  int conv_workers = 1;
  int fc_workers = 0;
  // One rule per key of the plan; empty: every key a parameter key pushed
  // by the conv workers (the plain key-value mode).
  std::vector<KeyRule> keys;
  OptimizerConfig optimizer;
  LrScheduleConfig schedule;
  int64_t total_steps = 1;  // for the schedule
};

enum class PushOutcome {
  kAccepted,   // stored (BSP: waiting for the other pushers)
  kApplied,    // this push completed an update
  kDuplicate,  // this (pusher, iteration) was already received: ignored
};

class ParameterStore {
 public:
  // Holds the chunks of `plan` that belong to `server`.
  static absl::StatusOr<std::unique_ptr<ParameterStore>> Create(const PartitionPlan& plan,
                                                                int server,
                                                                const StoreOptions& options);

  int server() const { return server_; }
  const PartitionPlan& plan() const { return plan_; }
  // True when chunk `c` (a plan chunk) lives here.
  bool Owns(const Chunk& c) const { return c.server == server_; }
  const KeyRule& rule(uint32_t key) const { return rules_[key]; }

  // Sets the initial value of a chunk; ignored (OK) when it already has one
  // (set by another init or restored from a checkpoint).
  absl::Status Init(const Chunk& c, const float* values);
  bool initialized(const Chunk& c) const;

  // Number of pushers of `key`.
  int pushers(uint32_t key) const;

  // Whether `pusher` (its rank among pushers(key)) may push `iteration` to
  // chunk `c`, by the rules above, without changing anything. Errors:
  // InvalidArgument for a pusher rank out of range or a negative iteration;
  // FailedPrecondition for an uninitialised chunk or a push the
  // consistency model does not allow, naming the iterations.
  absl::StatusOr<PushOutcome> Check(int pusher, int64_t iteration, const Chunk& c) const;
  // Check(), then applies the push. `values` holds the chunk's floats: a
  // gradient for a parameter key, the pusher's values for a state key.
  absl::StatusOr<PushOutcome> Push(int pusher, int64_t iteration, const Chunk& c,
                                   const float* values);

  // Whether a pull for `iteration` may be answered now. iteration < 0 asks
  // for whatever is there once initialised.
  bool CanServe(const Chunk& c, int64_t iteration) const;
  // Records that a pull of `c` for `iteration` was answered (for the SSP
  // bound check).
  void NoteServed(const Chunk& c, int64_t iteration);
  const float* value(const Chunk& c) const;
  // The chunk's current values as a tensor sharing the store's buffer. The
  // store never writes into a buffer someone else still holds (it copies on
  // write), so the handle may be sent zero-copy.
  Tensor value_tensor(const Chunk& c) const;
  int64_t version(const Chunk& c) const;
  // The smallest version among `chunks` (-1 for none, or one uninitialised).
  int64_t min_version(const std::vector<Chunk>& chunks) const;

  // Per conv worker: the most iterations it has pushed of any conv-worker
  // key (for reports).
  const std::vector<int64_t>& clocks() const { return clocks_; }
  // The smallest of clocks() (for reports).
  int64_t min_clock() const;
  // Largest (pull iteration - version of a chunk it named) ever answered:
  // SSP keeps it <= s.
  int64_t max_served_lead() const { return max_served_lead_; }

  // Values, optimizer state, versions and clocks of this shard.
  Checkpoint Capture() const;
  // Restores a shard saved by Capture() of the same plan and server.
  absl::Status Restore(const Checkpoint& checkpoint);

 private:
  struct Slot {
    Chunk chunk;
    KeyRule rule;
    Tensor value;
    Tensor state;    // optimizer state, {slots, length} (parameter keys)
    Tensor pending;  // BSP: sum of the pushes of the current iteration
    // SSP/ASP state keys: each pusher's latest values, {pushers, length}.
    Tensor latest;
    std::vector<bool> pushed;    // BSP: pushers whose push for `version` arrived
    std::vector<int64_t> clock;  // per pusher: its iterations applied
    int64_t version = -1;        // BSP: iterations applied; SSP/ASP: min(clock)
    int64_t updates = 0;         // optimizer steps applied (Adam's bias correction)
  };
  ParameterStore(const PartitionPlan& plan, int server, StoreOptions options,
                 std::unique_ptr<Optimizer> optimizer);
  Slot* Find(const Chunk& c);
  const Slot* Find(const Chunk& c) const;
  // Writes a copy of the value when a pull reply still holds the buffer.
  void PrepareWrite(Slot& slot);
  void ApplyGradient(Slot& slot, const float* gradient, float scale, int64_t iteration);
  void ApplyPushAsync(Slot& slot, int pusher, int64_t iteration, const float* values);
  PushOutcome ApplyPushBsp(Slot& slot, int pusher, int64_t iteration, const float* values);
  std::string Describe(const Slot& slot) const;

  PartitionPlan plan_;
  int server_;
  StoreOptions options_;
  std::vector<KeyRule> rules_;  // one per key
  std::unique_ptr<Optimizer> optimizer_;
  LrSchedule schedule_;
  std::vector<Slot> slots_;
  std::vector<int> slot_of_chunk_;  // plan chunk index -> slot, -1 elsewhere
  std::vector<int64_t> clocks_;
  int64_t max_served_lead_ = 0;
};

}  // namespace strata

#endif  // STRATA_SERVER_PARAMETER_STORE_H_
