#include "tools/launch/launch_spec.h"

#include <initializer_list>

#include "absl/strings/str_join.h"

namespace strata {

std::vector<std::string> StrataLaunchCommand(const std::string& bin_dir, const LaunchSpec& spec) {
  std::vector<std::string> argv = {bin_dir + "/strata_launch"};
  const auto add = [&argv](std::initializer_list<std::string> flags) {
    argv.insert(argv.end(), flags);
  };
  const auto add_count = [&add](const char* flag, int64_t value) {
    if (value > 0) add({flag, std::to_string(value)});
  };
  if (spec.jobs.empty()) {
    add({"--config", spec.config});
  } else {
    add({"--jobs", absl::StrJoin(spec.jobs, ",")});
    if (!spec.policy.empty()) add({"--policy", spec.policy});
    if (!spec.weights.empty()) add({"--weights", spec.weights});
  }
  add({"--mode", spec.mode});
  add_count("--max-steps", spec.max_steps);
  add_count("--epochs", spec.epochs);
  add_count("--batch-size", spec.batch_size);
  add_count("--threads", spec.threads);
  if (!spec.device.empty()) add({"--device", spec.device});
  if (spec.tf32) add({"--tf32"});
  if (!spec.evaluate) add({"--evaluate=false"});
  if (!spec.progress) add({"--progress=false"});
  if (!spec.summary_out.empty()) add({"--summary-out", spec.summary_out});
  if (spec.mode != "single") {
    add({"--servers", std::to_string(spec.servers), "--conv-workers",
         std::to_string(spec.conv_workers)});
    if (spec.mode == "stanza") add({"--fc-workers", std::to_string(spec.fc_workers)});
    if (spec.colocate_servers) add({"--colocate-servers"});
    if (!spec.bandwidth.empty()) add({"--bandwidth", spec.bandwidth});
    if (!spec.bandwidth_schedule.empty()) add({"--bandwidth-schedule", spec.bandwidth_schedule});
    if (!spec.bandwidth.empty() || !spec.bandwidth_schedule.empty()) {
      add({"--latency", spec.latency});
    }
    if (!spec.cpu_schedule.empty()) add({"--cpu-schedule", spec.cpu_schedule});
    if (!spec.cpu_pin.empty()) add({"--cpu-pin", spec.cpu_pin});
    add_count("--knob-lead", spec.knob_lead);
  }
  if (!spec.records_dir.empty()) add({"--records-dir", spec.records_dir});
  argv.insert(argv.end(), spec.extra_flags.begin(), spec.extra_flags.end());
  return argv;
}

}  // namespace strata
