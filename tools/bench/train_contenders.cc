#include "tools/bench/train_contenders.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/control/iteration_record.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "tools/bench/harness/contender_environment.h"
#include "tools/launch/launch_spec.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {
namespace {

// Iterations a run's start-up takes (connections, first pulls, kernels
// made for the batch size): not what a cost model describes.
constexpr int64_t kStartupIterations = 2;

// The conv workers' iterations of a run, from its records: each conv
// worker's compute and rows, conv worker 0's wall seconds.
absl::StatusOr<std::vector<secbad::SpeedSample>> SpeedSamplesOf(const std::string& records_dir,
                                                                int conv_workers) {
  std::map<int64_t, secbad::SpeedSample> by_iteration;
  for (int r = 0; r < conv_workers; ++r) {
    STRATA_ASSIGN_OR_RETURN(
        const std::vector<nlohmann::json> records,
        ReadIterationRecords(absl::StrCat(records_dir, "/conv_worker_", r, ".jsonl")));
    for (const nlohmann::json& record : records) {
      const int64_t i = record.value("iteration", int64_t{-1});
      if (i < kStartupIterations || !record.value("completed", false)) continue;
      secbad::SpeedSample& s = by_iteration[i];
      s.compute_seconds.resize(conv_workers, 0.0);
      s.rows.resize(conv_workers, 0);
      s.compute_seconds[r] = record.value("compute", 0.0);
      s.rows[r] = record.value("rows", int64_t{0});
      if (r == 0) s.wall_seconds = record.value("wall", 0.0);
    }
  }
  std::vector<secbad::SpeedSample> samples;
  for (auto& [i, s] : by_iteration) {
    if (std::all_of(s.rows.begin(), s.rows.end(), [](int64_t n) { return n > 0; })) {
      samples.push_back(std::move(s));
    }
  }
  return samples;
}

// Conv worker 0's communication seconds in each steady iteration of a run,
// from its records: what a link-rate controller reads the rate from.
absl::StatusOr<std::vector<double>> CommunicationSecondsOf(const std::string& records_dir) {
  STRATA_ASSIGN_OR_RETURN(const std::vector<nlohmann::json> records,
                          ReadIterationRecords(records_dir + "/conv_worker_0.jsonl"));
  std::vector<double> seconds;
  for (const nlohmann::json& record : records) {
    if (record.value("iteration", int64_t{-1}) < kStartupIterations ||
        !record.value("completed", false)) {
      continue;
    }
    seconds.push_back(record.value("communication", 0.0));
  }
  return seconds;
}

// A free TCP port on 127.0.0.1 (for the DDP rendezvous on loopback).
absl::StatusOr<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) return absl::InternalError("no free loopback port");
  return ntohs(a.sin_port);
}

}  // namespace

absl::StatusOr<TrainRun> TrainContenderRunner::Run(const TrainContender& c,
                                                   const NetworkSetting& net) {
  ++runs_;
  switch (c.kind) {
    case TrainContenderKind::kStrata:
      return RunStrata(c, net);
    case TrainContenderKind::kTorch:
      return RunTorch();
    case TrainContenderKind::kTorchDdp:
      return RunTorchDdp(net);
  }
  return absl::InternalError("unknown contender");
}

std::string TrainContenderRunner::Path(const std::string& what) const {
  return absl::StrCat(scratch_, "/run", runs_, "_", what);
}

absl::StatusOr<TrainRun> TrainContenderRunner::RunStrata(const TrainContender& c,
                                                         const NetworkSetting& net) {
  ProcessSpec spec;
  const std::string result = Path("summary.json");
  LaunchSpec launch = o_.cluster;
  launch.config = c.config.empty() ? o_.config : c.config;
  launch.mode = c.mode;
  launch.max_steps = o_.steps;
  launch.threads = o_.threads;
  if (c.mode == "single") {
    launch.device = o_.device;
    launch.tf32 = o_.tf32;
  }
  launch.batch_size = batch_;
  launch.evaluate = false;
  launch.progress = false;
  launch.summary_out = result;
  launch.bandwidth = net.bandwidth;
  launch.latency = net.latency;
  launch.cpu_schedule = net.cpu_schedule;
  if (records_wanted_ != RecordsWanted::kNone && c.mode != "single") {
    launch.records_dir = Path("records");
  }
  spec.argv = StrataLaunchCommand(BinaryDir(), launch);
  spec.unset_env = UnsetForBenchmarks();
  spec.set_env = {{"OMP_NUM_THREADS", std::to_string(o_.threads)}};
  spec.output_path = Path("strata.log");
  STRATA_ASSIGN_OR_RETURN(int code, RunProcess(spec, kContenderRunTimeout));
  if (code != 0) {
    return absl::InternalError(absl::StrCat(c.label, " exited with status ", code,
                                            "; the end of its output:\n",
                                            FileTail(spec.output_path, 2000)));
  }
  if (!net.bandwidth.empty() &&
      absl::StrContains(FileTail(spec.output_path, 1 << 20), kNoNetworkNotice)) {
    WarnLoopbackOnce("see the launcher's log");
  }
  STRATA_ASSIGN_OR_RETURN(nlohmann::json j,
                          ReadContenderResult(result, "images_per_sec", c.label, spec.output_path));
  TrainRun r;
  r.images_per_sec = j["images_per_sec"].get<double>();
  r.bytes_per_iteration = j.value("bytes_per_iteration", 0.0);
  if (j.contains("device_peak_memory_bytes")) {
    r.peak_memory_bytes = j["device_peak_memory_bytes"].get<double>();
  }
  if (j.contains("seconds_per_iteration")) {
    r.seconds_per_iteration = j["seconds_per_iteration"].get<std::map<std::string, double>>();
  }
  if (records_wanted_ == RecordsWanted::kWorkerSpeed && c.mode != "single") {
    STRATA_ASSIGN_OR_RETURN(r.speed_samples,
                            SpeedSamplesOf(Path("records"), o_.cluster.conv_workers));
  } else if (records_wanted_ == RecordsWanted::kLinkRate && c.mode != "single") {
    STRATA_ASSIGN_OR_RETURN(r.communication_seconds, CommunicationSecondsOf(Path("records")));
  }
  return r;
}

absl::StatusOr<TrainRun> TrainContenderRunner::RunTorch() {
  ProcessSpec spec;
  const std::string result = Path("pytorch.json");
  spec.argv = {o_.python,      SourceDir() + "/tools/bench/peers/torch_train.py",
               "--config",     o_.config,
               "--steps",      std::to_string(o_.steps),
               "--threads",    std::to_string(o_.threads),
               "--batch-size", std::to_string(batch_),
               "--json",       result};
  if (absl::StartsWith(o_.device, "cuda")) {
    // cuDNN's algorithms found per shape, NHWC tensors, and the TF32
    // setting Strata runs with.
    spec.argv.insert(spec.argv.end(), {"--device", o_.device, "--channels-last", "--tf32",
                                       o_.tf32 ? "1" : "0"});
  }
  spec.unset_env = UnsetForBenchmarks();
  spec.set_env = PeerEnvironment(o_.threads);
  spec.output_path = Path("pytorch.log");
  STRATA_ASSIGN_OR_RETURN(int code, RunProcess(spec, kContenderRunTimeout));
  if (code != 0) {
    return absl::InternalError(absl::StrCat("the PyTorch peer exited with status ", code, ":\n",
                                            FileTail(spec.output_path, 2000)));
  }
  STRATA_ASSIGN_OR_RETURN(
      nlohmann::json j, ReadContenderResult(result, "images_per_sec", "pytorch", spec.output_path));
  TrainRun peer;
  peer.images_per_sec = j["images_per_sec"].get<double>();
  if (j.contains("peak_memory_bytes"))
    peer.peak_memory_bytes = j["peak_memory_bytes"].get<double>();
  return peer;
}

// DistributedDataParallel with one rank per conv worker, each rank on a
// host of its own when the network is emulated.
absl::StatusOr<TrainRun> TrainContenderRunner::RunTorchDdp(const NetworkSetting& net) {
  const int world = o_.cluster.conv_workers;
  const int threads = std::max(1, o_.threads / world);
  std::unique_ptr<EmulatedNetwork> network;
  if (!net.bandwidth.empty()) {
    std::string why;
    STRATA_ASSIGN_OR_RETURN(network, EmulateOrFallBack(net.bandwidth, net.latency, world, &why));
    if (network == nullptr) WarnLoopbackOnce(why);
  }
  std::string master;
  if (network != nullptr) {
    master = network->host_address(0) + ":29500";
  } else {
    STRATA_ASSIGN_OR_RETURN(int port, FreeLoopbackPort());
    master = absl::StrCat("127.0.0.1:", port);
  }
  const std::string result = Path("ddp.json");
  std::vector<ProcessSpec> ranks(world);
  for (int r = 0; r < world; ++r) {
    ProcessSpec& spec = ranks[r];
    spec.argv = {o_.python,      SourceDir() + "/tools/bench/peers/torch_ddp.py",
                 "--config",     o_.config,
                 "--rank",       std::to_string(r),
                 "--world-size", std::to_string(world),
                 "--master",     master,
                 "--batch-size", std::to_string(batch_),
                 "--steps",      std::to_string(o_.steps),
                 "--threads",    std::to_string(threads),
                 "--json",       result};
    spec.unset_env = UnsetForBenchmarks();
    spec.set_env = PeerEnvironment(threads);
    spec.set_env.push_back({"GLOO_SOCKET_IFNAME", network != nullptr ? "eth0" : "lo"});
    spec.output_path = Path(absl::StrCat("ddp_rank", r, ".log"));
    if (network != nullptr) spec.network_namespace = network->namespace_path(r);
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int> codes, RunProcesses(ranks, kContenderRunTimeout));
  for (int r = 0; r < world; ++r) {
    if (codes[r] != 0 && codes[r] != 128 + 9) {
      return absl::InternalError(absl::StrCat("PyTorch DDP rank ", r, " exited with status ",
                                              codes[r], ":\n",
                                              FileTail(ranks[r].output_path, 2000)));
    }
  }
  STRATA_ASSIGN_OR_RETURN(
      nlohmann::json j,
      ReadContenderResult(result, "images_per_sec", "pytorch ddp", ranks[0].output_path));
  TrainRun peer;
  peer.images_per_sec = j["images_per_sec"].get<double>();
  return peer;
}

void TrainContenderRunner::WarnLoopbackOnce(const std::string& why) {
  if (warned_) return;
  warned_ = true;
  std::printf("warning: the network could not be emulated here (%s); runs use loopback\n",
              why.c_str());
}

}  // namespace strata::bench
