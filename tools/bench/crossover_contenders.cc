#include "tools/bench/crossover_contenders.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "flags/cluster_flags.h"
#include "tools/bench/crossover_records.h"
#include "tools/bench/harness/contender_environment.h"

namespace strata::bench {
namespace {

// The global batch a job's summary names.
double BatchOf(const nlohmann::json& summary) {
  return static_cast<double>(summary.value("batch_size", int64_t{0}));
}

}  // namespace

absl::StatusOr<AloneRun> CrossoverRunner::RunAlone(size_t job, const std::string& link) {
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

absl::StatusOr<TogetherRun> CrossoverRunner::RunTogether(const std::string& policy,
                                                         const std::string& link,
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

std::string CrossoverRunner::Path(const std::string& what) {
  return absl::StrCat(scratch_, "/run", ++runs_, "_", what);
}

LaunchSpec CrossoverRunner::Common(const std::string& link) const {
  LaunchSpec launch = o_.cluster;
  launch.bandwidth = link;
  launch.max_steps = o_.steps;
  launch.threads = o_.threads;
  launch.batch_size = o_.batch_size;
  launch.evaluate = false;
  launch.progress = false;
  return launch;
}

absl::Status CrossoverRunner::Launch(const LaunchSpec& launch, const std::string& label) {
  ProcessSpec spec;
  spec.argv = StrataLaunchCommand(BinaryDir(), launch);
  spec.unset_env = UnsetForBenchmarks();
  spec.output_path = log_ = absl::StrCat(scratch_, "/run", runs_, "_launch.log");
  STRATA_ASSIGN_OR_RETURN(const int code, RunProcess(spec, kContenderRunTimeout));
  if (code != 0) {
    return absl::InternalError(absl::StrCat(label, ": strata_launch exited with status ", code,
                                            "; the end of its output:\n",
                                            FileTail(spec.output_path, 2000)));
  }
  return absl::OkStatus();
}

}  // namespace strata::bench
