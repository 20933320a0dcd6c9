#include "tools/launch/cluster_summary.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "core/util/log.h"
#include "flags/cluster_flags.h"

namespace strata {
namespace {

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

// Mean seconds per iteration of the conv workers, from their reports:
// compute, communication, and waiting (the rest of the iteration).
std::map<std::string, double> ConvWorkerBreakdown(const std::vector<ProcessTrafficLine>& traffic) {
  double compute = 0, network = 0, wall = 0;
  int workers = 0;
  for (const ProcessTrafficLine& t : traffic) {
    if (t.role != "conv_worker" || !t.report.is_object()) continue;
    const auto times = t.report.find("times");
    if (times == t.report.end()) continue;
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

// Adds the cluster's traffic per iteration, in all and by role, and the
// conv workers' breakdown to `s` and `j`; false when nothing was counted.
bool AddTraffic(const std::vector<ProcessTrafficLine>& traffic, RunSummary& s, nlohmann::json& j) {
  uint64_t total = 0;
  std::map<std::string, uint64_t> by_role;
  for (const ProcessTrafficLine& t : traffic) {
    if (!t.report.is_object()) continue;
    const std::string role = t.role == "server"      ? "servers"
                             : t.role == "fc_worker" ? "fc_workers"
                                                     : "conv_workers";
    for (const auto& [peer, bytes] : t.report["sent"].items()) {
      total += bytes.get<uint64_t>();
      by_role[role] += bytes.get<uint64_t>();
    }
  }
  if (s.steps <= 0 || total == 0) return false;
  s.bytes_per_iteration = static_cast<double>(total) / static_cast<double>(s.steps);
  for (const auto& [role, bytes] : by_role) {
    s.bytes_per_iteration_by_role[role] = static_cast<double>(bytes) / static_cast<double>(s.steps);
  }
  std::string line = absl::StrFormat("traffic: %.3f MB per iteration", s.bytes_per_iteration / 1e6);
  for (const auto& [role, bytes] : s.bytes_per_iteration_by_role) {
    absl::StrAppendFormat(&line, ", %s sent %.3f MB", role, bytes / 1e6);
  }
  LogInfo("%s", line);
  j["bytes_per_iteration"] = s.bytes_per_iteration;
  j["bytes_per_iteration_by_role"] = s.bytes_per_iteration_by_role;
  s.seconds_per_iteration = ConvWorkerBreakdown(traffic);
  if (!s.seconds_per_iteration.empty()) j["seconds_per_iteration"] = s.seconds_per_iteration;
  return true;
}

}  // namespace

absl::StatusOr<std::vector<RunSummary>> CollectSummaries(
    const ClusterLaunchOptions& o, const std::string& summary_path, const std::string& records_dir,
    const std::vector<ProcessTrafficLine>& traffic) {
  const bool several = !o.job_configs.empty();
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
      return absl::InternalError(absl::StrCat(o.mode == "stanza" ? "fc worker 0" : "worker 0",
                                              " wrote no summary to ", path));
    }
  }
  // Every change point and proposal of each job's controller (conv worker
  // 0 writes them beside that job's records).
  for (size_t i = 0; o.controller && i < jsons.size(); ++i) {
    const std::string records = records_dir + "/conv_worker_0.jsonl";
    nlohmann::json events = nlohmann::json::array();
    // None when conv worker 0 wrote no records (it failed first).
    for (nlohmann::json& e :
         ReadJsonLines(several ? PathForJob(records, 1 + i) : records, "controller")
             .value_or(std::vector<nlohmann::json>{})) {
      e.erase("event");
      events.push_back(std::move(e));
    }
    jsons[i]["controller_events"] = std::move(events);
  }
  std::vector<RunSummary> summaries;
  for (const nlohmann::json& j : jsons) summaries.push_back(SummaryFromJson(j));
  const bool counted = !several && AddTraffic(traffic, summaries[0], jsons[0]);
  // The summary file gets what was added to what its process wrote.
  if (!o.summary_out.empty() && (counted || o.controller)) {
    for (size_t i = 0; i < jsons.size(); ++i) {
      STRATA_RETURN_IF_ERROR(WriteJsonFile(paths[i], jsons[i]));
    }
  }
  return summaries;
}

}  // namespace strata
