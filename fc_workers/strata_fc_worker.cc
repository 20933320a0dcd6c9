// strata_fc_worker: an FC worker of stanza mode (the head of the model).
//
//   strata_fc_worker --rank F --coordinator tcp://HOST:PORT --config job.json
//       [--bind tcp://HOST:0] [--threads T] [--summary-out s.json] [--metrics-out m.jsonl]
//
// FC worker 0 prints progress, evaluates after every epoch and writes the
// summary. The other flags are those of every worker (runtime/worker_flags.h).
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "core/flags/cluster_flags.h"
#include "core/status.h"
#include "core/util/flag_names.h"
#include "core/util/log.h"
#include "core/util/process_setup.h"
#include "fc_workers/fc_worker.h"
#include "moe/moe_layer_type.h"
#include "runtime/worker_flags.h"

ABSL_FLAG(int32_t, rank, 0, "FC worker rank in [0, fc_workers)");
ABSL_FLAG(std::string, bind, "tcp://127.0.0.1:0",
          "where conv workers reach this FC worker (tcp port 0: any; ipc://*: a Unix socket)");

namespace strata {
namespace {

absl::Status Run() {
  FcWorkerOptions o;
  STRATA_RETURN_IF_ERROR(WorkerOptionsFromFlags(&o.worker));
  o.worker.client.rank = absl::GetFlag(FLAGS_rank);
  o.bind = absl::GetFlag(FLAGS_bind);
  o.ready_file = ReadyFileFromFlags();
  return RunFcWorker(o).status();
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  strata::ConfigureProcessAllocator();
  strata::moe::RegisterMoe();  // job configs may name "moe" layers
  absl::SetProgramUsageMessage(
      "Strata FC worker (stanza mode).\n  strata_fc_worker --rank F --coordinator "
      "tcp://HOST:PORT --config JOB.json");
  strata::NormalizedArgs args(argc, argv);
  absl::ParseCommandLine(args.argc(), args.argv());
  strata::SetLogProcess(absl::StrCat("fc worker ", absl::GetFlag(FLAGS_rank)));
  absl::Status status = strata::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "strata_fc_worker: error: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
