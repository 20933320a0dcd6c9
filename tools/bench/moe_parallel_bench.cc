#include "tools/bench/moe_parallel_bench.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "core/net/admission.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "moe/group/group_member.h"
#include "tools/bench/harness/contender_environment.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {
namespace {

const std::vector<int> kChunks = {1, 2, 4};
constexpr int kMemberPort = 5600;  // every member has a host (namespace) of its own

// The slowest member's seconds per (d, r), from the members' JSON lines.
absl::StatusOr<std::map<std::pair<int, std::string>, double>> ReadTimes(
    const std::vector<std::string>& logs) {
  std::map<std::pair<int, std::string>, double> slowest;
  for (const std::string& log : logs) {
    std::ifstream in(log);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] != '{') continue;
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_object() || !j.contains("seconds")) continue;
      double& t = slowest[{j["chunks"].get<int>(), j["parallelism"].get<std::string>()}];
      t = std::max(t, j["seconds"].get<double>());
    }
  }
  if (slowest.empty()) return absl::InternalError("the MoE members reported no times");
  return slowest;
}

}  // namespace

absl::StatusOr<nlohmann::json> RunExpertParallelSweep(const MoeBenchOptions& o,
                                                      double single_seconds,
                                                      const std::string& scratch) {
  nlohmann::json section = nlohmann::json::array();
  std::printf(
      "\nexpert parallelism over processes (global batch %lld tokens split evenly; single "
      "process %.3f s):\n",
      static_cast<long long>(o.tokens), single_seconds);
  std::printf("%-4s %-8s %-4s %-9s %12s %12s\n", "F", "threads", "d", "r", "fwd+bwd s",
              "vs single");
  for (int group : o.workers) {
    if (group < 1 || o.tokens % group != 0 || o.experts % group != 0) {
      return absl::InvalidArgumentError(absl::StrCat("moe --workers ", group,
                                                     ": the group size must divide --tokens ",
                                                     o.tokens, " and --experts ", o.experts));
    }
    const int threads = std::max(1, o.threads / group);
    // Each member on a host of its own when a network is asked for.
    std::unique_ptr<EmulatedNetwork> network;
    std::string link = "ipc on loopback";
    if (!o.bandwidth.empty()) {
      std::string why;
      STRATA_ASSIGN_OR_RETURN(network, EmulateOrFallBack(o.bandwidth, o.latency, group, &why));
      if (network == nullptr) {
        std::printf("F=%d: %s (%s); ipc on loopback instead\n", group, kNoNetworkNotice,
                    why.c_str());
      } else {
        link = absl::StrCat("tcp, each host's link ", o.bandwidth);
      }
    }
    std::vector<std::string> addresses;
    for (int r = 0; r < group; ++r) {
      addresses.push_back(network != nullptr
                              ? absl::StrCat("tcp://", network->host_address(r), ":", kMemberPort)
                              : absl::StrCat("ipc://", scratch, "/member", group, "_", r));
    }
    std::vector<ProcessSpec> members;
    std::vector<std::string> logs;
    const std::string token = NewJobToken();  // the group's; members on emulated hosts serve tcp
    for (int r = 0; r < group; ++r) {
      moe::GroupMemberOptions member;
      member.rank = r;
      member.size = group;
      member.addresses = addresses;
      member.tokens = o.tokens / group;
      member.dim = o.dim;
      member.layer.hidden = o.hidden;
      member.layer.experts = o.experts;
      member.layer.top_k = o.top_k;
      member.layer.capacity.factor = o.capacity;
      member.repeat = o.repeat;
      member.threads = threads;
      ProcessSpec spec;
      spec.argv =
          moe::MemberCommandLine(BinaryDir() + "/strata_moe_member", member, kChunks,
                                 {moe::ExpertParallelism::kData, moe::ExpertParallelism::kExpert});
      spec.unset_env = UnsetForBenchmarks();
      spec.set_env.push_back({kJobTokenEnv, token});
      spec.output_path = absl::StrCat(scratch, "/member", group, "_", r, ".log");
      if (network != nullptr) spec.network_namespace = network->namespace_path(r);
      logs.push_back(spec.output_path);
      members.push_back(std::move(spec));
    }
    STRATA_ASSIGN_OR_RETURN(std::vector<int> codes, RunProcesses(members, absl::Minutes(30)));
    for (int r = 0; r < group; ++r) {
      if (codes[r] != 0) {
        return absl::InternalError(absl::StrCat("MoE member ", r, " of ", group,
                                                " exited with status ", codes[r], ":\n",
                                                FileTail(logs[r], 2000)));
      }
    }
    STRATA_ASSIGN_OR_RETURN(auto times, ReadTimes(logs));
    auto best = times.begin();
    for (auto it = times.begin(); it != times.end(); ++it) {
      std::printf("%-4d %-8d %-4d %-9s %12.3f %11.2fx\n", group, threads, it->first.first,
                  it->first.second.c_str(), it->second, single_seconds / it->second);
      section.push_back({{"workers", group},
                         {"link", link},
                         {"threads_per_worker", threads},
                         {"chunks", it->first.first},
                         {"parallelism", it->first.second},
                         {"seconds", it->second}});
      if (it->second < best->second) best = it;
    }
    std::printf(
        "best static setting for F=%d (%s): d=%d r=%s, %.3f s (%.2fx the single "
        "process)\n",
        group, link.c_str(), best->first.first, best->first.second.c_str(), best->second,
        single_seconds / best->second);
  }
  return section;
}

}  // namespace strata::bench
