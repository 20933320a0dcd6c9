#include "tools/launch/local_cluster.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/net/admission.h"
#include "core/net/traffic.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "core/train/checkpoint_epochs.h"
#include "core/train/lost_nodes.h"
#include "core/train/metrics_writer.h"
#include "core/util/clock.h"
#include "core/util/json_file.h"
#include "core/util/log.h"
#include "core/util/ready_file.h"
#include "flags/cluster_flags.h"
#include "tools/launch/chrome_trace.h"
#include "tools/launch/lost_conv_worker.h"
#include "tools/launch/role_commands.h"
#include "tools/netem/bandwidth_schedule.h"
#include "tools/netem/cpu_schedule.h"
#include "tools/netem/emulated_network.h"

namespace strata {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void OnSignal(int) { g_interrupted = 1; }

struct Child {
  std::string label;  // "server 0", "worker 1"
  std::string role;   // server, conv_worker, fc_worker
  int rank = 0;
  std::unique_ptr<ChildProcess> process;  // its output on a pipe
  std::string partial;
  std::deque<std::string> tail;  // last lines, for error reports
  nlohmann::json traffic;        // the process's "[traffic] {...}" report
};

// Starts `argv`, the process of `role` `rank`, with its output on a pipe,
// tied to our life, with the job token of `o` (when set) in its
// environment, and the admin token only if it is a server; inside the
// network namespace at `netns` when it is not empty.
// Its TMPDIR is `scratch`, where ZeroMQ makes the socket of an `ipc://*`
// binding, so a process killed with its sockets open leaves nothing behind
// once the launcher removes the scratch directory. On `cpus` only, when
// given (--cpu-pin).
absl::StatusOr<Child> Spawn(const std::string& role, int rank, const std::vector<std::string>& argv,
                            const std::string& netns, const ClusterLaunchOptions& o,
                            const std::string& scratch, const std::vector<int>& cpus) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.cpus = cpus;
  spec.network_namespace = netns;
  spec.output_to_pipe = true;
  spec.die_with_parent = true;  // never outlive the launcher
  spec.set_env = {{"TMPDIR", scratch}};
  // Secrets travel in the environment, never on a command line.
  auto hand_on = [&spec](const char* name, const std::string& secret) {
    if (secret.empty()) {
      spec.unset_env.push_back(name);
    } else {
      spec.set_env.push_back({name, secret});
    }
  };
  hand_on(kJobTokenEnv, o.job_token);
  hand_on(kAdminTokenEnv, role == "server" ? o.admin_token : "");
  Child c;
  c.label = absl::StrCat(role == "server"      ? "server"
                         : role == "fc_worker" ? "fc worker"
                                               : "worker",
                         " ", rank);
  c.role = role;
  c.rank = rank;
  STRATA_ASSIGN_OR_RETURN(c.process, ChildProcess::Start(spec));
  return c;
}

// Prints complete lines of `c`'s output, prefixed with its label unless the
// process labelled them itself. Returns the lines for inspection.
std::vector<std::string> Pump(Child& c) {
  std::vector<std::string> lines;
  char buf[8192];
  while (true) {
    const ssize_t n = ::read(c.process->output_fd(), buf, sizeof(buf));
    if (n <= 0) break;
    c.partial.append(buf, static_cast<size_t>(n));
  }
  size_t pos;
  while ((pos = c.partial.find('\n')) != std::string::npos) {
    std::string line = c.partial.substr(0, pos);
    c.partial.erase(0, pos + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (absl::StartsWith(line, kTrafficLinePrefix)) {  // summed at the end, not shown
      c.traffic =
          nlohmann::json::parse(line.substr(std::strlen(kTrafficLinePrefix)), nullptr, false);
      continue;
    }
    // Log lines carry their process's name and time; anything else gets
    // them here.
    const bool log_line = IsLogLine(line);
    const std::string shown =
        log_line || absl::StartsWith(line, "[") ? line : absl::StrCat("[", c.label, "] ", line);
    if (log_line) {
      PassLogLine(line);
    } else {
      LogInfo("%s", shown.c_str());
    }
    c.tail.push_back(shown);
    if (c.tail.size() > 20) c.tail.pop_front();
    lines.push_back(line);
  }
  return lines;
}

void StopAll(std::vector<Child>& children) {
  for (Child& c : children) c.process->Signal(SIGTERM);
  for (Child& c : children) {
    c.process->Stop(absl::Seconds(3));
    Pump(c);
  }
}

std::string ExitText(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("was killed by signal ", WTERMSIG(status));
  return "stopped";
}

// Mean seconds per iteration of the conv workers, from their reports:
// compute, communication, and waiting (the rest of the iteration).
std::map<std::string, double> ConvWorkerBreakdown(const std::vector<Child>& children) {
  double compute = 0, network = 0, wall = 0;
  int workers = 0;
  for (const Child& c : children) {
    if (!absl::StartsWith(c.label, "worker ") || !c.traffic.is_object()) continue;
    const auto times = c.traffic.find("times");
    if (times == c.traffic.end()) continue;
    const int64_t steps = times->value("iterations", int64_t{0});
    if (steps <= 0) continue;
    compute += times->value("compute", 0.0) / static_cast<double>(steps);
    network += times->value("network", 0.0) / static_cast<double>(steps);
    wall += times->value("wall", 0.0) / static_cast<double>(steps);
    ++workers;
  }
  if (workers == 0) return {};
  compute /= workers;
  network /= workers;
  wall /= workers;
  return {{"compute", compute},
          {"communication", network},
          {"waiting", std::max(0.0, wall - compute - network)}};
}

// The fields of a summary file a worker wrote.
RunSummary SummaryFromJson(const nlohmann::json& j) {
  RunSummary s;
  s.mode = j.value("mode", "ps");
  s.config = j.value("config", "");
  s.steps = j.value("steps", int64_t{0});
  s.epochs = j.value("epochs", int64_t{0});
  s.batch_size = j.value("batch_size", int64_t{0});
  s.threads = j.value("threads", int64_t{0});
  s.parameters = j.value("parameters", int64_t{0});
  s.test_accuracy = j.value("test_accuracy", 0.0);
  s.test_loss = j.value("test_loss", 0.0);
  s.train_loss = j.value("train_loss", 0.0);
  s.images_per_sec = j.value("images_per_sec", 0.0);
  s.train_seconds = j.value("train_seconds", 0.0);
  s.forward_flops_per_image = j.value("forward_flops_per_image", 0.0);
  return s;
}

// The emulated network `o` asks for (nullptr when it asks for none, or when
// namespaces cannot be made here: the cluster then runs on loopback, and
// the launcher says so).
absl::StatusOr<std::unique_ptr<EmulatedNetwork>> MaybeEmulateNetwork(
    const ClusterLaunchOptions& o) {
  if (o.bandwidth.empty()) return std::unique_ptr<EmulatedNetwork>();
  const int hosts = (o.colocate_servers ? 0 : o.servers) + o.conv_workers +
                    (o.mode == "stanza" ? o.fc_workers : 0);
  std::string why;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<EmulatedNetwork> network,
                          EmulateOrFallBack(o.bandwidth, o.latency, hosts, &why));
  if (network == nullptr) {
    LogInfo("%s (%s); running on loopback instead", kNoNetworkNotice, why.c_str());
    return network;
  }
  LogInfo("emulated network: %d hosts (%s-%s), each link %s, %g ms one way", hosts,
          network->host_address(0).c_str(), network->host_address(hosts - 1).c_str(),
          FormatBandwidth(network->options().bytes_per_second).c_str(),
          network->options().latency_ms);
  return network;
}

}  // namespace

absl::StatusOr<std::vector<RunSummary>> RunLocalCluster(const ClusterLaunchOptions& o) {
  g_interrupted = 0;
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  if (!o.port_range.empty() && o.bandwidth.empty() && o.bandwidth_schedule.empty() &&
      o.transport != "tcp") {
    return absl::InvalidArgumentError("--port-range needs tcp: add --transport tcp");
  }
  const bool stanza = o.mode == "stanza";
  if (!stanza && o.mode != "ps") {
    return absl::InvalidArgumentError(absl::StrCat("unknown cluster mode ", o.mode));
  }
  if (o.transport != "ipc" && o.transport != "tcp") {
    return absl::InvalidArgumentError(
        absl::StrCat("--transport ", o.transport, ": use ipc or tcp"));
  }
  if (o.colocate_servers && o.servers != o.conv_workers) {
    return absl::InvalidArgumentError(
        absl::StrCat("colocated servers need one server per conv worker, got ", o.servers,
                     " servers and ", o.conv_workers, " conv workers"));
  }
  // A bandwidth schedule builds the network at its first rate and changes
  // the links as its times come (timed from here).
  const absl::Time launched = absl::Now();
  std::optional<ScheduledRates> rates;
  ClusterLaunchOptions network_options = o;
  if (!o.bandwidth_schedule.empty()) {
    if (!o.bandwidth.empty()) {
      return absl::InvalidArgumentError(
          "--bandwidth and --bandwidth-schedule both give the link rate: use one");
    }
    STRATA_ASSIGN_OR_RETURN(BandwidthSchedule schedule,
                            ParseBandwidthSchedule(o.bandwidth_schedule));
    network_options.bandwidth = schedule.front().rate;
    rates.emplace(std::move(schedule));
  }
  // Pinned CPUs (--cpu-pin), checked before anything starts.
  // A process a CPU flag names must be one of the cluster's.
  const auto check_process = [&](const char* flag, const std::string& process,
                                 const std::string& role, int rank) -> absl::Status {
    const int ranks = role == "server"        ? o.servers
                      : role == "conv_worker" ? o.conv_workers
                      : stanza                ? o.fc_workers
                                              : 0;
    if (rank < ranks) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(flag, ": the cluster has no ", process, " (",
                                                   ranks, " ", role, ranks == 1 ? "" : "s", ")"));
  };
  std::map<std::pair<std::string, int>, std::vector<int>> pins;
  if (!o.cpu_pin.empty()) {
    STRATA_ASSIGN_OR_RETURN(
        const std::vector<CpuPin> parsed,
        ParseCpuPins(o.cpu_pin, static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)))));
    for (const CpuPin& pin : parsed) {
      STRATA_RETURN_IF_ERROR(check_process("--cpu-pin", pin.process, pin.role, pin.rank));
      pins[{pin.role, pin.rank}] = pin.cpus;
    }
  }
  const auto cpus_of = [&pins](const std::string& role, int rank) {
    const auto it = pins.find({role, rank});
    return it == pins.end() ? std::vector<int>{} : it->second;
  };
  // CPU limits (stragglers): checked and the cgroups made before anything
  // starts; each limit is set once its time has come and its process runs.
  std::optional<ScheduledCpuLimits> cpu_limits;
  std::unique_ptr<CpuLimiter> limiter;
  if (!o.cpu_schedule.empty()) {
    STRATA_ASSIGN_OR_RETURN(CpuSchedule schedule, ParseCpuSchedule(o.cpu_schedule));
    for (const CpuLimitChange& c : schedule) {
      STRATA_RETURN_IF_ERROR(check_process("--cpu-schedule", c.process, c.role, c.rank));
    }
    STRATA_ASSIGN_OR_RETURN(limiter, CpuLimiter::Create());
    cpu_limits.emplace(std::move(schedule));
    LogInfo("cpu schedule: limits through %s", limiter->description().c_str());
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<EmulatedNetwork> network,
                          MaybeEmulateNetwork(network_options));
  if (rates.has_value() && network == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--bandwidth-schedule changes the links of an emulated network, and none could be "
        "made here (",
        kNoNetworkNotice, ": see above)"));
  }
  // A change tc refused: the job stops (it would run at the wrong rate).
  absl::Status schedule_status;
  // Ready files, and the summary unless it has a place of its own.
  char tmpl[] = "/tmp/strata_launch_XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot make a scratch directory: ", std::strerror(errno)));
  }
  const std::string scratch = tmpl;
  const std::string summary_path =
      o.summary_out.empty() ? scratch + "/summary.json" : o.summary_out;
  std::filesystem::remove(summary_path);
  // Each process gets the next host of the emulated network, or loopback;
  // with colocated servers, conv worker i gets server i's host.
  int next_host = 0;
  struct Placement {
    std::string netns;
    std::string bind;       // where a serving process binds
    std::string advertise;  // the host its peers dial ("" = what it binds)
    std::string host;       // this host's address (loopback: 127.0.0.1)
  };
  const std::string ports = o.port_range.empty() ? "0" : o.port_range;
  const bool ipc = o.transport == "ipc" && o.port_range.empty();
  auto place_on = [&](int host) {
    if (network == nullptr) {
      return Placement{"", ipc ? "ipc://*" : "tcp://127.0.0.1:" + ports, "", "127.0.0.1"};
    }
    const std::string address = network->host_address(host);
    return Placement{network->namespace_path(host), "tcp://0.0.0.0:" + ports, address, address};
  };
  // The flags that tell a serving process where it binds and what it
  // advertises.
  auto serving_flags = [](const Placement& p) {
    std::vector<std::string> flags = {"--bind", p.bind};
    if (!p.advertise.empty()) flags.insert(flags.end(), {"--advertise", p.advertise});
    return flags;
  };
  auto place = [&]() { return place_on(next_host++); };
  const bool several = !o.job_configs.empty();
  std::vector<Child> children;
  auto fail = [&](absl::Status status) -> absl::Status {
    StopAll(children);
    std::filesystem::remove_all(scratch);
    return status;
  };
  // Records go where asked, or, for a trace or a controller's events alone,
  // into the scratch directory.
  const std::string records_dir =
      !o.records_dir.empty()
          ? o.records_dir
          : (o.trace_out.empty() && !o.controller ? "" : scratch + "/records");
  std::vector<TraceSource> trace_sources;
  if (!records_dir.empty()) std::filesystem::create_directories(records_dir);
  // The schedules' changes, beside the records (launcher.jsonl).
  absl::StatusOr<MetricsWriter> opened =
      MetricsWriter::Open(records_dir.empty() || (!rates.has_value() && !cpu_limits.has_value())
                              ? ""
                              : (std::filesystem::path(records_dir) / "launcher.jsonl").string());
  if (!opened.ok()) return fail(opened.status());
  MetricsWriter conditions = std::move(*opened);

  // What the coordinator declares dead, for --lost-conv-worker.
  const std::string lost_nodes = scratch + "/lost_nodes.json";
  FailedProcess first_failed;

  // The error of a failed run, once a process has failed: `failed` holds
  // the failed children's indices, and `reap` reaps whoever has ended
  // (adding the failed to `failed`; true while any runs). A failure rarely
  // comes alone: a process killed takes its peers down with errors of their
  // own soon after, and a loaded launcher may reap one of those first. So
  // the others get a short grace to end, and the error (and first_failed)
  // names the cause (CauseOfFailure) with its last lines, then whoever
  // failed after it.
  const auto stop_on_failure = [&](const std::vector<size_t>& failed,
                                   const std::function<bool()>& reap) -> absl::Status {
    constexpr absl::Duration kGrace = absl::Milliseconds(500);
    const auto any_killed = [&] {
      return std::any_of(failed.begin(), failed.end(), [&](size_t i) {
        return WIFSIGNALED(children[i].process->wait_status());
      });
    };
    const absl::Time grace_end = absl::Now() + kGrace;
    while (!any_killed() && absl::Now() < grace_end && reap()) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    std::vector<FailedProcess> seen;
    for (size_t i : failed) {
      seen.push_back({children[i].role, children[i].rank,
                      WIFSIGNALED(children[i].process->wait_status())});
    }
    const size_t cause_at = CauseOfFailure(seen);
    first_failed = seen[cause_at];
    std::string cause, tail, others;
    for (size_t j = 0; j < failed.size(); ++j) {
      const Child& c = children[failed[j]];
      const std::string what = absl::StrCat(c.label, " ", ExitText(c.process->wait_status()));
      if (j == cause_at) {
        cause = what;
        for (const auto& line : c.tail) tail += "\n  " + line;
      } else {
        others += absl::StrCat(others.empty() ? "" : "; ", what);
      }
    }
    return absl::InternalError(
        absl::StrCat(cause, "; stopped the cluster",
                     others.empty() ? "" : absl::StrCat(" (after it: ", others, ")"),
                     ". Its last lines:", tail));
  };

  // Starts every process and merges their output until all have exited:
  // OK when every one succeeded, else the cause of the failure (first_failed
  // says whose; every other process is then stopped), or Cancelled on Ctrl-C.
  auto run_once = [&](const ClusterLaunchOptions& o) -> absl::Status {
    next_host = 0;
    if (cpu_limits.has_value()) cpu_limits->Restart();  // the new processes get the limits too
    trace_sources.clear();
    std::filesystem::remove(lost_nodes);
    first_failed = FailedProcess{};
    // Server 0 (the coordinator) first: its ready file names its address.
    // It binds its placement and advertises the coordinator's host; the
    // coordinator's port is the one it bound (its ready file says).
    const Placement p0 = place();
    const std::string ready = absl::StrCat(scratch, "/server0.ready.json");
    std::filesystem::remove(ready);
    const std::string coordinator_hint =
        p0.bind.rfind("ipc://", 0) == 0 ? p0.bind : absl::StrCat("tcp://", p0.host, ":0");
    std::vector<std::string> argv0 = ServerCommand(o, 0, coordinator_hint);
    for (const std::string& flag : serving_flags(p0)) argv0.push_back(flag);
    argv0.insert(argv0.end(), {"--ready-file", ready, "--lost-nodes-out", lost_nodes});
    STRATA_ASSIGN_OR_RETURN(Child s0, Spawn("server", 0, argv0, p0.netns, o, scratch,
                          cpus_of("server", 0)));
    children.push_back(std::move(s0));  // the first of this start's: children is empty
    Child& first = children[0];
    absl::StatusOr<nlohmann::json> serving =
        AwaitReadyFile(ready, "server 0", absl::Seconds(30), [&]() -> std::optional<std::string> {
          Pump(first);
          if (g_interrupted) return std::string("was interrupted");
          if (!first.process->Poll().has_value()) return std::nullopt;
          return ExitText(first.process->wait_status());
        });
    if (!serving.ok()) return serving.status();
    const std::string coordinator = (*serving)["address"].get<std::string>();
    STRATA_RETURN_IF_ERROR(
        WriteReadyFile(o.ready_file, {{"role", "launcher"}, {"address", coordinator}}));
    for (int r = 1; r < o.servers; ++r) {
      const Placement p = place();
      std::vector<std::string> argv = ServerCommand(o, r, coordinator);
      for (const std::string& flag : serving_flags(p)) argv.push_back(flag);
      STRATA_ASSIGN_OR_RETURN(Child c, Spawn("server", r, argv, p.netns, o, scratch,
                          cpus_of("server", r)));
      children.push_back(std::move(c));
    }
    auto add_records_flag = [&](std::vector<std::string>& argv, const std::string& process) {
      if (records_dir.empty()) return;
      const std::string path = (std::filesystem::path(records_dir) / (process + ".jsonl")).string();
      argv.push_back("--records-out");
      argv.push_back(path);
      // A process of several jobs writes one file per job (PathForJob).
      for (size_t i = 0; i < std::max<size_t>(1, o.job_configs.size()); ++i) {
        trace_sources.push_back({several ? PathForJob(path, 1 + i) : path, 1 + i});
      }
    };
    for (int f = 0; stanza && f < o.fc_workers; ++f) {
      const Placement p = place();
      std::vector<std::string> argv = FcWorkerCommand(o, f, coordinator, summary_path);
      for (const std::string& flag : serving_flags(p)) argv.push_back(flag);
      add_records_flag(argv, absl::StrCat("fc_worker_", f));
      STRATA_ASSIGN_OR_RETURN(Child c, Spawn("fc_worker", f, argv, p.netns, o, scratch,
                          cpus_of("fc_worker", f)));
      children.push_back(std::move(c));
    }
    for (int w = 0; w < o.conv_workers; ++w) {
      const Placement p = o.colocate_servers ? place_on(w) : place();
      std::vector<std::string> argv = ConvWorkerCommand(o, w, coordinator, summary_path);
      add_records_flag(argv, absl::StrCat("conv_worker_", w));
      STRATA_ASSIGN_OR_RETURN(Child c,
                              Spawn("conv_worker", w, argv, p.netns, o, scratch,
                          cpus_of("conv_worker", w)));
      children.push_back(std::move(c));
    }

    // Merge output until every process has exited; stop everything on the
    // first failure or on Ctrl-C.
    while (true) {
      std::vector<pollfd> fds;
      for (const Child& c : children) fds.push_back({c.process->output_fd(), POLLIN, 0});
      ::poll(fds.data(), fds.size(), 100);
      std::vector<ScheduledChange> conditions_changed;
      if (rates.has_value()) {
        schedule_status = WithContext(
            rates->Apply(absl::ToDoubleSeconds(absl::Now() - launched), *network,
                         &conditions_changed),
            "--bandwidth-schedule");
        if (!schedule_status.ok()) return schedule_status;
      }
      if (cpu_limits.has_value()) {
        const auto pid_of = [&](const std::string& role, int rank) -> std::optional<pid_t> {
          for (const Child& c : children) {
            if (c.role == role && c.rank == rank && !c.process->exited()) return c.process->pid();
          }
          return std::nullopt;
        };
        schedule_status = WithContext(
            cpu_limits->Apply(absl::ToDoubleSeconds(absl::Now() - launched), pid_of, *limiter,
                              &conditions_changed),
            "--cpu-schedule");
        if (!schedule_status.ok()) return schedule_status;
      }
      // When each change was made, on the clock the iteration records
      // use, and when the schedule had it due (seconds from the launch).
      for (const ScheduledChange& change : conditions_changed) {
        conditions.Write({{"event", "condition"},
                          {"what", change.what},
                          {"due", change.due_seconds},
                          {"start", MonotonicSeconds()}});
      }
      // Reaps whoever has ended; true while any runs. The ones that failed
      // join `failed` (indices into children, in the order seen).
      std::vector<size_t> failed;
      const auto reap = [&]() {
        bool running = false;
        for (size_t i = 0; i < children.size(); ++i) {
          Child& c = children[i];
          Pump(c);
          if (c.process->exited()) continue;
          if (!c.process->Poll().has_value()) {
            running = true;
            continue;
          }
          Pump(c);
          const int status = c.process->wait_status();
          if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) failed.push_back(i);
        }
        return running;
      };
      const bool running = reap();
      if (!failed.empty()) return stop_on_failure(failed, reap);
      if (!running) return absl::OkStatus();
      if (g_interrupted) {
        LogInfo("interrupted: stopping %zu processes", children.size());
        return absl::CancelledError("interrupted by a signal; every process was stopped");
      }
    }
  };

  // A failed start is retried from the newest complete checkpoint epoch
  // (BSP: every process resumes at the same iteration), up to
  // --restart-failed times; a lost conv worker as --lost-conv-worker says
  // (tools/launch/lost_conv_worker.h).
  ClusterLaunchOptions attempt = o;
  for (int restarts = 0;;) {
    absl::Status run = run_once(attempt);
    if (run.ok()) break;
    if (absl::IsCancelled(run)) return fail(run);
    if (!schedule_status.ok()) return fail(schedule_status);
    // Whom the run lost: the conv workers the coordinator declared dead
    // and the first failure, when it was a conv worker killed.
    absl::StatusOr<std::vector<LostNode>> recorded = ReadLostNodes(lost_nodes);
    if (!recorded.ok()) LogWarning("%s", std::string(recorded.status().message()).c_str());
    const std::vector<int> lost =
        LostConvWorkers(first_failed, recorded.ok() ? *recorded : std::vector<LostNode>{});
    const std::string lost_text =
        lost.empty()
            ? ""
            : absl::StrCat(lost.size() == 1 ? "worker " : "workers ", absl::StrJoin(lost, ", "));
    bool shrink = false;
    if (!lost.empty() && o.lost_conv_worker == LostConvWorkerPolicy::kStop) {
      return fail(WithContext(run, absl::StrCat("the job lost conv ", lost_text,
                                                " and --lost-conv-worker stop ends it")));
    }
    if (!lost.empty() && o.lost_conv_worker == LostConvWorkerPolicy::kContinue) {
      absl::StatusOr<int> remaining =
          ConvWorkersWithout(attempt.conv_workers, static_cast<int>(lost.size()), o.batch_sizes,
                             attempt.mode == "stanza" ? attempt.fc_workers : 0);
      if (!remaining.ok()) {
        LogWarning("%s", std::string(run.message()).c_str());
        return fail(WithContext(remaining.status(), absl::StrCat("the job lost conv ", lost_text)));
      }
      attempt.conv_workers = *remaining;
      shrink = true;
    } else if (restarts >= o.restart_failed) {
      return fail(run);
    } else {
      ++restarts;
    }
    StopAll(children);
    children.clear();
    std::filesystem::remove(summary_path);
    // The coordinator of the restart chooses the same epoch (the newest
    // that verifies), and every process restores that one.
    const absl::StatusOr<CheckpointEpoch> epoch = ChooseRestoreEpoch(o.checkpoint_dir);
    attempt.restore = epoch.ok();
    const std::string from =
        epoch.ok() ? absl::StrCat("checkpoint epoch ", epoch->iteration, " in ", o.checkpoint_dir)
                   : absl::StrCat("the beginning (", epoch.status().message(), ")");
    LogWarning("%s", std::string(run.message()).c_str());
    if (shrink) {
      LogWarning("continuing without conv %s: %d conv workers split every batch from %s",
                 lost_text.c_str(), attempt.conv_workers, from.c_str());
    } else {
      LogWarning("restarting the job (restart %d of %d) from %s", restarts, o.restart_failed,
                 from.c_str());
    }
  }

  if (!o.trace_out.empty()) {
    absl::Status traced = WriteChromeTrace(trace_sources, o.trace_out);
    if (!traced.ok()) {
      std::filesystem::remove_all(scratch);
      return WithContext(traced, "--trace-out");
    }
    LogInfo("trace of every worker's iterations: %s", o.trace_out.c_str());
  }
  // Each job's summary (a job's processes tag their outputs with its id).
  std::vector<std::string> paths;
  for (size_t i = 0; i < std::max<size_t>(1, o.job_configs.size()); ++i) {
    paths.push_back(several ? PathForJob(summary_path, 1 + i) : summary_path);
  }
  std::vector<nlohmann::json> jsons;
  for (const std::string& path : paths) {
    std::ifstream in(path);
    jsons.push_back(nlohmann::json::parse(in, nullptr, false));
    if (!jsons.back().is_object()) {
      std::filesystem::remove_all(scratch);
      return absl::InternalError(
          absl::StrCat(stanza ? "fc worker 0" : "worker 0", " wrote no summary to ", path));
    }
  }
  // Every change point and proposal of each job's controller (conv worker
  // 0 writes them beside that job's records), for the job's summary.
  std::vector<nlohmann::json> controller_events(jsons.size(), nlohmann::json::array());
  for (size_t i = 0; o.controller && i < jsons.size(); ++i) {
    const std::string records = records_dir + "/conv_worker_0.jsonl";
    // None when conv worker 0 wrote no records (it failed first).
    for (nlohmann::json& e : ReadJsonLines(several ? PathForJob(records, 1 + i) : records,
                                           "controller")
                                 .value_or(std::vector<nlohmann::json>{})) {
      e.erase("event");
      controller_events[i].push_back(std::move(e));
    }
  }
  std::filesystem::remove_all(scratch);
  std::vector<RunSummary> summaries;
  for (const nlohmann::json& j : jsons) summaries.push_back(SummaryFromJson(j));
  if (several) {
    // The jobs' summaries are where --summary-out put them; each gets its
    // controller's events.
    for (size_t i = 0; o.controller && !o.summary_out.empty() && i < jsons.size(); ++i) {
      jsons[i]["controller_events"] = controller_events[i];
      STRATA_RETURN_IF_ERROR(WriteJsonFile(paths[i], jsons[i]));
    }
    return summaries;
  }
  RunSummary& s = summaries[0];
  nlohmann::json j = jsons[0];
  // Cluster traffic: every byte is counted once, by its sender.
  uint64_t total = 0;
  std::map<std::string, uint64_t> by_role;
  for (const Child& c : children) {
    if (!c.traffic.is_object()) continue;
    const std::string role = absl::StartsWith(c.label, "server")      ? "servers"
                             : absl::StartsWith(c.label, "fc worker") ? "fc_workers"
                                                                      : "conv_workers";
    for (const auto& [peer, bytes] : c.traffic["sent"].items()) {
      total += bytes.get<uint64_t>();
      by_role[role] += bytes.get<uint64_t>();
    }
  }
  if (s.steps > 0 && total > 0) {
    s.bytes_per_iteration = static_cast<double>(total) / static_cast<double>(s.steps);
    for (const auto& [role, bytes] : by_role) {
      s.bytes_per_iteration_by_role[role] =
          static_cast<double>(bytes) / static_cast<double>(s.steps);
    }
    std::string line =
        absl::StrFormat("traffic: %.3f MB per iteration", s.bytes_per_iteration / 1e6);
    for (const auto& [role, bytes] : s.bytes_per_iteration_by_role) {
      absl::StrAppendFormat(&line, ", %s sent %.3f MB", role, bytes / 1e6);
    }
    LogInfo("%s", line);
    j["bytes_per_iteration"] = s.bytes_per_iteration;
    j["bytes_per_iteration_by_role"] = s.bytes_per_iteration_by_role;
    s.seconds_per_iteration = ConvWorkerBreakdown(children);
    if (!s.seconds_per_iteration.empty()) j["seconds_per_iteration"] = s.seconds_per_iteration;
  }
  if (o.controller) j["controller_events"] = controller_events[0];
  if (!o.summary_out.empty() && ((s.steps > 0 && total > 0) || o.controller)) {
    STRATA_RETURN_IF_ERROR(WriteJsonFile(o.summary_out, j));
  }
  return summaries;
}

}  // namespace strata
