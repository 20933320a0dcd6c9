// ParameterStore: one server's shard of the parameters and the consistency
// rules (BSP, SSP, ASP) that govern when pushes are applied and pulls are
// answered. Pure logic, no sockets: ServerNode drives it from the network.
//
// Versions and clocks. A chunk's version is the number of iterations applied
// to it (0 after initialisation; -1 before). A worker's clock is the number
// of iterations it has pushed.
//  * BSP: the pushes of all workers for iteration t are summed, averaged and
//    applied as one optimizer step (version t -> t+1); a pull for iteration
//    t is answered once the chunk's version is >= t. One server step equals
//    one single-process step with the global batch.
//  * SSP(s): every push is applied on arrival (gradient / workers); a pull
//    for iteration t is answered once t - (slowest worker's clock) <= s.
//  * ASP: pushes applied on arrival; pulls answered at once.
// A push carries (worker, iteration); the same push twice is applied once.
//
// Thread safety: not thread-safe; the server's event loop owns it.
#ifndef STRATA_SERVER_PARAMETER_STORE_H_
#define STRATA_SERVER_PARAMETER_STORE_H_

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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

struct StoreOptions {
  Consistency consistency = Consistency::kBsp;
  int staleness = 0;  // SSP bound s
  int workers = 1;  // pushers of every key, unless head_first_key says otherwise
  // Stanza with several FC workers: keys >= head_first_key hold the head;
  // their pushers are the `head_workers` FC workers. Clocks count the
  // pushes of keys below head_first_key only. -1: no head keys.
  int head_first_key = -1;
  int head_workers = 0;
  OptimizerConfig optimizer;
  LrScheduleConfig schedule;
  int64_t total_steps = 1;  // for the schedule
};

enum class PushOutcome {
  kAccepted,   // stored (BSP: waiting for the other workers)
  kApplied,    // this push completed an update
  kDuplicate,  // this (worker, iteration) was already received: ignored
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

  // Sets the initial value of a chunk; ignored (OK) when it already has one
  // (set by another init or restored from a checkpoint).
  absl::Status Init(const Chunk& c, const float* values);
  bool initialized(const Chunk& c) const;

  // Number of pushers of `key` (workers, or head_workers for head keys).
  int pushers(uint32_t key) const;

  // `worker` is the pusher's rank among pushers(key). Fails with
  // InvalidArgument for a worker rank out of range, an iteration
  // ahead of what the consistency model allows (BSP: a push for t while the
  // chunk is at version < t), or an uninitialised chunk.
  absl::StatusOr<PushOutcome> Push(int worker, int64_t iteration, const Chunk& c,
                                   const float* gradient);

  // Whether a pull for `iteration` may be answered now. iteration < 0 asks
  // for whatever is there once initialised.
  bool CanServe(const Chunk& c, int64_t iteration) const;
  // Records that a pull for `iteration` was answered (for the SSP bound check).
  void NoteServed(int64_t iteration);
  const float* value(const Chunk& c) const;
  // The chunk's current values as a tensor sharing the store's buffer. The
  // store never writes into a buffer someone else still holds (it copies on
  // write), so the handle may be sent zero-copy.
  Tensor value_tensor(const Chunk& c) const;
  int64_t version(const Chunk& c) const;

  // Pushes seen per worker rank (its clock).
  const std::vector<int64_t>& clocks() const { return clocks_; }
  int64_t min_clock() const;
  // Largest (pull iteration - slowest clock) ever answered: SSP keeps it <= s.
  int64_t max_served_lead() const { return max_served_lead_; }

  // Values, optimizer state, versions and clocks of this shard.
  Checkpoint Capture() const;
  // Restores a shard saved by Capture() of the same plan and server.
  absl::Status Restore(const Checkpoint& checkpoint);

 private:
  struct Slot {
    Chunk chunk;
    Tensor value;
    Tensor state;     // optimizer state, {slots, length}
    Tensor pending;   // BSP: sum of gradients of the current iteration
    std::set<int> pushed;  // BSP: workers whose push for `version` arrived
    std::vector<int64_t> last_push;  // SSP/ASP: last iteration applied, per worker
    int64_t version = -1;
    int64_t updates = 0;   // optimizer steps applied (Adam's bias correction)
  };
  ParameterStore(const PartitionPlan& plan, int server, StoreOptions options,
                 std::unique_ptr<Optimizer> optimizer);
  Slot* Find(const Chunk& c);
  const Slot* Find(const Chunk& c) const;
  void Apply(Slot& slot, const float* gradient, float scale, int64_t iteration);

  PartitionPlan plan_;
  int server_;
  StoreOptions options_;
  std::unique_ptr<Optimizer> optimizer_;
  LrSchedule schedule_;
  std::vector<Slot> slots_;
  std::vector<int> slot_of_chunk_;  // plan chunk index -> slot, -1 elsewhere
  std::vector<int64_t> clocks_;
  int64_t max_served_lead_ = 0;
};

}  // namespace strata

#endif  // STRATA_SERVER_PARAMETER_STORE_H_
