// strata_moe_member: one process of an MoE expert group on synthetic tokens
// (moe/group/group_member.h). `strata_bench moe --workers F` and the
// expert-parallel tests start F of them; by hand:
//   strata_moe_member --rank 0 --size 2 --addresses ipc:///tmp/m0,ipc:///tmp/m1 &
//   strata_moe_member --rank 1 --size 2 --addresses ipc:///tmp/m0,ipc:///tmp/m1
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/net/connection_security.h"
#include "core/process/process_setup.h"
#include "core/status.h"
#include "core/util/count_list.h"
#include "core/util/log.h"
#include "flags/cluster_flags.h"
#include "moe/group/group_member.h"
#include "startup/program_startup.h"

ABSL_FLAG(int32_t, rank, 0, "this member's rank in [0, size)");
ABSL_FLAG(int32_t, size, 1, "members in the group");
ABSL_FLAG(std::string, addresses, "", "every member's inbox by rank, comma-separated (required)");
ABSL_FLAG(int64_t, tokens, 1024, "this member's tokens");
ABSL_FLAG(int64_t, dim, 512, "token dimension");
ABSL_FLAG(int64_t, hidden, 1024, "each expert's hidden width");
ABSL_FLAG(int32_t, experts, 8, "experts");
ABSL_FLAG(int32_t, top_k, 2, "experts per token");
ABSL_FLAG(double, capacity, 1.25, "capacity factor f (> 0 padded, < 0 capped need, 0 dropless)");
ABSL_FLAG(double, aux_loss_weight, 0.01, "weight of the load-balancing loss");
ABSL_FLAG(std::string, chunks, "1", "pipelining degrees d to run, comma-separated");
ABSL_FLAG(std::string, parallelism, "expert",
          "parallelisms r to run: data, expert, comma-separated");
ABSL_FLAG(int32_t, repeat, 3, "timed steps per setting (after one warm-up)");
ABSL_FLAG(int32_t, threads, 1, "CPU threads");
ABSL_FLAG(uint64_t, seed, 1, "seed of the layer's initialisation and the tokens");
ABSL_FLAG(std::string, dump_dir, "", "write each setting's results here");

namespace strata {
namespace {

absl::StatusOr<moe::GroupMemberOptions> OptionsFromFlags() {
  moe::GroupMemberOptions o;
  o.rank = absl::GetFlag(FLAGS_rank);
  o.size = absl::GetFlag(FLAGS_size);
  o.addresses = absl::StrSplit(absl::GetFlag(FLAGS_addresses), ',', absl::SkipEmpty());
  o.tokens = absl::GetFlag(FLAGS_tokens);
  o.dim = absl::GetFlag(FLAGS_dim);
  o.layer.hidden = absl::GetFlag(FLAGS_hidden);
  o.layer.experts = absl::GetFlag(FLAGS_experts);
  o.layer.top_k = absl::GetFlag(FLAGS_top_k);
  o.layer.capacity.factor = absl::GetFlag(FLAGS_capacity);
  o.layer.aux_loss_weight = static_cast<float>(absl::GetFlag(FLAGS_aux_loss_weight));
  o.repeat = absl::GetFlag(FLAGS_repeat);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.dump_dir = absl::GetFlag(FLAGS_dump_dir);
  o.timeout = strata::TimeoutFromFlags();
  // A group on hosts of a network serves beyond loopback: the job token
  // ($STRATA_JOB_TOKEN, which strata_bench hands every member) proves each
  // connection.
  STRATA_RETURN_IF_ERROR(strata::InstallConnectionSecurityFromFlags());
  o.job_token = strata::ProcessConnectionSecurity().token;
  if (o.tokens < 1 || o.dim < 1 || o.repeat < 0 || o.threads < 1) {
    return absl::InvalidArgumentError("--tokens, --dim and --threads must be > 0, --repeat >= 0");
  }
  o.settings.clear();
  for (absl::string_view r : absl::StrSplit(absl::GetFlag(FLAGS_parallelism), ',')) {
    STRATA_ASSIGN_OR_RETURN(moe::ExpertParallelism parallelism,
                            moe::ParseParallelism(std::string(r)));
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> degrees,
                            ParseCountList("--chunks", absl::GetFlag(FLAGS_chunks)));
    for (int64_t chunks : degrees) o.settings.push_back({static_cast<int>(chunks), parallelism});
  }
  return o;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  strata::StartProgram(
      argc, argv,
      "One process of an MoE expert group on synthetic tokens.\n  strata_moe_member --rank R "
      "--size F --addresses A0,A1,... [--tokens 1024] [--chunks 1,2] [--parallelism data,expert]");
  strata::SetLogProcess(absl::StrCat("moe member ", absl::GetFlag(FLAGS_rank)));
  absl::StatusOr<strata::moe::GroupMemberOptions> options = strata::OptionsFromFlags();
  absl::Status status = options.ok() ? strata::moe::RunGroupMember(*options) : options.status();
  return strata::ExitCodeFor(absl::StrCat("strata_moe_member ", absl::GetFlag(FLAGS_rank)), status);
}
