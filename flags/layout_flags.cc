#include "absl/flags/flag.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(int32_t, servers, 0, "parameter servers (0: the config's cluster.servers)");
ABSL_FLAG(int32_t, conv_workers, 0, "conv workers (0: the config's cluster.conv_workers)");
ABSL_FLAG(int32_t, fc_workers, 0, "stanza: FC workers (0: the config's cluster.fc_workers)");

namespace strata {

ClusterLayout LayoutFromFlags(const ClusterConfig& cluster) {
  auto pick = [](int32_t flag, int64_t config) {
    return flag > 0 ? static_cast<int>(flag) : static_cast<int>(config);
  };
  ClusterLayout l;
  l.servers = pick(absl::GetFlag(FLAGS_servers), cluster.servers);
  l.conv_workers = pick(absl::GetFlag(FLAGS_conv_workers), cluster.conv_workers);
  l.fc_workers = pick(absl::GetFlag(FLAGS_fc_workers), cluster.fc_workers);
  return l;
}

ClusterLayout LayoutFromFlagsOver(const std::string& config_path) {
  ClusterConfig cluster;
  if (!config_path.empty()) {
    absl::StatusOr<JobConfig> config = LoadJobConfig(config_path);
    if (config.ok()) cluster = config->cluster;
  }
  return LayoutFromFlags(cluster);
}

}  // namespace strata
