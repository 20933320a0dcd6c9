// Before `strata_bench train` times Strata against its PyTorch peers, it
// checks that they would train the same thing: the peer builds the config's
// model, which must have as many parameters as Strata's, loads Strata's
// initial weights, and computes the loss of Strata's first batch; the two
// losses must agree (evaluation mode, so that dropout's randomness stays
// out). The check prints one line and fails the benchmark on a mismatch.
#ifndef STRATA_TOOLS_BENCH_TRAIN_CHECK_H_
#define STRATA_TOOLS_BENCH_TRAIN_CHECK_H_

#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "core/model/job_config.h"

namespace strata::bench {

struct TrainCheckOptions {
  std::string config_path;
  std::string python = "/usr/bin/python3";
  int threads = 2;
  int64_t batch = 64;
  std::string scratch;  // a directory for the exchanged files
};

// {"parameters": {"strata", "pytorch"}, "first_loss": {"strata", "pytorch",
// "relative_difference"}}; FailedPrecondition naming what differs.
absl::StatusOr<nlohmann::json> CheckPeerComputesTheSame(const JobConfig& config,
                                                        const TrainCheckOptions& options);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_TRAIN_CHECK_H_
