// StepLoop: the one training loop every worker runs (single, ps and stanza
// conv workers, FC workers). A StepProgram says what the role does in each
// phase of an iteration; the loop runs the phases in order, takes the
// device (core/control/device_policy.h) when a compute phase begins without
// it, keeps it from phase to phase, and lets it go at every wait on a peer
// (core/util/wait_observer.h: the loop is the observer of the program's
// components) and at the end of the iteration; a wait inside a compute
// phase takes it back when it ends. So a job that does not wait keeps the
// device for its whole iteration, and one that waits lets another job
// compute meanwhile. A policy may also ask a holder to yield
// (DevicePolicy::ShouldYield: weighted shares) at the start of a compute
// phase and at every point inside one where the compute could change hands
// (WaitObserver::MayYield: between two layers of the model). The loop also
// brings the job's knobs up to date at each iteration boundary, times
// every phase, and hands one IterationRecord per iteration to the metrics
// file, the Controller and the progress reporter.
//
//   load → forward → exchange → backward → synchronise → [boundary]
//
// `synchronise` may rewind (a server came back from a checkpoint): the
// iteration is then recorded as not completed and the loop continues at
// the iteration the program names. `boundary` runs only after a completed
// iteration (evaluation, checkpoints); it is not training time.
//
//   StepLoop loop(options);
//   client->set_wait_observer(loop.waits());   // before Run
//   model->set_wait_observer(loop.waits());
//   STRATA_ASSIGN_OR_RETURN(int64_t done, loop.Run(program));
//
// Thread safety: one thread runs the loop; the program's components must
// call the observer only from that thread.
#ifndef STRATA_RUNTIME_STEP_LOOP_H_
#define STRATA_RUNTIME_STEP_LOOP_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/control/controller.h"
#include "core/control/device_policy.h"
#include "core/control/iteration_record.h"
#include "core/control/knobs.h"
#include "core/net/traffic.h"
#include "core/train/metrics_writer.h"
#include "core/train/training_reporter.h"
#include "core/util/pending_value.h"
#include "core/util/wait_observer.h"

namespace strata {

// What a phase sees and reports.
struct StepContext {
  int64_t iteration = 0;
  // Set by the phase that computes the loss (and the learning rate, where
  // this process updates parameters), for the reporter and the record. A
  // device's loss may still be on its way: the loop reads it after
  // Synchronise, once the step's later work is queued.
  PendingValue<double> loss;
  double lr = -1.0;
  // Set by the phase that takes the iteration's input: the batch rows it
  // computes on (for the record).
  int64_t rows = 0;
  // Set by Synchronise when it returns false: the iteration to go on at.
  int64_t rewind_to = 0;
};

// Bytes sent to and received from each kind of peer so far.
struct TrafficTotals {
  std::array<uint64_t, 3> sent{};
  std::array<uint64_t, 3> received{};
};

class StepProgram {
 public:
  virtual ~StepProgram() = default;
  // The phases of iteration ctx.iteration; each defaults to nothing.
  virtual absl::Status Load(StepContext&) { return absl::OkStatus(); }
  virtual absl::Status Forward(StepContext&) { return absl::OkStatus(); }
  virtual absl::Status Exchange(StepContext&) { return absl::OkStatus(); }
  virtual absl::Status Backward(StepContext&) { return absl::OkStatus(); }
  // False: redo from ctx.rewind_to.
  virtual absl::StatusOr<bool> Synchronise(StepContext&) { return true; }
  // After completed iteration ctx.iteration.
  virtual absl::Status Boundary(StepContext&) { return absl::OkStatus(); }
  // Cumulative traffic, for the per-iteration bytes.
  virtual TrafficTotals Traffic() const { return {}; }
};

// Keeps a process's JobKnobs in step with its job (runtime/knob_agreement.h
// over the coordinator). Before(i) returns once every change that takes
// effect at or before iteration i is known (it may wait, through `waits`).
class KnobSchedule {
 public:
  virtual ~KnobSchedule() = default;
  virtual absl::Status Before(int64_t iteration, JobKnobs& knobs, WaitObserver* waits) = 0;
  // Sends a Controller's proposals to the coordinator (not waiting).
  virtual void Propose(const std::vector<KnobProposal>& proposals) = 0;
  // This process's record of an iteration, for a controller of the job
  // that reads every process's (relayed with the next lease request).
  virtual void Report(const IterationRecord&) {}
  // This process's controller reads every process's records: from now on
  // they are relayed to it.
  virtual void WantReports() {}
  // The job's other processes' records relayed since the last call.
  virtual std::vector<IterationRecord> TakeReports() { return {}; }
};

struct StepLoopOptions {
  std::string process;  // "conv worker 0", for records
  int64_t first_iteration = 0;
  int64_t total_iterations = 0;
  DevicePolicy* device = nullptr;        // null: always held
  Controller* controller = nullptr;      // null: no changes; its events go to `records`
  JobKnobs* knobs = nullptr;             // null: none
  KnobSchedule* schedule = nullptr;      // null: the knobs never change
  MetricsWriter* records = nullptr;      // one JSON line per iteration; null: none
  TrainingReporter* reporter = nullptr;  // progress and metrics of the loss; null: none
};

class StepLoop {
 public:
  explicit StepLoop(StepLoopOptions options);
  StepLoop(const StepLoop&) = delete;
  StepLoop& operator=(const StepLoop&) = delete;

  // The observer to give every component that waits on a peer.
  WaitObserver* waits() { return &observer_; }
  // Runs iterations until total_iterations; returns the number done
  // (total_iterations). The first error stops the loop, naming the
  // iteration and phase.
  absl::StatusOr<int64_t> Run(StepProgram& program);
  // Totals over the iterations run, the first (start-up) left out.
  const StepTimes& times() const { return times_; }

 private:
  class Observer final : public WaitObserver {
   public:
    explicit Observer(StepLoop& loop) : loop_(loop) {}
    void WaitBegins() override;
    void WaitEnds() override;
    void MayYield() override;

   private:
    StepLoop& loop_;
    int depth_ = 0;
    double started_ = 0;
    bool released_ = false;  // the outermost wait let the device go
  };

  template <typename Body>
  auto RunPhase(Phase phase, Body body) -> decltype(body());
  // Lets the device go and takes it back if the policy asks a holder to.
  void YieldIfAsked();
  // The device, timing the wait for it as the current phase's.
  void Acquire();
  void Release();
  // Lets the device go if held, and tells the policy the iteration is over.
  void EndIteration();
  void Record(const IterationRecord& record);

  StepLoopOptions options_;
  AlwaysHeldDevice always_held_;
  DevicePolicy* device_;
  Observer observer_{*this};
  bool holding_ =
      false;  // the device, from a compute phase's start to a wait or the iteration's end
  Phase phase_ = Phase::kLoad;
  IterationRecord record_;
  StepTimes times_;
  size_t controller_events_written_ = 0;  // beside the records
};

}  // namespace strata

#endif  // STRATA_RUNTIME_STEP_LOOP_H_
