// WorkerSpeedContext: the worker-speed kind of KnobContext
// (scheduler/secbad/knob_context.h): how each global batch divides over the
// conv workers (batch.shares) against how fast each conv worker computes —
// a straggler is a conv worker whose rows take longer. The context is
// ln(seconds per row) of every conv worker, read from each one's compute
// seconds over the rows it computed (the controller's own records and the
// others', relayed); the cost model is
//
//   T_v(s) = max_r rows_r(v) * exp(s_r) + overhead_v
//
// with rows_r(v) the rows value v gives conv worker r of the global batch
// (core/model/batch_shares.h) and overhead_v the rest of an iteration beyond
// its slowest conv worker's compute, fitted to measured iterations. A conv
// worker's first two iterations, and its first after its rows changed, are
// not read (start-up, whose second iteration is still slow too; kernels
// made for a new batch size).
//
// File:
//   {"knob": "batch.shares", "mode": "ps", "context": "worker-speed",
//    "global_batch": 64, "conv_workers": 2,
//    "seconds_per_row": 0.0006, "noise": 0.1,
//    "values": {"1:1": {"overhead_seconds": 0.004}, "3:1": {...}, ...},
//    "trace": {"slow_probability": 0.5, "min_slowdown": 1.5, "max_slowdown": 6,
//              "spread": 1.25, "outliers": 0.01}}
// seconds_per_row: a conv worker's usual speed; noise: the standard
// deviation of one iteration's ln(seconds per row) about its segment's;
// trace: how the runtime environment draws a segment (every conv worker's
// speed within a factor `spread` of the usual, log-uniform; then with
// probability slow_probability one conv worker, chosen at random, slowed
// by a factor log-uniform in [min_slowdown, max_slowdown]; else none) and
// how often an iteration's readings are an outlier (a hiccup of a shared
// machine: one iteration of a conv worker far slower or faster, with
// nothing changed), anywhere within kOutlierSpread (ln) of the usual
// speed. The inference expects outliers at that share too, so one stray
// iteration does not move the rows. Files without "outliers": none.
#ifndef STRATA_SCHEDULER_SECBAD_WORKER_SPEED_CONTEXT_H_
#define STRATA_SCHEDULER_SECBAD_WORKER_SPEED_CONTEXT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scheduler/secbad/knob_context.h"

namespace strata::secbad {

struct WorkerSpeedTrace {
  double slow_probability = 0.5;
  double min_slowdown = 1.5;
  double max_slowdown = 6;
  // Each conv worker's speed in a segment, before any slowdown: the usual
  // one times a factor log-uniform in [1/spread, spread], drawn per worker
  // (1: every worker at the usual speed). Live conv workers differ by a
  // few tens of percent with nothing limited (the processes they share
  // cores with); a policy that never met such a segment has no answer
  // for it.
  double spread = 1.25;
  // The share of iterations whose readings are outliers, in [0, 1).
  double outliers = 0.0;
};

// An outlier's reading lies anywhere within this of ln(the usual seconds
// per row), either way: a factor of e^3 (20).
inline constexpr double kOutlierSpread = 3.0;

// One measured iteration of a run: each conv worker's compute seconds and
// rows, and the iteration's wall seconds (conv worker 0's).
struct SpeedSample {
  std::vector<double> compute_seconds;
  std::vector<int64_t> rows;
  double wall_seconds = 0;
};

class WorkerSpeedContext final : public KnobContext {
 public:
  // From runs of the job at each value (runs[value]: each run's iterations
  // in order; start-up already left out): overhead_v the median of
  // wall - max compute over v's iterations, seconds_per_row the lower
  // quartile of every conv worker's seconds per row, the noise the standard
  // deviation of each conv worker's ln(seconds per row) about its run's
  // mean, and the outliers the share of iterations with a conv worker's
  // reading further than kOutlierDeviations noises from that mean (the
  // trace given is kept, its outliers replaced). InvalidArgument
  // for fewer than two values, a value that does not give every conv
  // worker rows, or samples that do not have one entry per conv worker.
  static absl::StatusOr<std::shared_ptr<const WorkerSpeedContext>> Fit(
      std::string mode, int64_t global_batch, int conv_workers,
      const std::map<std::string, std::vector<std::vector<SpeedSample>>>& runs,
      WorkerSpeedTrace trace = {});
  static absl::StatusOr<std::shared_ptr<const WorkerSpeedContext>> FromJson(
      const nlohmann::json& json, const std::string& source);

  const std::string& kind() const override;
  const std::string& knob() const override;
  const std::string& mode() const override { return mode_; }
  const std::vector<std::string>& values() const override { return values_; }
  int dims() const override { return conv_workers_; }
  absl::Status FitsJob(int conv_workers, int64_t global_batch) const override;
  bool reads_every_process() const override { return true; }
  std::unique_ptr<ContextReader> NewReader() const override;
  double IterationSeconds(const std::string& value,
                          const std::vector<double>& context) const override;
  std::vector<NormalGammaPrior> Priors() const override;
  std::vector<double> SampleContext(Rng& rng) const override;
  // noise(), in every context and under every value.
  double ObservationNoise(const std::string& value,
                          const std::vector<double>& context) const override {
    (void)value;
    (void)context;
    return noise_;
  }
  OutlierModel outliers() const override;
  std::string Describe(const std::vector<double>& context) const override;
  nlohmann::json ToJson() const override;

  int64_t global_batch() const { return global_batch_; }
  double noise() const { return noise_; }
  double seconds_per_row() const { return seconds_per_row_; }
  const WorkerSpeedTrace& trace() const { return trace_; }
  double overhead_seconds(const std::string& value) const { return overhead_.at(value); }
  // The rows `value` gives each conv worker.
  const std::vector<int64_t>& rows(const std::string& value) const { return rows_.at(value); }

 private:
  WorkerSpeedContext() = default;
  // Checks the values and fills rows_; InvalidArgument naming `source`.
  absl::Status Complete(const std::string& source);

  std::string mode_;
  int64_t global_batch_ = 0;
  int conv_workers_ = 0;
  double seconds_per_row_ = 0;
  double noise_ = 0.1;
  WorkerSpeedTrace trace_;
  std::vector<std::string> values_;
  std::map<std::string, double> overhead_;
  std::map<std::string, std::vector<int64_t>> rows_;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_WORKER_SPEED_CONTEXT_H_
