#include "runtime/job_group.h"

#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/log.h"

namespace strata {

std::vector<absl::Status> RunJobsTogether(
    std::vector<JobRun> jobs, SharingPolicy policy,
    const std::function<absl::Status(const WorkerOptions&)>& run) {
  if (jobs.size() == 1) return {run(jobs[0].options)};  // the device is its own
  std::vector<DeviceShare> shares;
  for (const JobRun& job : jobs) {
    shares.push_back({absl::StrCat("job ", job.options.client.credentials.job_id), job.weight});
  }
  DeviceArbiter arbiter(policy, shares);
  std::string weights;
  for (const JobRun& job : jobs) absl::StrAppend(&weights, weights.empty() ? "" : ":", job.weight);
  LogInfo("%zu jobs share this process's device: %s, weights %s", jobs.size(),
          SharingPolicyName(policy), weights.c_str());
  std::vector<absl::Status> results(jobs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < jobs.size(); ++i) {
    threads.emplace_back([&, i] {
      std::unique_ptr<DevicePolicy> device = arbiter.ForJob(static_cast<int>(i));
      WorkerOptions options = jobs[i].options;
      options.device = device.get();
      SetLogThreadSuffix(absl::StrCat(", job ", options.client.credentials.job_id));
      results[i] = run(options);
      if (!results[i].ok()) {
        LogError("%s (the other jobs go on)", std::string(results[i].message()).c_str());
      }
    });  // `device` leaves the arbiter here: the others no longer wait for it
  }
  for (std::thread& t : threads) t.join();
  std::string held;
  for (const DeviceArbiter::Usage& u : arbiter.usage()) {
    absl::StrAppendFormat(&held, "%s%s %.2f s in %lld grants", held.empty() ? "" : ", ", u.job,
                          u.held_seconds, static_cast<long long>(u.grants));
  }
  LogInfo("device time held: %s", held.c_str());
  return results;
}

absl::Status CombineJobResults(const std::vector<JobRun>& jobs,
                               const std::vector<absl::Status>& results) {
  if (results.size() == 1) return results[0];
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string message;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].ok()) continue;
    if (code == absl::StatusCode::kOk) code = results[i].code();
    absl::StrAppend(&message, message.empty() ? "" : "; ", "job ",
                    jobs[i].options.client.credentials.job_id, ": ", results[i].message());
  }
  return code == absl::StatusCode::kOk ? absl::OkStatus() : absl::Status(code, message);
}

}  // namespace strata
