// DeviceArbiter: the device (this process's compute pool) shared by the
// StepLoops of several jobs in one process, under one of three policies
// (CrossoverScheduler, Luo et al., arXiv 2103.07974, fills one job's
// communication with another's computation):
//
//   exclusive  jobs take turns by whole iterations, in job order: a job
//              holds the device from its first compute phase of an
//              iteration to the iteration's end, waits included; no overlap.
//   naive      every job computes whenever it likes; they contend for the
//              cores.
//   crossover  a token: a job holds it during its compute phases and lets
//              it go at every wait on a peer (push/pull, activation
//              exchange, MoE all-to-all) and at the end of its iteration;
//              the ready job that has waited longest takes it. With
//              weights (shares of device time), the ready job with the
//              least held time per unit of weight takes it instead, and a
//              holder yields at the start of its next compute phase to a
//              waiting job that is behind it by that measure (ShouldYield),
//              so shares hold even for jobs that never wait on peers.
//              What counts is contested device time: held while another
//              job waited for the device. A job that uses the device while
//              no other wants it (the others wait on peers) is not charged,
//              so weights share exactly the time jobs compete for.
//              Weights decide only among jobs ready at once: a job alone
//              ready computes (the device never idles for a share).
//              A job may leave the turns between iterations and compute
//              as under naive (SetTakesTurns(false), the device.sharing
//              knob's "naive"), and come back to them; the others take
//              turns among themselves meanwhile. No job holds the token
//              across a wait either way, so mixing the two cannot deadlock.
//
// Why exclusive turns go in a fixed order: the processes of a job wait on
// each other. If two processes let different jobs go first, each could
// hold its device for a job whose peer waits for the other process's
// device: a deadlock. Every process follows the same order (the order the
// jobs were given), so the job whose turn it is runs its iteration on every
// process. Crossover never holds the token across a wait, so no such cycle
// can form.
//
//   DeviceArbiter arbiter(SharingPolicy::kCrossover, {{"a", 1}, {"b", 1}});
//   std::unique_ptr<DevicePolicy> a = arbiter.ForJob(0);  // StepLoopOptions::device
//
// Thread safety: each job's handle is used by that job's thread; the
// arbiter's methods may be called from any thread. A handle leaves the
// rotation when destroyed (a job that finished or failed never blocks the
// others), and must not outlive its arbiter.
#ifndef STRATA_SCHEDULER_CROSSOVER_H_
#define STRATA_SCHEDULER_CROSSOVER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/control/device_policy.h"

namespace strata {

enum class SharingPolicy { kExclusive, kNaive, kCrossover };

// "exclusive", "naive", "crossover"; InvalidArgument naming the choices.
absl::StatusOr<SharingPolicy> ParseSharingPolicy(std::string_view name);
const char* SharingPolicyName(SharingPolicy policy);
// `list` ("1,3"; "" = every job 1) as one positive weight per job, for
// `jobs` jobs; InvalidArgument naming what is wrong.
absl::StatusOr<std::vector<double>> ParseDeviceWeights(std::string_view list, size_t jobs);

struct DeviceShare {
  std::string job;      // for log lines and usage
  double weight = 1.0;  // share of device time under crossover (> 0)
};

// A job waiting for the token, as the crossover choice sees it.
struct TokenCandidate {
  int job = 0;
  uint64_t waiting_since = 0;  // order of arrival: smaller waited longer
  double held_seconds = 0;     // device time the arbiter counts for it
  double weight = 1.0;
};

// The crossover choice among `waiting` (not empty): the longest waiting
// when every weight is equal, else the least held time per weight (ties to
// the longest waiting). Returns an index into `waiting`.
size_t PickTokenHolder(const std::vector<TokenCandidate>& waiting);

class DeviceArbiter {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic
  // `jobs` in the order exclusive turns follow. `clock` (default: the
  // monotonic clock) times the device time each job holds.
  DeviceArbiter(SharingPolicy policy, std::vector<DeviceShare> jobs, Clock clock = nullptr);
  DeviceArbiter(const DeviceArbiter&) = delete;
  DeviceArbiter& operator=(const DeviceArbiter&) = delete;

  // The policy job `job`'s StepLoop uses (once per job).
  std::unique_ptr<DevicePolicy> ForJob(int job);

  SharingPolicy policy() const { return policy_; }
  struct Usage {
    std::string job;
    double held_seconds = 0;  // device time (exclusive: whole iterations)
    int64_t grants = 0;       // times the job was given the device
  };
  std::vector<Usage> usage() const;
  // Whether job `job` is blocked in Acquire now, waiting for the device:
  // the state a test or a diagnostic observes instead of guessing from time.
  bool Waiting(int job) const;

 private:
  class JobDevice;
  struct JobState {
    DeviceShare share;
    bool active = true;    // until its handle is gone
    bool waiting = false;  // in Acquire
    bool takes_turns = true;  // crossover: false once it left the turns
    uint64_t waiting_since = 0;
    double held_since = 0;
    Usage usage;
    // Crossover with weights: contested held time per weight (see above),
    // and since when its current hold is contested (-1: not, or not held).
    double counted_per_weight = 0;
    double contested_since = -1;
  };
  void Acquire(int job);
  void Release(int job);
  void SetTakesTurns(int job, bool on);
  // Whether `job` computes only when granted the device (mu_ held).
  bool Granted(const JobState& j) const {
    return policy_ != SharingPolicy::kNaive && j.takes_turns;
  }
  void IterationEnds(int job);
  bool ShouldYield(int job) const;
  void Leave(int job);
  // Whether `job` may take the device now (mu_ held).
  bool MayTake(int job) const;
  // counted_per_weight of `j` with the time it holds the device now (mu_ held).
  double CountedNow(const JobState& j) const;
  void Take(int job);
  void GiveBack(int job);
  // The next active job after `job` in exclusive order, or -1 (mu_ held).
  int NextTurn(int job) const;

  const SharingPolicy policy_;
  const Clock clock_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<JobState> jobs_;
  int holder_ = -1;  // exclusive and crossover: the job holding the device
  int turn_ = 0;     // exclusive: whose iteration is next
  uint64_t arrivals_ = 0;
  bool weighted_ = false;  // some weights differ
};

// The device.sharing knob: where several jobs share a worker process under
// crossover, how this job computes there: "crossover" (in turns with the
// others, letting the device go at every wait) or "naive" (whenever it
// likes, contending for the cores); declared by every worker whose device
// takes turns (runtime/cluster_hooks.h), starting at "crossover".
inline constexpr char kDeviceSharingKnob[] = "device.sharing";
// Registers device.sharing with KnobCatalog::Global(); a second call does nothing.
void RegisterDeviceSharingKnob();

}  // namespace strata

#endif  // STRATA_SCHEDULER_CROSSOVER_H_
