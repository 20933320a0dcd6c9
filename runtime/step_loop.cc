#include "runtime/step_loop.h"

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/util/clock.h"

namespace strata {

StepLoop::StepLoop(StepLoopOptions options)
    : options_(std::move(options)),
      device_(options_.device != nullptr ? options_.device : &always_held_) {
  record_.process = options_.process;
}

void StepLoop::Observer::WaitBegins() {
  if (depth_++ > 0) return;
  started_ = MonotonicSeconds();
  released_ = loop_.holding_;
  if (released_) loop_.Release();
}

void StepLoop::Observer::WaitEnds() {
  if (--depth_ > 0) return;
  const double ended = MonotonicSeconds();
  const int phase = static_cast<int>(loop_.phase_);
  loop_.record_.wait_seconds[phase] += ended - started_;
  // A compute phase goes on computing; a communication phase takes the
  // device back only when the next compute phase begins.
  if (released_ && IsComputePhase(loop_.phase_)) loop_.Acquire();
}

void StepLoop::Observer::MayYield() {
  if (depth_ == 0) loop_.YieldIfAsked();
}

void StepLoop::YieldIfAsked() {
  if (!holding_ || !device_->ShouldYield()) return;
  Release();  // a job behind its share computes first
  Acquire();
}

void StepLoop::Acquire() {
  const double asked = MonotonicSeconds();
  device_->Acquire();
  record_.device_wait_seconds[static_cast<int>(phase_)] += MonotonicSeconds() - asked;
  holding_ = true;
}

void StepLoop::Release() {
  holding_ = false;
  device_->Release();
}

template <typename Body>
auto StepLoop::RunPhase(Phase phase, Body body) -> decltype(body()) {
  phase_ = phase;
  const double start = MonotonicSeconds();
  if (IsComputePhase(phase)) {
    YieldIfAsked();
    if (!holding_) Acquire();
  }
  auto result = body();
  record_.phase_seconds[static_cast<int>(phase)] += MonotonicSeconds() - start;
  return result;
}

void StepLoop::EndIteration() {
  if (holding_) Release();
  device_->IterationEnds();
}

void StepLoop::Record(const IterationRecord& record) {
  if (options_.records != nullptr) options_.records->Write(record.ToJson());
  if (options_.schedule != nullptr) options_.schedule->Report(record);
  if (options_.controller != nullptr && options_.schedule != nullptr) {
    // The others' records relayed so far, then our own.
    std::vector<KnobProposal> proposals;
    std::vector<IterationRecord> seen = options_.schedule->TakeReports();
    seen.push_back(record);
    for (const IterationRecord& r : seen) {
      for (KnobProposal& p : options_.controller->Observe(r)) proposals.push_back(std::move(p));
    }
    if (!proposals.empty()) options_.schedule->Propose(proposals);
    const std::vector<ControllerEvent>& events = options_.controller->events();
    for (; controller_events_written_ < events.size(); ++controller_events_written_) {
      if (options_.records == nullptr) continue;
      options_.records->Write(
          ControllerEventJson(options_.process, events[controller_events_written_]));
    }
  }
}

absl::StatusOr<int64_t> StepLoop::Run(StepProgram& program) {
  const int64_t first = options_.first_iteration;
  int64_t iteration = first;
  if (options_.controller != nullptr && options_.schedule != nullptr &&
      options_.controller->reads_every_process()) {
    options_.schedule->WantReports();
  }
  TrafficTotals before = program.Traffic();
  auto fail = [&](const absl::Status& s, Phase phase) {
    if (holding_) Release();  // the other jobs of the process go on
    return absl::Status(
        s.code(), absl::StrCat("iteration ", iteration, ", ", PhaseName(phase), ": ", s.message()));
  };
  while (iteration < options_.total_iterations) {
    record_ = IterationRecord();
    record_.process = options_.process;
    record_.iteration = iteration;
    record_.start_seconds = MonotonicSeconds();
    if (options_.knobs != nullptr) {
      if (options_.schedule != nullptr) {
        phase_ = Phase::kLoad;
        absl::Status s = options_.schedule->Before(iteration, *options_.knobs, &observer_);
        if (!s.ok()) return fail(s, Phase::kLoad);
      }
      absl::Status s = options_.knobs->ApplyUpTo(iteration);
      if (!s.ok()) return fail(s, Phase::kLoad);
      record_.knobs = options_.knobs->values();
    }
    StepContext ctx;
    ctx.iteration = iteration;
    struct Step {
      Phase phase;
      absl::Status (StepProgram::*run)(StepContext&);
    };
    static constexpr Step kSteps[] = {{Phase::kLoad, &StepProgram::Load},
                                      {Phase::kForward, &StepProgram::Forward},
                                      {Phase::kExchange, &StepProgram::Exchange},
                                      {Phase::kBackward, &StepProgram::Backward}};
    for (const Step& step : kSteps) {
      absl::Status s = RunPhase(step.phase, [&] { return (program.*step.run)(ctx); });
      if (!s.ok()) return fail(s, step.phase);
    }
    absl::StatusOr<bool> completed =
        RunPhase(Phase::kSynchronise, [&] { return program.Synchronise(ctx); });
    if (!completed.ok()) return fail(completed.status(), Phase::kSynchronise);
    record_.completed = *completed;
    if (ctx.loss.has_value()) {
      const absl::StatusOr<double>& loss = ctx.loss.Get();
      if (!loss.ok()) return fail(loss.status(), Phase::kSynchronise);
      record_.loss = *loss;
    }
    record_.rows = ctx.rows;
    record_.Summarise();
    const TrafficTotals after = program.Traffic();
    for (int k = 0; k < 3; ++k) {
      const char* kind = PeerKindName(static_cast<PeerKind>(k));
      record_.bytes_sent[kind] = after.sent[k] - before.sent[k];
      record_.bytes_received[kind] = after.received[k] - before.received[k];
    }
    before = after;
    if (iteration > first) {
      times_.Add(record_.compute_seconds, record_.communication_seconds, record_.wall_seconds);
    }
    if (!*completed) {
      EndIteration();
      Record(record_);
      iteration = ctx.rewind_to;
      continue;
    }
    if (options_.reporter != nullptr && record_.loss.has_value()) {
      options_.reporter->StepDone(iteration, *record_.loss, record_.wall_seconds, ctx.lr);
    }
    absl::Status s = RunPhase(Phase::kBoundary, [&] { return program.Boundary(ctx); });
    if (!s.ok()) return fail(s, Phase::kBoundary);
    EndIteration();
    Record(record_);
    ++iteration;
  }
  return iteration;
}

}  // namespace strata
