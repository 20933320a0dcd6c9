// `strata_bench train`: training throughput of Strata against PyTorch on
// the same model, data, batch and threads, alternating the contenders so
// machine drift cancels, reported as medians and ratios next to the
// machine's compute limit.
#ifndef STRATA_TOOLS_BENCH_TRAIN_BENCH_H_
#define STRATA_TOOLS_BENCH_TRAIN_BENCH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace strata::bench {

struct TrainBenchOptions {
  std::string config;
  std::vector<std::string> modes = {"single"};
  int steps = 300;
  int repeat = 3;
  int threads = 2;
  int batch_size = 0;     // 0 = the config's
  int servers = 1;        // ps, stanza
  int conv_workers = 2;   // ps, stanza
  int fc_workers = 1;     // stanza
  bool with_peer = true;  // run the PyTorch peer where torch is installed
  std::string json_out;   // "" = no JSON report
  std::string python = "/usr/bin/python3";
};

absl::Status RunTrainBench(const TrainBenchOptions& options);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_TRAIN_BENCH_H_
