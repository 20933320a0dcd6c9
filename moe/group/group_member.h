// One member of an MoE expert group on synthetic tokens: the process that
// `strata_bench moe --workers F` and the expert-parallel tests start F of
// (`strata_moe_member`). Every member builds the layer exactly as the
// single-process layer is initialised from `seed`, keeps its share of the
// experts, routes its own tokens, and runs forward + backward under each
// requested (d, r) setting.
//
// Per setting it prints one JSON line to stdout:
//   {"rank":0,"chunks":2,"parallelism":"expert","seconds":0.081,"dropped":3}
// (median seconds of forward + backward over `repeat` rounds, after a
// warm-up round; each round runs every setting once, so they alternate)
// and, with a dump directory, writes MemberDumpPath(...): the layer's
// output, input gradient, gate gradient and the owned experts' gradients of
// the last round, as a checkpoint file.
#ifndef STRATA_MOE_GROUP_GROUP_MEMBER_H_
#define STRATA_MOE_GROUP_GROUP_MEMBER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/tensor/tensor.h"
#include "moe/expert_parallel.h"
#include "moe/moe_layer.h"

namespace strata::moe {

struct GroupMemberOptions {
  int rank = 0;
  int size = 1;
  std::vector<std::string> addresses;  // every member's inbox, by rank
  int64_t tokens = 1024;               // this member's tokens
  MoeOptions layer;
  int64_t dim = 512;
  uint64_t seed = 1;
  std::vector<ParallelSettings> settings = {ParallelSettings()};
  int repeat = 3;
  int threads = 1;
  std::string dump_dir;  // "" = no dumps
  absl::Duration timeout = absl::Seconds(60);
  // The group's secret, which every member's hello presents ("" = an open
  // group); the connections prove it as the process's connection security
  // says (core/net/connection_security.h).
  std::string job_token;
};

absl::Status RunGroupMember(const GroupMemberOptions& options);

// The strata_moe_member command line (`binary` first) that runs `options`;
// its settings are the cross product of `chunks` and `parallelisms` (the
// binary's --chunks and --parallelism lists), which replace options.settings.
std::vector<std::string> MemberCommandLine(const std::string& binary,
                                           const GroupMemberOptions& options,
                                           const std::vector<int>& chunks,
                                           const std::vector<ExpertParallelism>& parallelisms);

// The inputs of member `rank` (a single-process reference draws the same).
Tensor MemberTokens(uint64_t seed, int rank, int64_t tokens, int64_t dim);
Tensor MemberOutputGrad(uint64_t seed, int rank, int64_t tokens, int64_t dim);
// Where a member's results for `settings` go.
std::string MemberDumpPath(const std::string& dir, int rank, const ParallelSettings& settings);

}  // namespace strata::moe

#endif  // STRATA_MOE_GROUP_GROUP_MEMBER_H_
