#include "tools/bench/crossover_records.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/control/iteration_record.h"
#include "core/status.h"
#include "flags/cluster_flags.h"

namespace strata::bench {

absl::StatusOr<std::vector<nlohmann::json>> JobRecords(const std::string& dir, size_t job) {
  return ReadIterationRecords(PathForJob(dir + "/conv_worker_0.jsonl", job));
}

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

}  // namespace strata::bench
