#include "tools/launch/lost_conv_worker.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace strata {

absl::StatusOr<LostConvWorkerPolicy> ParseLostConvWorkerPolicy(const std::string& name) {
  if (name == "restart") return LostConvWorkerPolicy::kRestart;
  if (name == "continue") return LostConvWorkerPolicy::kContinue;
  if (name == "stop") return LostConvWorkerPolicy::kStop;
  return absl::InvalidArgumentError(
      absl::StrCat("--lost-conv-worker ", name, ": use restart, continue or stop"));
}

size_t CauseOfFailure(const std::vector<FailedProcess>& failed) {
  const auto killed = std::find_if(failed.begin(), failed.end(),
                                   [](const FailedProcess& p) { return p.killed; });
  return killed != failed.end() ? static_cast<size_t>(killed - failed.begin()) : 0;
}

std::vector<int> LostConvWorkers(const FailedProcess& first,
                                 const std::vector<LostNode>& recorded) {
  std::set<int> lost;
  if (first.role == "conv_worker" && first.killed) lost.insert(first.rank);
  for (const LostNode& node : recorded) {
    if (node.role == "conv_worker") lost.insert(node.rank);
  }
  return {lost.begin(), lost.end()};
}

absl::StatusOr<int> ConvWorkersWithout(int conv_workers, int lost,
                                       const std::vector<int64_t>& batch_sizes, int fc_workers) {
  const int fewest = std::max(1, fc_workers);
  for (int n = conv_workers - lost; n >= fewest; --n) {
    if (std::all_of(batch_sizes.begin(), batch_sizes.end(),
                    [n](int64_t batch) { return batch % n == 0; })) {
      return n;
    }
  }
  const int left = std::max(0, conv_workers - lost);
  const std::string why =
      left == 0 ? "no conv worker is left"
      : left < fewest
          ? absl::StrCat(left, " cannot feed its ", fc_workers, " FC workers (one each at least)")
          : absl::StrCat("no number of them from ", fewest, " to ", left,
                         " divides the global batch (", absl::StrJoin(batch_sizes, ", "), ")");
  return absl::FailedPreconditionError(absl::StrCat("without ", lost, " of its ", conv_workers,
                                                    " conv workers the job cannot go on: ", why));
}

}  // namespace strata
