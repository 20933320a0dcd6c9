#include "tools/bench/crossover_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/control/iteration_record.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "core/util/scratch_directory.h"
#include "core/util/statistics.h"
#include "flags/cluster_flags.h"
#include "scheduler/crossover.h"
#include "tools/bench/harness/contender_environment.h"
#include "tools/bench/harness/plot.h"
#include "tools/bench/harness/report.h"
#include "tools/bench/harness/runner.h"
#include "tools/bench/throughput_plot.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {
namespace {

constexpr absl::Duration kRunTimeout = absl::Minutes(30);

// What one job's alone run measured, per iteration.
struct AloneRun {
  double images_per_sec = 0;
  double batch = 0;          // global batch
  double compute = 0;        // the device busy (input loading included)
  double communication = 0;  // waits on peers
};

// The global batch a job's summary names.
double BatchOf(const nlohmann::json& summary) {
  return static_cast<double>(summary.value("batch_size", int64_t{0}));
}

// Conv worker 0's iteration records of job `job` (1-based) in `dir`.
absl::StatusOr<std::vector<nlohmann::json>> JobRecords(const std::string& dir, size_t job) {
  return ReadIterationRecords(PathForJob(dir + "/conv_worker_0.jsonl", job));
}

// Every job's iteration records (conv worker 0's) in `dir`, by job; each
// job must have left at least two.
absl::StatusOr<std::vector<std::vector<nlohmann::json>>> AllJobRecords(const std::string& dir,
                                                                       size_t jobs) {
  std::vector<std::vector<nlohmann::json>> by_job;
  for (size_t job = 0; job < jobs; ++job) {
    STRATA_ASSIGN_OR_RETURN(std::vector<nlohmann::json> records, JobRecords(dir, job + 1));
    if (records.size() < 2) {
      return absl::InternalError(
          absl::StrCat("job ", job + 1, " left fewer than 2 iteration records in ", dir));
    }
    by_job.push_back(std::move(records));
  }
  return by_job;
}

// The jobs' images per second together: every job's images after its
// first iteration (start-up), over the time from the earliest second
// iteration's start to the latest last iteration's end (the records are
// on one monotonic clock). Jobs that start or end apart count the time one
// trains alone.
double AggregateRate(const std::vector<std::vector<nlohmann::json>>& by_job,
                     const std::vector<double>& batches) {
  double images = 0, from = 0, to = 0;
  for (size_t job = 0; job < by_job.size(); ++job) {
    const std::vector<nlohmann::json>& records = by_job[job];
    images += batches[job] * static_cast<double>(records.size() - 1);
    const double start = records[1]["start"].get<double>();
    const double end = records.back()["start"].get<double>() + records.back()["wall"].get<double>();
    from = job == 0 ? start : std::min(from, start);
    to = std::max(to, end);
  }
  return to > from ? images / (to - from) : 0;
}

// Two jobs' shares of the device time they contended for, from their
// records after each job's first iteration (see the header); empty for
// other job counts or when neither waited for the device.
std::vector<double> ContestedShares(const std::vector<std::vector<nlohmann::json>>& by_job) {
  if (by_job.size() != 2) return {};
  double waited[2] = {0, 0};
  for (size_t job = 0; job < 2; ++job) {
    for (size_t i = 1; i < by_job[job].size(); ++i)
      waited[job] += DeviceWaitSeconds(by_job[job][i]);
  }
  const double both = waited[0] + waited[1];
  if (both <= 0) return {};
  return {waited[1] / both, waited[0] / both};
}

// What a run of every job together measured.
struct TogetherRun {
  double images_per_sec = 0;   // AggregateRate
  std::vector<double> shares;  // ContestedShares
};

class CrossoverRunner {
 public:
  CrossoverRunner(const CrossoverBenchOptions& o, std::string scratch)
      : o_(o), scratch_(std::move(scratch)) {}

  // Job `job` alone, each host's link at `link` ("" = loopback).
  absl::StatusOr<AloneRun> RunAlone(size_t job, const std::string& link) {
    const std::string summary = Path("alone_summary.json");
    LaunchSpec launch = Common(link);
    launch.config = o_.jobs[job];
    launch.summary_out = summary;
    STRATA_RETURN_IF_ERROR(Launch(launch, absl::StrCat("job ", job + 1, " alone")));
    STRATA_ASSIGN_OR_RETURN(nlohmann::json j,
                            ReadContenderResult(summary, "images_per_sec",
                                                absl::StrCat("job ", job + 1, " alone"), log_));
    AloneRun r;
    r.images_per_sec = j["images_per_sec"].get<double>();
    r.batch = BatchOf(j);
    if (!j.contains("seconds_per_iteration")) {
      return absl::InternalError(absl::StrCat("the launcher's summary ", summary,
                                              " has no seconds_per_iteration breakdown"));
    }
    const nlohmann::json& split = j["seconds_per_iteration"];
    // Input loading keeps the device busy too.
    r.compute = split.value("compute", 0.0) + split.value("waiting", 0.0);
    r.communication = split.value("communication", 0.0);
    return r;
  }

  // Every job together under `policy`, each process writing its iteration
  // records into `records_dir`.
  absl::StatusOr<TogetherRun> RunTogether(const std::string& policy, const std::string& link,
                                          const std::string& records_dir) {
    const std::string summary = Path("shared_summary.json");
    LaunchSpec launch = Common(link);
    launch.jobs = o_.jobs;
    launch.policy = policy;
    launch.weights = o_.weights;
    launch.summary_out = summary;
    launch.records_dir = records_dir;
    STRATA_RETURN_IF_ERROR(Launch(launch, policy));
    std::vector<double> batches;
    for (size_t job = 0; job < o_.jobs.size(); ++job) {
      STRATA_ASSIGN_OR_RETURN(nlohmann::json j,
                              ReadContenderResult(PathForJob(summary, job + 1), "batch_size",
                                                  absl::StrCat(policy, ", job ", job + 1), log_));
      batches.push_back(BatchOf(j));
    }
    STRATA_ASSIGN_OR_RETURN(const auto by_job, AllJobRecords(records_dir, o_.jobs.size()));
    TogetherRun run;
    run.images_per_sec = AggregateRate(by_job, batches);
    // Naive jobs never wait for one another: nothing is contested.
    if (policy != "naive") run.shares = ContestedShares(by_job);
    return run;
  }

 private:
  std::string Path(const std::string& what) {
    return absl::StrCat(scratch_, "/run", ++runs_, "_", what);
  }

  // What every run of the bench asks the launcher for.
  LaunchSpec Common(const std::string& link) const {
    LaunchSpec launch = o_.cluster;
    launch.bandwidth = link;
    launch.max_steps = o_.steps;
    launch.threads = o_.threads;
    launch.batch_size = o_.batch_size;
    launch.evaluate = false;
    launch.progress = false;
    return launch;
  }

  absl::Status Launch(const LaunchSpec& launch, const std::string& label) {
    ProcessSpec spec;
    spec.argv = StrataLaunchCommand(BinaryDir(), launch);
    spec.unset_env = UnsetForBenchmarks();
    spec.output_path = log_ = absl::StrCat(scratch_, "/run", runs_, "_launch.log");
    STRATA_ASSIGN_OR_RETURN(const int code, RunProcess(spec, kRunTimeout));
    if (code != 0) {
      return absl::InternalError(absl::StrCat(label, ": strata_launch exited with status ", code,
                                              "; the end of its output:\n",
                                              FileTail(spec.output_path, 2000)));
    }
    return absl::OkStatus();
  }

  const CrossoverBenchOptions& o_;
  const std::string scratch_;
  std::string log_;
  int runs_ = 0;
};

// For each policy, a window of conv worker 0's iterations of every job:
// when it computed, waited for the device, and waited for its peers, as
// spans [start, end, job, kind] (SpanKind: 0 compute, 1 device wait, 2 peer
// wait; SpansOfRecord, core/control/iteration_record.h). The report's
// "timeline", which plot_report.py draws.
absl::StatusOr<nlohmann::json> TimelineOf(
    const std::map<std::string, std::string>& records_by_policy,
    const std::vector<std::string>& policies, size_t jobs) {
  constexpr double kWindow = 1.5;  // seconds drawn, from the middle of the run
  nlohmann::json timeline = {
      {"window_s", kWindow}, {"jobs", jobs}, {"policies", nlohmann::json::array()}};
  for (const std::string& policy : policies) {
    STRATA_ASSIGN_OR_RETURN(const std::vector<std::vector<nlohmann::json>> by_job,
                            AllJobRecords(records_by_policy.at(policy), jobs));
    double first = 0, last = 0;
    for (size_t job = 0; job < jobs; ++job) {
      first = std::max(first, by_job[job].front()["start"].get<double>());
      last = last == 0 ? by_job[job].back()["start"].get<double>()
                       : std::min(last, by_job[job].back()["start"].get<double>());
    }
    const double from = first + std::max(0.0, (last - first - kWindow) / 2);
    nlohmann::json spans = nlohmann::json::array();
    for (size_t job = 0; job < jobs; ++job) {
      for (const nlohmann::json& r : by_job[job]) {
        for (const Span& span : SpansOfRecord(r)) {
          if (span.end < from || span.start > from + kWindow) continue;
          spans.push_back(
              {span.start - from, span.end - from, job + 1, static_cast<int>(span.kind)});
        }
      }
    }
    timeline["policies"].push_back({{"policy", policy}, {"spans", spans}});
  }
  return timeline;
}

// What every run at one point measured: each job alone, then every
// policy, round after round.
struct PointRuns {
  std::vector<std::vector<AloneRun>> alone;              // per job, one per round
  std::map<std::string, std::vector<double>> aggregate;  // by policy, one per round
  // By policy, per job, one per round (two jobs only; ContestedShares).
  std::map<std::string, std::vector<std::vector<double>>> shares;
  std::map<std::string, std::string> records;  // by policy: the last round's
};

// A point's figures: the bound from the jobs' alone runs, and each policy's
// throughput against it; `report` is the point's JSON.
struct PointResult {
  double compute = 0, communication = 0;  // per iteration, summed over the jobs
  double ideal = 0, in_turns = 0;         // images/s
  std::map<std::string, std::vector<double>> aggregate;
  std::map<std::string, std::string> records;
  nlohmann::json report;
};

// The figures of the point whose link is `o.cluster.bandwidth`, printed.
absl::StatusOr<PointResult> Summarise(const CrossoverBenchOptions& o, const PointRuns& runs) {
  const size_t jobs = o.jobs.size();
  PointResult point;
  point.aggregate = runs.aggregate;
  point.records = runs.records;
  const std::vector<std::vector<AloneRun>>& alone = runs.alone;
  // The bound, from the medians of each job's alone runs.
  double c = 0, m = 0, images_per_pair = 0;
  for (size_t job = 0; job < jobs; ++job) {
    std::vector<double> cs, ms;
    for (const AloneRun& r : alone[job]) {
      cs.push_back(r.compute);
      ms.push_back(r.communication);
    }
    c += Median(cs);
    m += Median(ms);
    images_per_pair += alone[job].front().batch;
  }
  point.compute = c;
  point.communication = m;
  const double ideal = point.ideal = images_per_pair / std::max(c, m);
  const double in_turns = point.in_turns = images_per_pair / (c + m);

  std::printf(
      "\nalone, per iteration (medians): compute %.1f ms, communication %.1f ms summed "
      "over the jobs; ideal overlap %.0f images/s (%.2fx taking turns at %.0f)\n",
      c * 1e3, m * 1e3, ideal, ideal / in_turns, in_turns);
  std::printf("%-10s %14s %12s %8s %8s\n", "policy", "images/s (med)", "min..max", "of ideal",
              "vs excl.");
  std::map<std::string, double> medians;
  for (const std::string& policy : o.policies) medians[policy] = Median(point.aggregate[policy]);
  nlohmann::json& report = point.report;
  report = {{"jobs", o.jobs},
            {"mode", o.cluster.mode},
            {"servers", o.cluster.servers},
            {"conv_workers", o.cluster.conv_workers},
            {"steps", o.steps},
            {"rounds", o.repeat},
            {"threads", o.threads},
            {"bandwidth", o.cluster.bandwidth.empty() ? "loopback" : o.cluster.bandwidth},
            {"compute_seconds_per_iteration", c},
            {"communication_seconds_per_iteration", m},
            {"ideal_images_per_sec", ideal},
            {"in_turns_images_per_sec", in_turns}};
  for (const std::string& policy : o.policies) {
    const std::vector<double>& v = point.aggregate[policy];
    const double med = medians[policy];
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const bool has_exclusive = medians.count("exclusive") > 0 && medians["exclusive"] > 0;
    std::printf("%-10s %14.0f %5.0f..%-6.0f %7.1f%% %8s\n", policy.c_str(), med, *lo, *hi,
                100 * med / ideal,
                has_exclusive ? absl::StrFormat("%.3fx", med / medians["exclusive"]).c_str() : "-");
    report["policies"][policy] = {
        {"images_per_sec", v}, {"median", med}, {"fraction_of_ideal", med / ideal}};
  }
  if (!o.weights.empty()) report["weights"] = o.weights;
  STRATA_ASSIGN_OR_RETURN(const std::vector<double> weights, ParseDeviceWeights(o.weights, jobs));
  double weight_sum = 0;
  for (double w : weights) weight_sum += w;
  for (const std::string& policy : o.policies) {
    const auto shares_of = runs.shares.find(policy);
    if (shares_of == runs.shares.end()) continue;
    const std::vector<std::vector<double>>& shares = shares_of->second;
    if (shares.size() != jobs) continue;
    std::string line;
    nlohmann::json medians_json = nlohmann::json::array();
    for (size_t job = 0; job < jobs; ++job) {
      const double share = Median(shares[job]);
      medians_json.push_back(share);
      absl::StrAppendFormat(&line, "%sjob %zu %.1f%% (weight %.1f%%)", job == 0 ? "" : ", ",
                            job + 1, 100 * share, 100 * weights[job] / weight_sum);
    }
    std::printf("%s: contested device time %s\n", policy.c_str(), line.c_str());
    report["policies"][policy]["contested_share"] = medians_json;
    report["policies"][policy]["contested_share_per_round"] = shares;
  }
  if (medians.count("crossover") && medians.count("exclusive") && medians.count("naive")) {
    const double vs_exclusive = medians["crossover"] / medians["exclusive"];
    const double vs_naive = medians["crossover"] / medians["naive"];
    std::printf("crossover/exclusive %.3f, crossover/naive %.3f (medians of %d rounds)\n",
                vs_exclusive, vs_naive, o.repeat);
    report["crossover_over_exclusive"] = vs_exclusive;
    report["crossover_over_naive"] = vs_naive;
  }
  return point;
}

// The throughput of every policy and the ideal bound against the swept
// link rate.
absl::Status DrawThroughput(const CrossoverBenchOptions& o, const std::vector<PointResult>& points,
                            const std::string& png_path) {
  BenchReport plot;
  plot.sweep_parameter = "bandwidth";
  plot.facts["title"] =
      absl::StrFormat("strata_bench crossover: %zu jobs, %s mode, %d conv worker(s)", o.jobs.size(),
                      o.cluster.mode.c_str(), o.cluster.conv_workers);
  for (size_t i = 0; i < points.size(); ++i) {
    SweepPoint p;
    p.value = o.bandwidths[i];
    STRATA_ASSIGN_OR_RETURN(const double bytes_per_second, ParseBandwidth(o.bandwidths[i]));
    p.numeric = bytes_per_second * 8;
    p.contenders.push_back({"ideal overlap (from the alone runs)", {points[i].ideal}, 0, {}});
    for (const std::string& policy : o.policies) {
      p.contenders.push_back({policy, points[i].aggregate.at(policy), 0, {}});
    }
    plot.points.push_back(std::move(p));
  }
  return WriteThroughputPlot(plot, png_path);
}

// "out.png" -> "out.timeline.png".
std::string TimelinePathFor(const std::string& plot_path) {
  const std::filesystem::path p(plot_path);
  return (p.parent_path() / (p.stem().string() + ".timeline" + p.extension().string())).string();
}

// With a sweep, every point's medians in one table; then the timeline,
// the throughput plot and the JSON the options ask for.
absl::Status WriteOutputs(const CrossoverBenchOptions& o, const std::vector<PointResult>& points) {
  const std::vector<std::string> links =
      o.bandwidths.empty() ? std::vector<std::string>{o.cluster.bandwidth} : o.bandwidths;
  if (links.size() > 1) {
    std::printf("sweep: %-10s %8s", "link", "ideal");
    for (const std::string& policy : o.policies) std::printf(" %10s", policy.c_str());
    std::printf("  (median images/s)\n");
    for (size_t i = 0; i < links.size(); ++i) {
      std::printf("       %-10s %8.0f", links[i].c_str(), points[i].ideal);
      for (const std::string& policy : o.policies) {
        std::printf(" %10.0f", Median(points[i].aggregate.at(policy)));
      }
      std::printf("\n");
    }
  }

  const std::string timeline = !o.timeline_out.empty()
                                   ? o.timeline_out
                                   : (o.plot_out.empty() ? "" : TimelinePathFor(o.plot_out));
  nlohmann::json spans;  // the timeline's, kept in the JSON to be drawn again
  if (!timeline.empty()) {
    STRATA_ASSIGN_OR_RETURN(spans, TimelineOf(points.back().records, o.policies, o.jobs.size()));
    STRATA_RETURN_IF_ERROR(DrawReport({{"timeline", spans}}, timeline, "timeline"));
    std::printf("timeline (the last round%s): %s\n",
                links.size() > 1 ? absl::StrCat(" at ", links.back()).c_str() : "",
                timeline.c_str());
  }
  if (!o.plot_out.empty()) {
    STRATA_RETURN_IF_ERROR(DrawThroughput(o, points, o.plot_out));
    std::printf("throughput: %s\n", o.plot_out.c_str());
  }
  if (!o.json_out.empty()) {
    nlohmann::json report;
    if (o.bandwidths.empty()) {
      report = points.front().report;
    } else {
      report = {{"sweep", "bandwidth"}, {"points", nlohmann::json::array()}};
      for (const PointResult& p : points) report["points"].push_back(p.report);
    }
    if (!spans.is_null()) report["timeline"] = spans;
    STRATA_RETURN_IF_ERROR(WriteJsonFile(o.json_out, report));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunCrossoverBench(const CrossoverBenchOptions& options) {
  const CrossoverBenchOptions& o = options;
  if (o.jobs.size() < 2) {
    return absl::InvalidArgumentError("--jobs: name two or more job configs (a.json,b.json)");
  }
  if (o.repeat < 1 || o.steps < 2) {
    return absl::InvalidArgumentError("--repeat must be at least 1 and --steps at least 2");
  }
  for (const std::string& policy : o.policies) {
    if (policy != "exclusive" && policy != "naive" && policy != "crossover") {
      return absl::InvalidArgumentError(
          absl::StrCat("--policies ", policy, ": use exclusive, naive or crossover"));
    }
  }
  STRATA_RETURN_IF_ERROR(ParseDeviceWeights(o.weights, o.jobs.size()).status());
  for (const std::string& b : o.bandwidths) {
    STRATA_RETURN_IF_ERROR_CTX(ParseBandwidth(b).status(), "--sweep bandwidth=");
  }
  if (!o.plot_out.empty() && o.bandwidths.empty()) {
    return absl::InvalidArgumentError(
        "--plot needs --sweep bandwidth=... (throughput against the link rate)");
  }
  STRATA_ASSIGN_OR_RETURN(const ScratchDirectory scratch_directory,
                          ScratchDirectory::Make("strata_crossover_bench"));
  const std::string& scratch = scratch_directory.path();
  std::printf(
      "crossover: %zu jobs (%s), %s mode, %d server(s), %d conv worker(s), %d steps, "
      "%d rounds, %s\n",
      o.jobs.size(), absl::StrJoin(o.jobs, ", ").c_str(), o.cluster.mode.c_str(), o.cluster.servers,
      o.cluster.conv_workers, o.steps, o.repeat,
      !o.bandwidths.empty()         ? "links swept"
      : o.cluster.bandwidth.empty() ? "loopback"
                                    : ("links of " + o.cluster.bandwidth).c_str());

  // Each round runs every job alone, then the jobs together under every
  // policy; what each run measured goes to its point's PointRuns.
  CrossoverRunner runner(o, scratch);
  std::map<std::string, PointRuns> runs;  // by the point's value
  const auto link_of = [&o](const std::string& value) {
    return value.empty() ? o.cluster.bandwidth : value;
  };
  BenchmarkDescription d;
  d.name = "crossover";
  d.sweep_parameter = o.bandwidths.empty() ? "" : "bandwidth";
  d.points = o.bandwidths;
  d.repeat = o.repeat;
  d.tables = false;  // each point's own table below
  for (size_t job = 0; job < o.jobs.size(); ++job) {
    d.contenders.push_back(
        {absl::StrCat("job ", job + 1, " alone"),
         [&, job](const std::string& value) -> absl::StatusOr<RunMeasurement> {
           STRATA_ASSIGN_OR_RETURN(const AloneRun r, runner.RunAlone(job, link_of(value)));
           PointRuns& at = runs[value];
           at.alone.resize(o.jobs.size());
           at.alone[job].push_back(r);
           return RunMeasurement{
               r.images_per_sec, 0, {{"compute", r.compute}, {"communication", r.communication}}};
         }});
  }
  for (const std::string& policy : o.policies) {
    d.contenders.push_back(
        {policy, [&, policy](const std::string& value) -> absl::StatusOr<RunMeasurement> {
           PointRuns& at = runs[value];
           std::vector<double>& aggregate = at.aggregate[policy];
           at.records[policy] = absl::StrCat(scratch, "/records_", policy, "_", aggregate.size(),
                                             "_", link_of(value));
           STRATA_ASSIGN_OR_RETURN(const TogetherRun run,
                                   runner.RunTogether(policy, link_of(value), at.records[policy]));
           aggregate.push_back(run.images_per_sec);
           if (!run.shares.empty()) {
             std::vector<std::vector<double>>& shares = at.shares[policy];
             shares.resize(run.shares.size());
             for (size_t job = 0; job < run.shares.size(); ++job) {
               shares[job].push_back(run.shares[job]);
             }
           }
           return RunMeasurement{run.images_per_sec, 0, {}};
         }});
  }
  std::vector<PointResult> points;
  d.after_point = [&](const SweepPoint& p) -> absl::Status {
    if (!p.value.empty()) std::printf("\nlinks of %s:", p.value.c_str());
    CrossoverBenchOptions at = o;
    at.cluster.bandwidth = link_of(p.value);
    STRATA_ASSIGN_OR_RETURN(PointResult point, Summarise(at, runs[p.value]));
    points.push_back(std::move(point));
    return absl::OkStatus();
  };
  STRATA_RETURN_IF_ERROR(RunBenchmark(d).status());
  return WriteOutputs(o, points);
}

}  // namespace strata::bench
