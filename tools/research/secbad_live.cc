#include "tools/research/secbad_live.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/model/job_config.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/json_file.h"
#include "core/util/log.h"
#include "core/util/scratch_directory.h"
#include "core/util/statistics.h"
#include "scheduler/secbad/knob_context.h"
#include "scheduler/secbad/runtime_environment.h"
#include "tools/bench/harness/contender_environment.h"
#include "tools/bench/harness/plot.h"
#include "tools/bench/harness/runner.h"
#include "tools/launch/knob_variants.h"
#include "tools/netem/bandwidth_schedule.h"
#include "tools/netem/cpu_schedule.h"
#include "tools/research/secbad_experiments.h"

namespace strata::research {

// What the research tool shares with the benchmarks.
using bench::BinaryDir;
using bench::DrawReport;
using bench::UnsetForBenchmarks;
namespace {

// A contender: a static value of the knob, or a controller.
struct Contender {
  std::string label;       // "static 3:1", "changepoint", "secbad"
  std::string value;       // static: the value it holds
  std::string controller;  // changepoint, secbad ("" = static)
};

// A stretch of the schedule between two of its changes.
struct Phase {
  double begin = 0, end = 0;  // seconds from the launch
  std::string conditions;     // "conv1=25%", "1gbit", "as at the start"
};

// One iteration of conv worker 0, as the figures need it.
struct Iteration {
  double at = 0;  // its start, seconds from the launch
  int64_t iteration = 0;
  std::string value;  // the knob's value in force
};

struct Run {
  std::vector<Iteration> iterations;
  std::vector<nlohmann::json> events;  // the controller's
  // When each change of the schedule was made (the launcher's record),
  // by the time it was due; seconds from the launch.
  std::map<double, double> changed_at;
  // A phase's bounds in this run: from when its change was made.
  double At(double due) const {
    const auto it = changed_at.find(due);
    return it == changed_at.end() ? due : it->second;
  }
};

// The phases of the schedules: from `warmup` to `seconds`, split at every
// change of either.
absl::StatusOr<std::vector<Phase>> PhasesOf(const SecbadLiveOptions& o) {
  std::map<double, std::vector<std::string>> changes;  // at -> what changed
  if (!o.cluster.cpu_schedule.empty()) {
    STRATA_ASSIGN_OR_RETURN(const CpuSchedule cpu, ParseCpuSchedule(o.cluster.cpu_schedule));
    for (const CpuLimitChange& c : cpu) {
      changes[c.at_seconds].push_back(absl::StrCat(
          c.process, "=", c.cores.has_value() ? absl::StrCat(100 * *c.cores, "%") : "none"));
    }
  }
  if (!o.cluster.bandwidth_schedule.empty()) {
    STRATA_ASSIGN_OR_RETURN(const BandwidthSchedule rates,
                            ParseBandwidthSchedule(o.cluster.bandwidth_schedule));
    for (const RateChange& c : rates) changes[c.at_seconds].push_back(c.rate);
  }
  // What is in force in each phase: every limit and rate set so far.
  std::map<std::string, std::string> in_force;  // process or "link" -> setting
  std::vector<Phase> phases;
  double begin = o.warmup;
  auto describe = [&] {
    std::vector<std::string> parts;
    for (const auto& [what, setting] : in_force) {
      if (setting != "none") parts.push_back(what == "link" ? setting : what + "=" + setting);
    }
    return parts.empty() ? std::string("no limits") : absl::StrJoin(parts, ", ");
  };
  auto apply = [&](const std::vector<std::string>& settings) {
    for (const std::string& s : settings) {
      const size_t eq = s.find('=');
      if (eq == std::string::npos) {
        in_force["link"] = s;
      } else {
        in_force[s.substr(0, eq)] = s.substr(eq + 1);
      }
    }
  };
  for (const auto& [at, settings] : changes) {
    if (at >= o.seconds) break;  // after the run: in force in no phase
    if (at > begin) {
      phases.push_back({begin, at, describe()});
      begin = at;
    }
    apply(settings);
  }
  phases.push_back({begin, o.seconds, describe()});
  return phases;
}

// Ctrl-C to the launcher, which stops its job and removes its limits and
// links; if it has not exited after 30 s, its whole process group is
// stopped.
void StopLauncher(ChildProcess& launcher) {
  ::kill(launcher.pid(), SIGINT);
  const double asked = MonotonicSeconds();
  while (!launcher.Poll().has_value()) {
    if (MonotonicSeconds() - asked > 30) {
      LogWarning("the launcher did not stop within 30 s of Ctrl-C; stopping its processes");
      launcher.Stop(absl::Seconds(5));
      return;
    }
    ::usleep(50000);
  }
}

class LiveRunner {
 public:
  LiveRunner(const SecbadLiveOptions& o, std::string scratch, std::string knob, std::string policy)
      : o_(o), scratch_(std::move(scratch)), knob_(std::move(knob)), policy_(std::move(policy)) {}

  absl::StatusOr<Run> Launch(const Contender& c, int repeat) {
    ++runs_;
    std::string name = c.label;
    std::replace(name.begin(), name.end(), ' ', '_');
    std::replace(name.begin(), name.end(), ':', '-');
    const std::string dir = absl::StrCat(o_.records_dir.empty() ? scratch_ : o_.records_dir, "/",
                                         name, "_", repeat + 1);
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) {
      return absl::InvalidArgumentError(
          absl::StrCat("secbad live: cannot make ", dir, ": ", error.message()));
    }
    std::string config = o_.config;
    if (c.controller.empty()) {
      STRATA_ASSIGN_OR_RETURN(const nlohmann::json raw, ReadJsonFile(o_.config));
      STRATA_ASSIGN_OR_RETURN(const nlohmann::json variant,
                              ConfigStartingWith(raw, knob_, c.value));
      config = dir + "/config.json";
      STRATA_RETURN_IF_ERROR(WriteJsonFile(config, variant));
    }
    LaunchSpec launch = o_.cluster;
    launch.config = config;
    launch.threads = o_.threads;
    launch.epochs = 1000;  // long enough for any contender to outlast the schedule
    launch.evaluate = false;
    launch.progress = false;
    launch.records_dir = dir + "/records";
    if (!c.controller.empty()) {
      launch.extra_flags = {"--controller", c.controller, "--cost-model", o_.cost_model};
      if (c.controller == "secbad") {
        launch.extra_flags.insert(launch.extra_flags.end(), {"--policy-file", policy_});
      }
    }
    ProcessSpec spec;
    spec.argv = StrataLaunchCommand(BinaryDir(), launch);
    spec.unset_env = UnsetForBenchmarks();
    spec.set_env = {{"OMP_NUM_THREADS", std::to_string(o_.threads)}};
    spec.output_path = dir + "/launch.log";
    spec.die_with_parent = true;
    const double launched = MonotonicSeconds();
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> launcher, ChildProcess::Start(spec));
    // The run lasts the schedule; then the launcher stops every process.
    while (MonotonicSeconds() - launched < o_.seconds + 0.5) {
      if (Interrupted()) {
        StopLauncher(*launcher);
        return absl::CancelledError("interrupted");
      }
      if (launcher->Poll().has_value()) {
        return absl::InternalError(
            absl::StrCat(c.label, ": the job ended before the schedule did (", "status ",
                         *launcher->Poll(), "); its log:\n", FileTail(spec.output_path, 3000)));
      }
      ::usleep(100000);
    }
    StopLauncher(*launcher);
    // Conv worker 0's iteration records and its controller's events.
    STRATA_ASSIGN_OR_RETURN(std::vector<nlohmann::json> lines,
                            ReadJsonLines(dir + "/records/conv_worker_0.jsonl"));
    Run run;
    for (nlohmann::json& j : lines) {
      const std::string event = j.value("event", "");
      if (event == "iteration" && j.value("completed", false)) {
        run.iterations.push_back({j.value("start", 0.0) - launched,
                                  j.value("iteration", int64_t{0}),
                                  j["knobs"].value(knob_, std::string())});
      } else if (event == "controller") {
        j["label"] = c.label;
        run.events.push_back(std::move(j));
      }
    }
    if (run.iterations.empty()) {
      return absl::InternalError(absl::StrCat(c.label, ": no iteration recorded; its log:\n",
                                              FileTail(spec.output_path, 3000)));
    }
    // The launcher's record of each change: the first time each due change
    // was made (a restarted job's replays come later).
    const std::vector<nlohmann::json> conditions =
        ReadJsonLines(dir + "/records/launcher.jsonl", "condition")
            .value_or(std::vector<nlohmann::json>{});
    for (const nlohmann::json& change : conditions) {
      run.changed_at.emplace(change.value("due", 0.0), change.value("start", 0.0) - launched);
    }
    return run;
  }

 private:
  const SecbadLiveOptions& o_;
  const std::string scratch_;
  const std::string knob_;
  const std::string policy_;
  int runs_ = 0;
};

// Images per second of iterations that began in [begin, end).
double Throughput(const Run& run, double begin, double end, int64_t global_batch) {
  int64_t n = 0;
  for (const Iteration& i : run.iterations) n += i.at >= begin && i.at < end;
  return static_cast<double>(n * global_batch) / (end - begin);
}

// Static values within this share of a phase's best static throughput are
// as good as the best there: the margin each phase is judged by.
constexpr double kAsGoodAsTheBest = 0.9;
// "10%", for reports.
std::string Margin() { return absl::StrCat(std::lround(100 * (1 - kAsGoodAsTheBest)), "%"); }

// Iterations from a change at `at` until one of `values` was in force (the
// first iteration begun after the change counts 0); nullopt when none was.
std::optional<int64_t> IterationsUntil(const Run& run, double at, double until,
                                       const std::set<std::string>& values) {
  std::optional<int64_t> first;
  for (const Iteration& i : run.iterations) {
    if (i.at < at || i.at >= until) continue;
    if (!first.has_value()) first = i.iteration;
    if (values.count(i.value) != 0) return i.iteration - *first;
  }
  return std::nullopt;
}

// How many times the knob's value in force changed during `run` (the
// first iterations, before the process learned the job's knobs, record
// none: that is no change).
int64_t ChangesInForce(const Run& run) {
  int64_t changes = 0;
  const std::string* last = nullptr;
  for (const auto& it : run.iterations) {
    if (it.value.empty()) continue;
    if (last != nullptr && it.value != *last) ++changes;
    last = &it.value;
  }
  return changes;
}

// Each contender's throughput over time (1-second windows) and the phases,
// the report's "series", which plot_report.py draws.
nlohmann::json SeriesOf(const std::vector<Contender>& contenders,
                        const std::vector<std::vector<Run>>& runs, const std::vector<Phase>& phases,
                        int64_t global_batch) {
  nlohmann::json series = {{"phases", nlohmann::json::array()},
                           {"contenders", nlohmann::json::array()}};
  for (const Phase& phase : phases) {
    series["phases"].push_back({{"begin", phase.begin}, {"conditions", phase.conditions}});
  }
  for (size_t c = 0; c < contenders.size(); ++c) {
    std::vector<double> at, images_per_sec;
    const Run& run = runs[c].front();
    for (double t = phases.front().begin; t + 1 <= phases.back().end; t += 1) {
      at.push_back(t + 0.5);
      images_per_sec.push_back(Throughput(run, t, t + 1, global_batch));
    }
    series["contenders"].push_back({{"label", contenders[c].label},
                                    {"bold", !contenders[c].controller.empty()},
                                    {"t", at},
                                    {"images_per_sec", images_per_sec}});
  }
  return series;
}

// The options' contradictions, before anything runs.
absl::Status CheckOptions(const SecbadLiveOptions& o) {
  if (o.config.empty() || o.cost_model.empty()) {
    return absl::InvalidArgumentError("secbad live needs --config and --cost-model");
  }
  if (o.cluster.cpu_schedule.empty() && o.cluster.bandwidth_schedule.empty()) {
    return absl::InvalidArgumentError(
        "secbad live needs a schedule: --cpu-schedule and/or --bandwidth-schedule");
  }
  if (!(o.seconds > o.warmup) || o.warmup < 0 || o.repeat < 1) {
    return absl::InvalidArgumentError("secbad live: --seconds must exceed --warmup, --repeat >= 1");
  }
  // The prior a policy trains under, when one is trained.
  return SecbadRuntimeOptions(o.segment_mean, o.segment_stddev).status();
}

// Every static value of the knob (for "static"), and the controllers named.
absl::StatusOr<std::vector<Contender>> ContendersOf(const SecbadLiveOptions& o,
                                                    const secbad::KnobContext& context) {
  std::vector<Contender> contenders;
  for (const std::string& c : o.contenders) {
    if (c == "static") {
      for (const std::string& v : context.values()) contenders.push_back({"static " + v, v, ""});
    } else if (c == "changepoint" || c == "secbad") {
      contenders.push_back({c, "", c});
    } else {
      return absl::InvalidArgumentError(absl::StrCat("secbad live: unknown contender \"", c,
                                                     "\" (use static, changepoint, secbad)"));
    }
  }
  return contenders;
}

// SeCBAD's policy, trained in the runtime environment of the cost model
// `context` when a secbad contender runs and --policy-file names none;
// written into `scratch`. Its path ("" when none is needed).
absl::StatusOr<std::string> TrainPolicyIfNeeded(const SecbadLiveOptions& o,
                                                const std::vector<Contender>& contenders,
                                                std::shared_ptr<const secbad::KnobContext> context,
                                                const std::string& scratch, nlohmann::json& json) {
  const bool learned = std::any_of(contenders.begin(), contenders.end(),
                                   [](const Contender& c) { return c.controller == "secbad"; });
  if (!learned || !o.policy_file.empty()) return o.policy_file;
  STRATA_ASSIGN_OR_RETURN(secbad::RuntimeExperimentOptions training,
                          SecbadRuntimeOptions(o.segment_mean, o.segment_stddev));
  training.training_steps = o.training_steps;
  training.policy.decision_margin = o.decision_margin;
  training.env.lag = o.cluster.knob_lead + 2;  // the lease, and the records' relay
  training.policy_out = scratch + "/secbad.bin";
  training.progress = [](int64_t, double) { return !Interrupted(); };
  std::printf("training SeCBAD's policy: %lld steps in the runtime environment of %s\n",
              static_cast<long long>(o.training_steps), o.cost_model.c_str());
  std::fflush(stdout);
  secbad::RuntimeExperiment experiment(std::move(context), training);
  SetCpuThreads(1);  // small networks: a second thread only waits at every layer
  STRATA_ASSIGN_OR_RETURN(const secbad::RuntimeRun trained, experiment.Run("secbad", 1));
  std::printf("trained: mean efficiency %.3f on evaluation episodes\n", trained.efficiency);
  json["policy_training"] = {{"steps", o.training_steps},
                             {"evaluation_efficiency", trained.efficiency}};
  return training.policy_out;
}

// What the runs of every contender show, phase by phase, and how each
// controller fared against the static values.
class LiveReport {
 public:
  LiveReport(const SecbadLiveOptions& o, const std::vector<Contender>& contenders,
             const std::vector<std::vector<Run>>& runs, const std::vector<Phase>& phases,
             int64_t global_batch)
      : o_(o), contenders_(contenders), runs_(runs), phases_(phases), batch_(global_batch) {
    best_static_.resize(phases.size());
    best_rate_.resize(phases.size(), 0);
    good_.resize(phases.size());
    for (size_t p = 0; p < phases.size(); ++p) {
      for (size_t c = 0; c < contenders.size(); ++c) {
        if (!contenders[c].controller.empty()) continue;
        const double rate = MedianOf(c, phases[p].begin, phases[p].end);
        if (rate > best_rate_[p]) {
          best_rate_[p] = rate;
          best_static_[p] = contenders[c].value;
        }
      }
      // The static values about as fast as the best (ties within
      // run-to-run noise): what a controller should have in force there.
      for (size_t c = 0; c < contenders.size(); ++c) {
        if (contenders[c].controller.empty() &&
            MedianOf(c, phases[p].begin, phases[p].end) >= kAsGoodAsTheBest * best_rate_[p]) {
          good_[p].insert(contenders[c].value);
        }
      }
    }
    have_static_ = std::any_of(contenders.begin(), contenders.end(),
                               [](const Contender& c) { return c.controller.empty(); });
  }

  // Each contender's median images/s per phase (and its share of the
  // phase's best static value) and over the whole run, printed; the
  // report's "phases" and "contenders".
  void PhaseTable(nlohmann::json& json) const {
    std::printf("\nimages/s per phase (median of %d runs)\n%-14s", o_.repeat, "contender");
    for (const Phase& p : phases_) {
      std::printf(" %15s", absl::StrFormat("%.0f-%.0fs", p.begin, p.end).c_str());
    }
    std::printf(" %12s\n", "whole run");
    nlohmann::json contenders_json = nlohmann::json::object();
    for (size_t c = 0; c < contenders_.size(); ++c) {
      std::printf("%-14s", contenders_[c].label.c_str());
      nlohmann::json per_phase = nlohmann::json::array();
      for (size_t p = 0; p < phases_.size(); ++p) {
        const double rate = MedianOf(c, phases_[p].begin, phases_[p].end);
        const double share = best_rate_[p] > 0 ? rate / best_rate_[p] : 0.0;
        std::printf(" %8.0f (%3.0f%%)", rate, 100 * share);
        per_phase.push_back({{"images_per_sec", rate}, {"of_best_static", share}});
      }
      const double whole = MedianOf(c, o_.warmup, o_.seconds);
      std::printf(" %12.0f\n", whole);
      std::vector<double> per_run;
      for (const Run& r : runs_[c]) per_run.push_back(Throughput(r, o_.warmup, o_.seconds, batch_));
      contenders_json[contenders_[c].label] = {
          {"phases", per_phase}, {"whole_run_images_per_sec", whole}, {"per_run", per_run}};
    }
    nlohmann::json phases_json = nlohmann::json::array();
    for (size_t p = 0; p < phases_.size(); ++p) {
      phases_json.push_back({{"begin", phases_[p].begin},
                             {"end", phases_[p].end},
                             {"conditions", phases_[p].conditions},
                             {"best_static", best_static_[p]},
                             {"best_static_images_per_sec", best_rate_[p]},
                             {"as_good_as_the_best", good_[p]}});
    }
    if (have_static_) {
      std::printf("best static values per phase (within %.0f%% of the fastest):",
                  100 * (1 - kAsGoodAsTheBest));
      for (const std::set<std::string>& values : good_) {
        std::printf(" [%s]", absl::StrJoin(values, " ").c_str());
      }
      std::printf("\n");
    }
    json["phases"] = phases_json;
    json["contenders"] = contenders_json;
  }

  // Every controller: how often it asked for a change and changed the
  // value in force, and, with a static value measured, how it fared
  // against them; the report's "controllers".
  nlohmann::json Controllers() const {
    if (!have_static_) std::printf("no static value ran: the controllers are not judged\n");
    nlohmann::json verdicts = nlohmann::json::object();
    for (size_t c = 0; c < contenders_.size(); ++c) {
      if (contenders_[c].controller.empty()) continue;
      nlohmann::json v;
      nlohmann::json events = nlohmann::json::array();
      std::vector<int64_t> proposals, changes;  // per run
      for (const Run& r : runs_[c]) {
        proposals.push_back(0);
        for (const nlohmann::json& e : r.events) {
          if (e.value("kind", "") == "proposal") ++proposals.back();
          events.push_back(e);
        }
        changes.push_back(ChangesInForce(r));
      }
      v["events"] = events;
      v["proposals_per_run"] = proposals;
      v["changes_in_force_per_run"] = changes;
      std::printf("%s: %s proposals and %s changes in force per run\n",
                  contenders_[c].label.c_str(), absl::StrJoin(proposals, ", ").c_str(),
                  absl::StrJoin(changes, ", ").c_str());
      if (have_static_) Judge(c, v);
      verdicts[contenders_[c].label] = v;
    }
    return verdicts;
  }

 private:
  // The median over the runs of contender `c` between two of the
  // schedule's times. Each run's phase counts from when its change was made
  // (the first from the warm-up's end, the last to the end of the run).
  double MedianOf(size_t c, double begin, double end) const {
    std::vector<double> v;
    for (const Run& r : runs_[c]) {
      v.push_back(Throughput(r, begin == o_.warmup ? begin : r.At(begin),
                             end == o_.seconds ? end : r.At(end), batch_));
    }
    return Median(v);
  }

  // Controller `c` against the static values: every phase against its best
  // static value, the whole run against every static value, and how soon
  // each change was answered (its verdicts into `v`).
  void Judge(size_t c, nlohmann::json& v) const {
    const std::string& label = contenders_[c].label;
    bool phases_within = true;
    for (size_t p = 0; p < phases_.size(); ++p) {
      phases_within = phases_within && MedianOf(c, phases_[p].begin, phases_[p].end) >=
                                           kAsGoodAsTheBest * best_rate_[p];
    }
    const double whole = MedianOf(c, o_.warmup, o_.seconds);
    bool beats_every_static = true;
    for (size_t s = 0; s < contenders_.size(); ++s) {
      if (!contenders_[s].controller.empty()) continue;
      const double ratio = whole / MedianOf(s, o_.warmup, o_.seconds);
      v["whole_run_over"][contenders_[s].label] = ratio;
      beats_every_static = beats_every_static && ratio > 1;
      std::printf("%s / %s over the whole run: %.2fx\n", label.c_str(),
                  contenders_[s].label.c_str(), ratio);
    }
    v["retunes"] = Retunes(c);
    v["phases_as_good_as_best_static"] = phases_within;
    v["faster_than_every_static"] = beats_every_static;
    std::printf(
        "%s: every phase within %s of its best static value: %s; faster than every "
        "static value over the whole run: %s\n",
        label.c_str(), Margin().c_str(), phases_within ? "yes" : "NO",
        beats_every_static ? "yes" : "NO");
  }

  // After each change of the schedule, the iterations controller `c` took
  // to have one of the phase's best static values in force, in each run.
  nlohmann::json Retunes(size_t c) const {
    nlohmann::json retunes = nlohmann::json::array();
    for (size_t p = 1; p < phases_.size(); ++p) {
      std::vector<double> delays;
      int missed = 0;
      for (const Run& r : runs_[c]) {
        const std::optional<int64_t> d = IterationsUntil(
            r, r.At(phases_[p].begin),
            phases_[p].end == o_.seconds ? o_.seconds : r.At(phases_[p].end), good_[p]);
        if (d.has_value()) {
          delays.push_back(static_cast<double>(*d));
        } else {
          ++missed;
        }
      }
      std::printf("%s after the change at %.0f s: %s in force after %s iterations%s\n",
                  contenders_[c].label.c_str(), phases_[p].begin,
                  absl::StrJoin(good_[p], " or ").c_str(),
                  delays.empty() ? "(never)"
                                 : absl::StrJoin(delays, ", ",
                                                 [](std::string* out, double d) {
                                                   absl::StrAppend(out, static_cast<int64_t>(d));
                                                 })
                                       .c_str(),
                  missed > 0 ? absl::StrCat(" (not in ", missed, " runs)").c_str() : "");
      retunes.push_back({{"at", phases_[p].begin},
                         {"best_static", good_[p]},
                         {"iterations", delays},
                         {"runs_without", missed}});
    }
    return retunes;
  }

  const SecbadLiveOptions& o_;
  const std::vector<Contender>& contenders_;
  const std::vector<std::vector<Run>>& runs_;
  const std::vector<Phase>& phases_;
  const int64_t batch_;
  std::vector<std::string> best_static_;  // per phase
  std::vector<double> best_rate_;
  std::vector<std::set<std::string>> good_;
  bool have_static_ = false;
};

}  // namespace

absl::Status RunSecbadLive(const SecbadLiveOptions& o) {
  STRATA_RETURN_IF_ERROR(CheckOptions(o));
  STRATA_ASSIGN_OR_RETURN(const nlohmann::json model_json, ReadJsonFile(o.cost_model));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const secbad::KnobContext> context,
                          secbad::KnobContextFromJson(model_json, o.cost_model));
  STRATA_ASSIGN_OR_RETURN(const std::vector<Phase> phases, PhasesOf(o));
  STRATA_ASSIGN_OR_RETURN(const JobConfig config, LoadJobConfig(o.config));
  const int64_t global_batch = config.training.batch_size;
  if (context->mode() != o.cluster.mode) {
    return absl::InvalidArgumentError(
        absl::StrCat(o.cost_model, ": fitted to ", context->mode(), " mode, not ", o.cluster.mode));
  }
  STRATA_RETURN_IF_ERROR_CTX(context->FitsJob(o.cluster.conv_workers, global_batch), o.cost_model);
  STRATA_ASSIGN_OR_RETURN(const std::vector<Contender> contenders, ContendersOf(o, *context));
  STRATA_ASSIGN_OR_RETURN(const ScratchDirectory scratch_directory,
                          ScratchDirectory::Make("strata_live"));
  const std::string& scratch = scratch_directory.path();
  nlohmann::json json;
  STRATA_ASSIGN_OR_RETURN(const std::string policy,
                          TrainPolicyIfNeeded(o, contenders, context, scratch, json));

  std::printf("strata_research secbad-live: %s, %s mode, knob %s (%s), %d repeats of %.0f s\n",
              o.config.c_str(), o.cluster.mode.c_str(), context->knob().c_str(),
              absl::StrJoin(context->values(), ", ").c_str(), o.repeat, o.seconds);
  for (const Phase& p : phases) {
    std::printf("  phase %.0f-%.0f s: %s\n", p.begin, p.end, p.conditions.c_str());
  }
  std::fflush(stdout);
  // Every contender, alternated over the repeats; each run's records kept.
  LiveRunner runner(o, scratch, context->knob(), policy);
  std::vector<std::vector<Run>> runs(contenders.size());
  bench::BenchmarkDescription d;
  d.name = "secbad live";
  d.repeat = o.repeat;
  for (size_t c = 0; c < contenders.size(); ++c) {
    d.contenders.push_back(
        {contenders[c].label, [&, c](const std::string&) -> absl::StatusOr<bench::RunMeasurement> {
           STRATA_ASSIGN_OR_RETURN(Run run,
                                   runner.Launch(contenders[c], static_cast<int>(runs[c].size())));
           runs[c].push_back(std::move(run));
           return bench::RunMeasurement{
               Throughput(runs[c].back(), o.warmup, o.seconds, global_batch), 0, {}};
         }});
  }
  STRATA_RETURN_IF_ERROR(bench::RunBenchmark(d).status());

  const LiveReport report(o, contenders, runs, phases, global_batch);
  report.PhaseTable(json);
  json["controllers"] = report.Controllers();
  json["config"] = o.config;
  json["mode"] = o.cluster.mode;
  json["knob"] = context->knob();
  json["cost_model"] = model_json;
  json["cpu_schedule"] = o.cluster.cpu_schedule;
  json["cpu_pin"] = o.cluster.cpu_pin;
  json["bandwidth_schedule"] = o.cluster.bandwidth_schedule;
  json["seconds"] = o.seconds;
  json["warmup"] = o.warmup;
  json["repeat"] = o.repeat;
  json["knob_lead"] = o.cluster.knob_lead;
  json["title"] = absl::StrCat(
      context->knob(), " under ",
      o.cluster.cpu_schedule.empty() ? o.cluster.bandwidth_schedule : o.cluster.cpu_schedule);
  json["series"] = SeriesOf(contenders, runs, phases, global_batch);
  if (!o.json_out.empty()) STRATA_RETURN_IF_ERROR(WriteJsonFile(o.json_out, json));
  if (!o.plot.empty()) {
    STRATA_RETURN_IF_ERROR(DrawReport(json, o.plot, "series"));
    std::printf("plot: %s\n", o.plot.c_str());
  }
  return absl::OkStatus();
}

}  // namespace strata::research
