// `strata_bench train`: training throughput of Strata's modes side by side
// with PyTorch peers on the same model, data, batch, threads and (emulated)
// network. Contenders alternate (A B A B) so machine drift cancels; the
// report gives medians, each contender's ratio to the first, bytes per
// iteration and a worker's iteration breakdown, optionally for every value
// of a swept network setting, as a table, JSON, CSV and a PNG plot.
#ifndef STRATA_TOOLS_BENCH_TRAIN_BENCH_H_
#define STRATA_TOOLS_BENCH_TRAIN_BENCH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/launch/launch_spec.h"

namespace strata::bench {

struct TrainBenchOptions {
  std::string config;
  std::vector<std::string> modes = {"single"};
  int steps = 300;
  int repeat = 3;
  int threads = 2;       // CPU threads on the machine, shared by a cluster's processes
  int batch_size = 0;    // global batch; 0 = the config's
  // Single mode: where Strata and the PyTorch peer compute ("" = the
  // config's device and the peer's CPU; "cuda", "cuda:N"), and whether
  // both use TensorFloat-32 there.
  std::string device;
  bool tf32 = false;
  // The cluster of the ps and stanza modes, as strata_launch runs it: its
  // layout (conv_workers is also the DDP peer's world size), each emulated
  // host's link and latency (the DDP peer's too; "" = loopback) and pinned
  // CPUs. Each run adds its mode, steps and outputs.
  LaunchSpec cluster;
  // "bandwidth=100mbit,1gbit,10gbit", "latency=0,1ms" or
  // "cpu=none,conv1=25%" (CPU limits from the start, strata_launch
  // --cpu-schedule; several joined by ';'): every value is a point of the
  // report (and of the plot).
  std::string sweep;
  // "wire.format=fp32,bf16": every cluster mode runs once per value, the job
  // starting with the knob there (tools/launch/knob_variants.h); each point
  // names the best static value per mode.
  std::string knob;
  // With `knob` on one cluster mode: the knob's cost model
  // (scheduler/secbad/knob_cost_model.h), fitted to every value's
  // iterations at every link rate run, for strata_launch --controller
  // changepoint --cost-model.
  std::string cost_model_out;
  // Run the PyTorch peers where torch is installed: beside `single`, one
  // process; beside ps/stanza, DistributedDataParallel over conv_workers ranks.
  bool with_peer = true;
  std::string json_out;  // "" = no file
  std::string csv_out;
  std::string plot_out;  // PNG; needs a sweep
  std::string python = "/usr/bin/python3";
};

absl::Status RunTrainBench(const TrainBenchOptions& options);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_TRAIN_BENCH_H_
