#include "tools/bench/train_bench.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/model/job_config.h"
#include "core/model/model.h"
#include "core/status.h"
#include "core/train/metrics_writer.h"
#include "core/util/subprocess.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/machine_limits.h"

namespace strata::bench {
namespace {

struct Contender {
  std::string label;
  ProcessSpec spec;
  std::string result_path;  // JSON with "images_per_sec"
  std::vector<double> images_per_sec;
  double bytes_per_iteration = 0;  // from the last run's summary (cluster modes)
};

absl::StatusOr<double> RunOnce(Contender& c, const std::string& log_path) {
  c.spec.output_path = log_path;
  std::filesystem::remove(c.result_path);
  STRATA_ASSIGN_OR_RETURN(int code, RunProcess(c.spec, absl::Minutes(30)));
  if (code != 0) {
    return absl::InternalError(absl::StrCat(c.label, " exited with status ", code,
                                            "; the end of its output:\n",
                                            FileTail(log_path, 2000)));
  }
  std::ifstream in(c.result_path);
  nlohmann::json result = nlohmann::json::parse(in, nullptr, false);
  if (!result.is_object() || !result.contains("images_per_sec")) {
    return absl::InternalError(absl::StrCat(c.label, " wrote no result to ", c.result_path));
  }
  c.bytes_per_iteration = result.value("bytes_per_iteration", 0.0);
  return result["images_per_sec"].get<double>();
}

bool PythonHasTorch(const std::string& python, const std::string& scratch) {
  ProcessSpec probe;
  probe.argv = {python, "-c", "import torch, numpy"};
  probe.output_path = scratch + "/torch_probe.log";
  absl::StatusOr<int> code = RunProcess(probe, absl::Minutes(2));
  return code.ok() && *code == 0;
}

}  // namespace

absl::Status RunTrainBench(const TrainBenchOptions& o) {
  if (o.config.empty()) return absl::InvalidArgumentError("train: --config is required");
  if (o.steps <= 0 || o.repeat <= 0 || o.threads <= 0) {
    return absl::InvalidArgumentError("train: --steps, --repeat and --threads must be > 0");
  }
  for (const std::string& mode : o.modes) {
    if (mode != "single" && mode != "ps" && mode != "stanza") {
      return absl::InvalidArgumentError(
          absl::StrCat("train: unknown mode \"", mode, "\" (use single, ps, stanza)"));
    }
  }
  STRATA_ASSIGN_OR_RETURN(JobConfig config, LoadJobConfig(o.config));
  const int64_t batch = o.batch_size > 0 ? o.batch_size : config.training.batch_size;
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, 1));
  const double train_flops = static_cast<double>(model->TrainingFlopsPerSample());

  char scratch_template[] = "/tmp/strata_bench_XXXXXX";
  const std::string scratch = mkdtemp(scratch_template);

  std::printf("strata_bench train: %s, batch %lld, %d threads, %d steps x %d repeats\n",
              o.config.c_str(), static_cast<long long>(batch), o.threads, o.steps, o.repeat);
  const double gflops = MeasureSgemmGflops(2048, o.threads);
  std::printf("machine: SGEMM 2048^3 with %d threads: %.1f GFLOP/s\n", o.threads, gflops);
  std::fflush(stdout);

  std::vector<Contender> contenders;
  for (const std::string& mode : o.modes) {
    Contender c;
    c.label = "strata " + mode;
    c.result_path = absl::StrCat(scratch, "/strata_", mode, ".json");
    c.spec.argv = {BinaryDir() + "/strata_launch",
                   "--config",
                   o.config,
                   "--mode",
                   mode,
                   "--max-steps",
                   std::to_string(o.steps),
                   "--threads",
                   std::to_string(o.threads),
                   "--batch-size",
                   std::to_string(batch),
                   "--evaluate=false",
                   "--progress=false",
                   "--summary-out",
                   c.result_path};
    if (mode != "single") {
      for (const std::string& flag : {std::string("--servers"), std::to_string(o.servers),
                                      std::string("--conv-workers"), std::to_string(o.conv_workers),
                                      std::string("--fc-workers"), std::to_string(o.fc_workers)}) {
        c.spec.argv.push_back(flag);
      }
    }
    c.spec.unset_env = UnsetForBenchmarks();
    c.spec.set_env = {{"OMP_NUM_THREADS", std::to_string(o.threads)}};
    contenders.push_back(std::move(c));
  }
  // The PyTorch peer is a single process: it stands beside `single`.
  const bool wants_peer =
      o.with_peer && std::find(o.modes.begin(), o.modes.end(), "single") != o.modes.end();
  const bool peer = wants_peer && PythonHasTorch(o.python, scratch);
  if (wants_peer && !peer) {
    std::printf("peer: skipped (%s cannot import torch; apt-get install python3-torch)\n",
                o.python.c_str());
  }
  if (peer) {
    Contender c;
    c.label = "pytorch 1.13";
    c.result_path = scratch + "/pytorch.json";
    c.spec.argv = {o.python,       SourceDir() + "/tools/bench/peers/torch_train.py",
                   "--config",     o.config,
                   "--steps",      std::to_string(o.steps),
                   "--threads",    std::to_string(o.threads),
                   "--batch-size", std::to_string(batch),
                   "--json",       c.result_path};
    c.spec.unset_env = UnsetForBenchmarks();
    c.spec.set_env = PeerEnvironment(o.threads);
    contenders.push_back(std::move(c));
  }

  const int total_runs = o.repeat * static_cast<int>(contenders.size());
  int run = 0;
  for (int rep = 0; rep < o.repeat; ++rep) {
    for (Contender& c : contenders) {  // A B A B: drift hits every contender alike
      ++run;
      std::printf("[%d/%d] %-14s ", run, total_runs, c.label.c_str());
      std::fflush(stdout);
      STRATA_ASSIGN_OR_RETURN(double ips, RunOnce(c, absl::StrCat(scratch, "/run", run, ".log")));
      c.images_per_sec.push_back(ips);
      std::printf("%8.0f images/s\n", ips);
      std::fflush(stdout);
    }
  }

  const double limit_ips = gflops * 1e9 / train_flops;
  std::printf("\n%-16s %12s %10s %10s %14s %14s %10s\n", "contender", "median img/s", "min", "max",
              "of the limit", "MB/iteration", "vs first");
  nlohmann::json report = {{"benchmark", "train"},
                           {"config", o.config},
                           {"batch_size", batch},
                           {"threads", o.threads},
                           {"steps", o.steps},
                           {"repeat", o.repeat},
                           {"sgemm_gflops", gflops},
                           {"training_flops_per_image", train_flops},
                           {"limit_images_per_sec", limit_ips}};
  for (const Contender& c : contenders) {
    const double med = Median(c.images_per_sec);
    const auto [mn, mx] = std::minmax_element(c.images_per_sec.begin(), c.images_per_sec.end());
    const double first = Median(contenders.front().images_per_sec);
    std::printf("%-16s %12.0f %10.0f %10.0f %13.1f%% %14.3f %9.2fx\n", c.label.c_str(), med, *mn,
                *mx, 100.0 * med / limit_ips, c.bytes_per_iteration / 1e6, med / first);
    report["contenders"][c.label] = {{"median_images_per_sec", med},
                                     {"runs", c.images_per_sec},
                                     {"bytes_per_iteration", c.bytes_per_iteration},
                                     {"ratio_to_first", med / first}};
  }
  std::printf("limit: %.1f MFLOP per training image at %.1f GFLOP/s = %.0f images/s\n",
              train_flops / 1e6, gflops, limit_ips);
  if (peer) {
    const double peer_median = Median(contenders.back().images_per_sec);
    for (size_t i = 0; i + 1 < contenders.size(); ++i) {
      const double ratio = Median(contenders[i].images_per_sec) / peer_median;
      std::printf("ratio %s / pytorch: %.2fx\n", contenders[i].label.c_str(), ratio);
      report["ratios"][contenders[i].label + " / pytorch"] = ratio;
    }
  }
  std::filesystem::remove_all(scratch);
  if (!o.json_out.empty()) STRATA_RETURN_IF_ERROR(WriteJsonFile(o.json_out, report));
  return absl::OkStatus();
}

}  // namespace strata::bench
