// The contenders of `strata_bench train` and how each runs once: Strata
// in one of its modes (strata_launch, from the bench's LaunchSpec), the
// PyTorch peer beside single mode (one process), and PyTorch's
// DistributedDataParallel beside the cluster modes (one rank per conv
// worker, each on an emulated host of its own when the network is
// emulated). The bench (train_bench.h) describes which run, and the
// benchmark runner (harness/runner.h) runs them.
#ifndef STRATA_TOOLS_BENCH_TRAIN_CONTENDERS_H_
#define STRATA_TOOLS_BENCH_TRAIN_CONTENDERS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/secbad/link_rate_context.h"
#include "scheduler/secbad/worker_speed_context.h"
#include "tools/bench/train_bench.h"

namespace strata::bench {

// The conditions one point of the report runs in.
struct NetworkSetting {
  std::string bandwidth;  // "" = loopback
  std::string latency = "0";
  // CPU limits of Strata's processes from the start, as --cpu-schedule
  // takes them ("conv1=25%@0"; "" = none).
  std::string cpu_schedule;
};

enum class TrainContenderKind { kStrata, kTorch, kTorchDdp };

struct TrainContender {
  std::string label;
  TrainContenderKind kind = TrainContenderKind::kStrata;
  std::string mode;        // Strata's mode
  std::string config;      // Strata's job config ("" = the bench's)
  std::string knob_value;  // the value the job starts the --knob with ("" = none)
};

struct TrainRun {
  double images_per_sec = 0;
  double bytes_per_iteration = 0;
  std::map<std::string, double> seconds_per_iteration;
  // On a GPU (or the checking device): the most bytes the run's tensors
  // held there at once, as Strata's summary and the PyTorch peer report it.
  std::optional<double> peak_memory_bytes;
  // When the runner was asked for records (a cost model is fitted): every
  // steady iteration's compute and rows of each conv worker (worker speed),
  // or conv worker 0's communication seconds (link rate).
  std::vector<secbad::SpeedSample> speed_samples;
  std::vector<double> communication_seconds;
};

// What a Strata run's records are read for: the cost model being fitted.
enum class RecordsWanted { kNone, kWorkerSpeed, kLinkRate };

// Runs contenders; owns the scratch directory of their logs and results.
class TrainContenderRunner {
 public:
  // `records_wanted`: keep every Strata run's conv worker iterations
  // (TrainRun::speed_samples, or communication_seconds).
  TrainContenderRunner(const TrainBenchOptions& o, int64_t batch, std::string scratch,
                       RecordsWanted records_wanted)
      : o_(o), batch_(batch), scratch_(std::move(scratch)), records_wanted_(records_wanted) {}

  // One run of `c` under `net`; an error names the contender and shows the
  // end of its log.
  absl::StatusOr<TrainRun> Run(const TrainContender& c, const NetworkSetting& net);

 private:
  std::string Path(const std::string& what) const;
  absl::StatusOr<TrainRun> RunStrata(const TrainContender& c, const NetworkSetting& net);
  absl::StatusOr<TrainRun> RunTorch();
  absl::StatusOr<TrainRun> RunTorchDdp(const NetworkSetting& net);
  // Says once that the network could not be emulated here, and why.
  void WarnLoopbackOnce(const std::string& why);

  const TrainBenchOptions& o_;
  const int64_t batch_;
  const std::string scratch_;
  const RecordsWanted records_wanted_;
  int runs_ = 0;
  bool warned_ = false;
};

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_TRAIN_CONTENDERS_H_
