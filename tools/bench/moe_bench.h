// `strata_bench moe`: forward + backward of one MoE layer (moe/) against
// two PyTorch peers on identical inputs — GShard's dense einsum dispatch
// and an index-based sparse dispatch — and against the machine's limit: the
// useful expert FLOPs (padding excluded) at the SGEMM rate measured in the
// same run.
#ifndef STRATA_TOOLS_BENCH_MOE_BENCH_H_
#define STRATA_TOOLS_BENCH_MOE_BENCH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace strata::bench {

struct MoeBenchOptions {
  int64_t tokens = 4096;
  int64_t dim = 512;
  int64_t hidden = 1024;
  int experts = 8;
  int top_k = 2;
  double capacity = 1.25;
  int threads = 2;
  int repeat = 5;
  bool with_peer = true;
  std::vector<int> workers;  // expert-parallel group sizes to run (moe_parallel_bench.h)
  std::string bandwidth;     // with workers: each on an emulated host with this link ("" loopback)
  std::string latency = "0";
  std::string json_out;
  std::string python = "/usr/bin/python3";
};

absl::Status RunMoeBench(const MoeBenchOptions& options);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_MOE_BENCH_H_
