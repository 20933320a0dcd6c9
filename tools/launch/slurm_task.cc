#include "tools/launch/slurm_task.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/net/admission.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "tools/launch/role_commands.h"

namespace strata {
namespace {

absl::StatusOr<std::string> RequiredEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return absl::FailedPreconditionError(
        absl::StrCat("$", name,
                     " is not set: strata_launch --slurm runs as a task of a Slurm "
                     "job step (srun strata_launch --slurm ... inside an allocation; "
                     "tools/cloud/slurm/strata.sbatch does this)"));
  }
  return std::string(value);
}

absl::StatusOr<int> IntEnv(const char* name) {
  STRATA_ASSIGN_OR_RETURN(std::string text, RequiredEnv(name));
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrCat("$", name, " is \"", text, "\", not a count"));
  }
  return value;
}

// The output of a command run to completion (a Slurm query); fails naming
// it when it cannot run or exits non-zero.
absl::StatusOr<std::string> CommandOutput(const std::vector<std::string>& argv) {
  char path[] = "/tmp/strata_slurm_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return absl::InternalError("cannot make a scratch file for a Slurm query");
  ::close(fd);
  ProcessSpec spec;
  spec.argv = argv;
  spec.output_path = path;
  absl::StatusOr<int> code = RunProcess(spec, absl::Seconds(30));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  const std::string command = absl::StrJoin(argv, " ");
  if (!code.ok()) return WithContext(code.status(), command);
  if (*code != 0) {
    return absl::UnavailableError(
        absl::StrCat(command, " exited with status ", *code, ": ", text.str()));
  }
  return text.str();
}

// The address Slurm reaches `node` by (its NodeAddr), or the name itself.
std::string NodeAddress(const std::string& node) {
  absl::StatusOr<std::string> shown = CommandOutput({"scontrol", "show", "node", "-o", node});
  if (!shown.ok()) return node;
  for (absl::string_view field : absl::StrSplit(*shown, absl::ByAnyChar(" \n"))) {
    if (absl::ConsumePrefix(&field, "NodeAddr=") && !field.empty()) return std::string(field);
  }
  return node;
}

// GPUs this host shows through the NVIDIA driver.
int GpusOnThisHost() {
  std::error_code error;
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", error)) {
    (void)entry;
    ++n;
  }
  return n;
}

std::string LogName(const TaskRole& role) { return absl::StrCat(role.kind, "-", role.rank); }

}  // namespace

absl::StatusOr<SlurmTask> SlurmTaskFromEnvironment() {
  SlurmTask t;
  STRATA_ASSIGN_OR_RETURN(t.procid, IntEnv("SLURM_PROCID"));
  STRATA_ASSIGN_OR_RETURN(t.ntasks, IntEnv("SLURM_NTASKS"));
  STRATA_ASSIGN_OR_RETURN(t.localid, IntEnv("SLURM_LOCALID"));
  STRATA_ASSIGN_OR_RETURN(t.job_id, RequiredEnv("SLURM_JOB_ID"));
  STRATA_ASSIGN_OR_RETURN(t.node, RequiredEnv("SLURMD_NODENAME"));
  STRATA_ASSIGN_OR_RETURN(const std::string list, RequiredEnv("SLURM_JOB_NODELIST"));
  STRATA_ASSIGN_OR_RETURN(const std::string hosts,
                          CommandOutput({"scontrol", "show", "hostnames", list}));
  for (absl::string_view host : absl::StrSplit(hosts, '\n', absl::SkipWhitespace())) {
    t.nodes.emplace_back(absl::StripAsciiWhitespace(host));
  }
  if (t.nodes.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("scontrol show hostnames ", list, " named no host"));
  }
  if (const char* cpus = std::getenv("SLURM_CPUS_PER_TASK")) {
    if (!absl::SimpleAtoi(cpus, &t.cpus_per_task)) t.cpus_per_task = 0;
  }
  return t;
}

absl::StatusOr<TaskRole> RoleOfTask(int procid, int ntasks, int servers, int fc_workers) {
  if (servers < 1 || fc_workers < 0 || ntasks < servers + fc_workers + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        ntasks, " tasks cannot hold ", servers, " server(s), ", fc_workers,
        " FC worker(s) and at least one conv worker: ask Slurm for more tasks (--ntasks) or "
        "give fewer --servers / --fc-workers"));
  }
  if (procid < 0 || procid >= ntasks) {
    return absl::InvalidArgumentError(
        absl::StrCat("task ", procid, " is outside the step's ", ntasks, " tasks"));
  }
  if (procid < servers) return TaskRole{"server", procid};
  if (procid < servers + fc_workers) return TaskRole{"fc_worker", procid - servers};
  return TaskRole{"conv_worker", procid - servers - fc_workers};
}

absl::StatusOr<SlurmTaskProcess> SlurmTaskCommand(ClusterLaunchOptions o, const SlurmTask& task,
                                                  const SlurmLaunchOptions& slurm,
                                                  const std::string& coordinator,
                                                  const std::string& advertise) {
  const int fc_workers = o.mode == "stanza" ? o.fc_workers : 0;
  STRATA_ASSIGN_OR_RETURN(const TaskRole role,
                          RoleOfTask(task.procid, task.ntasks, o.servers, fc_workers));
  o.conv_workers = task.ntasks - o.servers - fc_workers;
  std::vector<int64_t> batches = o.batch_sizes;
  if (batches.empty()) batches.push_back(o.config.training.batch_size);
  for (const int64_t batch : batches) {
    if (batch % o.conv_workers != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("training.batch_size ", batch, " is not divisible by the ", o.conv_workers,
                       " conv workers ", task.ntasks, " tasks leave"));
    }
  }
  // What Slurm gave the task: --cpus-per-task, else one CPU.
  o.threads_per_worker = task.cpus_per_task > 0 ? task.cpus_per_task : 1;
  const std::string& summary = o.summary_out;
  std::vector<std::string> argv;
  if (role.kind == "server") {
    argv = ServerCommand(o, role.rank, coordinator);
  } else if (role.kind == "fc_worker") {
    argv = FcWorkerCommand(o, role.rank, coordinator, summary);
  } else {
    argv = ConvWorkerCommand(o, role.rank, coordinator, summary);
  }
  if (role.kind != "conv_worker") {
    const int first = slurm.port_base + 1 + task.localid * slurm.ports_per_task;
    std::string bind = absl::StrCat("tcp://0.0.0.0:", first, "-", first + slurm.ports_per_task - 1);
    if (role.kind == "server" && role.rank == 0) {
      bind = absl::StrCat("tcp://0.0.0.0:", slurm.port_base);  // the coordinator's port
    }
    argv.insert(argv.end(), {"--bind", bind, "--advertise", advertise});
  }
  return SlurmTaskProcess{role, std::move(argv)};
}

absl::Status RunSlurmTask(const ClusterLaunchOptions& o, const SlurmLaunchOptions& slurm) {
  STRATA_ASSIGN_OR_RETURN(const SlurmTask task, SlurmTaskFromEnvironment());
  STRATA_ASSIGN_OR_RETURN(const std::string token, LoadJobToken(""));
  if (token.empty() && o.job_token.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no job token: every task of the job needs the same one, in $", kJobTokenEnv,
        " (tools/cloud/slurm/strata.sbatch exports a fresh one per job) or --job-token-file "
        "on a shared file system"));
  }
  std::string coordinator;
  if (const char* given = std::getenv("STRATA_COORDINATOR"); given != nullptr && *given) {
    coordinator = given;
  } else {
    if (task.procid == 0 && task.node != task.nodes.front()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "task 0 runs on ", task.node, ", not on the allocation's first host ", task.nodes.front(),
          " where the coordinator is expected: use srun's default block "
          "distribution, or set $STRATA_COORDINATOR"));
    }
    coordinator = absl::StrCat("tcp://", NodeAddress(task.nodes.front()), ":", slurm.port_base);
  }
  const std::string advertise = NodeAddress(task.node);
  STRATA_ASSIGN_OR_RETURN(SlurmTaskProcess process,
                          SlurmTaskCommand(o, task, slurm, coordinator, advertise));
  const TaskRole& role = process.role;
  std::vector<std::string>& argv = process.argv;

  if (std::getenv("CUDA_VISIBLE_DEVICES") == nullptr) {
    if (const int gpus = GpusOnThisHost(); gpus > 0) {
      ::setenv("CUDA_VISIBLE_DEVICES", std::to_string(task.localid % gpus).c_str(), 1);
    }
  }
  if (!o.job_token.empty()) ::setenv(kJobTokenEnv, o.job_token.c_str(), 1);
  // The admin token goes to servers alone: a worker task never reads it.
  if (role.kind == "server") {
    STRATA_ASSIGN_OR_RETURN(const std::string admin, LoadAdminToken(slurm.admin_token_file));
    if (!admin.empty()) ::setenv(kAdminTokenEnv, admin.c_str(), 1);
  } else {
    ::unsetenv(kAdminTokenEnv);
  }
  std::string where = "srun's output";
  if (!slurm.log_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(slurm.log_dir, error);
    where = (std::filesystem::path(slurm.log_dir) / (LogName(role) + ".log")).string();
  }
  std::string kind = role.kind;
  std::replace(kind.begin(), kind.end(), '_', ' ');
  std::printf("strata_launch --slurm: job %s task %d on %s is %s %d (coordinator %s); log: %s\n",
              task.job_id.c_str(), task.procid, task.node.c_str(), kind.c_str(), role.rank,
              coordinator.c_str(), where.c_str());
  std::fflush(stdout);
  // srun's stderr, kept (closed by exec) to say why an exec failed.
  const int srun_stderr = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  if (!slurm.log_dir.empty()) {
    const int fd = ::open(where.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot open ", where, ": ", std::strerror(errno)));
    }
    const bool redirected = ::dup2(fd, STDOUT_FILENO) >= 0 && ::dup2(fd, STDERR_FILENO) >= 0;
    ::close(fd);
    if (!redirected) {
      return absl::UnavailableError(
          absl::StrCat("cannot send the output to ", where, ": ", std::strerror(errno)));
    }
  }
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  const absl::Status failed =
      absl::UnavailableError(absl::StrCat("cannot start ", argv[0], ": ", std::strerror(errno)));
  if (srun_stderr >= 0) ::dup2(srun_stderr, STDERR_FILENO);
  return failed;
}

}  // namespace strata
