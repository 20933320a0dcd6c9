// What `strata_bench crossover` reads from conv worker 0's iteration
// records of every job (core/control/iteration_record.h): the jobs'
// images per second together, their shares of the contested device time,
// and the timeline of when each computed and waited.
#ifndef STRATA_TOOLS_BENCH_CROSSOVER_RECORDS_H_
#define STRATA_TOOLS_BENCH_CROSSOVER_RECORDS_H_

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace strata::bench {

// Conv worker 0's iteration records of job `job` (1-based) in `dir`.
absl::StatusOr<std::vector<nlohmann::json>> JobRecords(const std::string& dir, size_t job);

// Every job's iteration records (conv worker 0's) in `dir`, by job; each
// job must have left at least two.
absl::StatusOr<std::vector<std::vector<nlohmann::json>>> AllJobRecords(const std::string& dir,
                                                                       size_t jobs);

// The jobs' images per second together: every job's images after its
// first iteration (start-up), over the time from the earliest second
// iteration's start to the latest last iteration's end (the records are
// on one monotonic clock). Jobs that start or end apart count the time one
// trains alone. `batches`: each job's global batch.
double AggregateRate(const std::vector<std::vector<nlohmann::json>>& by_job,
                     const std::vector<double>& batches);

// Two jobs' shares of the device time they contended for, from their
// records after each job's first iteration (crossover_bench.h); empty for
// other job counts or when neither waited for the device.
std::vector<double> ContestedShares(const std::vector<std::vector<nlohmann::json>>& by_job);

// For each policy, a window of conv worker 0's iterations of every job:
// when it computed, waited for the device, and waited for its peers, as
// spans [start, end, job, kind] (SpanKind: 0 compute, 1 device wait, 2 peer
// wait; SpansOfRecord). The report's "timeline", which plot_report.py draws.
absl::StatusOr<nlohmann::json> TimelineOf(
    const std::map<std::string, std::string>& records_by_policy,
    const std::vector<std::string>& policies, size_t jobs);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_CROSSOVER_RECORDS_H_
