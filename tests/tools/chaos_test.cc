// The chaos suite (`make chaos`, ctest label "chaos"): local clusters under
// seeded faults. Seed s picks the job (ps, stanza, stanza with the MoE
// experts split over two FC workers), the fault (kill -9 of a role, SIGSTOP
// of a role until the job gives up on it, or 1% of every process's messages
// dropped, duplicated, delayed and reordered), the role and the moment
// (after a checkpoint epoch is complete, plus a seeded delay). Seeds 10 to
// 13 kill a role at a crash point of the checkpoints instead
// (core/util/crash_point.h): while a server writes a part, while server 0
// puts a manifest in place, halfway through a prune, and (after a kill of
// a conv worker) while an FC worker restores. Every run uses BSP,
// coordinated checkpoints and --restart-failed, so the math allows
// exactness: the job must complete with the parameters of the same job run
// undisturbed (max difference <= 1e-6), leave no process behind, and leave
// checkpoints that load.
//
// Seeds 1..13 under ctest; run the binary with STRATA_CHAOS_SEEDS=N for
// seeds 1..N (beyond 13, the first nine faults again with other draws).
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/train/checkpoint_epochs.h"
#include "core/util/rng.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::kBin;

enum class Fault { kKill, kStop, kMessages, kCrashPoint };

struct Scenario {
  int seed;
  std::string job;  // ps, stanza, moe
  Fault fault;
  std::string binary;  // the role hit (kKill, kStop, kCrashPoint)
  int rank = 0;
  int delay_ms = 0;  // after the first complete epoch
  // kCrashPoint: the point (NAME[#N] of STRATA_CRASH_AT), and whether a
  // conv worker is killed too, to make the job restore.
  std::string crash_point;
  bool kill_to_restore = false;
  std::string Describe() const {
    if (fault == Fault::kCrashPoint) {
      return absl::StrCat("seed ", seed, ": ", job, ", crash point ", crash_point, " of ", binary,
                          kill_to_restore ? " after a kill -9 of conv worker 1" : "");
    }
    const char* what = fault == Fault::kKill   ? "kill -9"
                       : fault == Fault::kStop ? "SIGSTOP"
                                               : "1% message faults";
    return absl::StrCat("seed ", seed, ": ", job, ", ", what,
                        fault == Fault::kMessages ? "" : absl::StrCat(" of ", binary, " ", rank),
                        fault == Fault::kMessages ? "" : absl::StrCat(" +", delay_ms, " ms"));
  }
};

// Seeds 10 to 13: a crash in each step of the checkpoints' life. Server 0
// alone writes manifests and prunes (the third complete epoch is kept, so
// the fourth prunes).
Scenario CrashPointScenario(int seed) {
  Scenario s;
  s.seed = seed;
  s.job = std::vector<std::string>{"ps", "stanza", "moe"}[seed % 3];
  s.fault = Fault::kCrashPoint;
  s.binary = "strata_server";
  switch (seed) {
    case 10:
      s.crash_point = "part-write#2";
      break;
    case 11:
      s.crash_point = "rename:MANIFEST.json#2";
      break;
    case 12:
      s.crash_point = "prune";
      break;
    default:
      s.crash_point = "restore";
      s.binary = "strata_fc_worker";
      s.kill_to_restore = true;
      break;
  }
  return s;
}

Scenario ScenarioOf(int seed) {
  if (seed >= 10 && seed <= 13) return CrashPointScenario(seed);
  Rng rng(static_cast<uint64_t>(seed) * 7919);
  Scenario s;
  s.seed = seed;
  s.job = std::vector<std::string>{"ps", "stanza", "moe"}[seed % 3];
  s.fault = static_cast<Fault>((seed / 3) % 3);
  // The roles of each job: (binary, how many).
  std::vector<std::pair<std::string, int>> roles = {{"strata_server", 2},
                                                    {"strata_conv_worker", 2}};
  if (s.job != "ps") roles.push_back({"strata_fc_worker", s.job == "moe" ? 2 : 1});
  const auto& [binary, count] = roles[rng.Below(roles.size())];
  s.binary = binary;
  s.rank = static_cast<int>(rng.Below(static_cast<uint64_t>(count)));
  s.delay_ms = static_cast<int>(rng.Below(300));
  return s;
}

std::vector<std::string> JobFlags(const std::string& job) {
  // A sanitized build answers several times slower: its exchanges get as
  // much longer to give up.
  std::vector<std::string> flags = {"--max-steps",
                                    "120",
                                    "--evaluate=false",
                                    "--progress=false",
                                    "--servers",
                                    "2",
                                    "--conv-workers",
                                    "2",
                                    "--timeout",
                                    std::to_string(testing::ScaledSeconds(5))};
  if (job == "ps") {
    flags.insert(flags.end(), {"--config", testing::kConfig, "--mode", "ps"});
  } else {
    flags.insert(flags.end(), {"--config", job == "moe" ? testing::kMoeConfig : testing::kConfig,
                               "--mode", "stanza", "--fc-workers", job == "moe" ? "2" : "1"});
  }
  return flags;
}

// The names in the working directory (where ZeroMQ puts the sockets of
// ipc://* bindings when TMPDIR is not set).
std::set<std::string> EntriesOfCurrentDirectory() {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::current_path())) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

class ChaosTest : public testing::ClusterTest, public ::testing::WithParamInterface<int> {
 protected:
  // The parameters of `job` run undisturbed.
  std::string Undisturbed(const std::string& job) {
    std::vector<std::string> argv = {kBin + "strata_launch"};
    for (const std::string& flag : JobFlags(job)) argv.push_back(flag);
    argv.insert(argv.end(), {"--parameters-out", dir_ + "/undisturbed.ckpt"});
    const auto [code, out] = testing::RunCommand(absl::StrJoin(argv, " "));
    EXPECT_EQ(code, 0) << out;
    return dir_ + "/undisturbed.ckpt";
  }
};

TEST_P(ChaosTest, TheJobCompletesWithTheUndisturbedParametersAndLeavesNothingBehind) {
  const Scenario s = ScenarioOf(GetParam());
  SCOPED_TRACE(s.Describe());
  const std::string undisturbed = Undisturbed(s.job);
  const std::string checkpoints = dir_ + "/checkpoints";
  std::vector<std::string> argv = {kBin + "strata_launch"};
  for (const std::string& flag : JobFlags(s.job)) argv.push_back(flag);
  argv.insert(argv.end(), {"--parameters-out", dir_ + "/out.ckpt", "--checkpoint-dir", checkpoints,
                           "--checkpoint-every", "10", "--restart-failed", "2"});
  if (s.fault == Fault::kMessages) {
    argv.insert(argv.end(),
                {"--shared-memory=false", "--inject-faults",
                 absl::StrCat("drop=0.01,duplicate=0.01,delay=0.01,reorder=0.01,delay_ms=20,seed=",
                              s.seed)});
  }
  const std::set<std::string> entries_before = EntriesOfCurrentDirectory();
  // The launcher and every process it starts inherit the crash point.
  const std::string crash_marker = dir_ + "/crashed";
  if (s.fault == Fault::kCrashPoint) {
    ::setenv("STRATA_CRASH_AT",
             absl::StrCat(s.crash_point, ":", s.binary, ":", crash_marker).c_str(), 1);
  }
  testing::Process launcher(argv, dir_ + "/launch.log");
  ::unsetenv("STRATA_CRASH_AT");
  if (s.fault == Fault::kKill || s.fault == Fault::kStop || s.kill_to_restore) {
    ASSERT_FALSE(launcher.WaitFor(" complete (", 120).empty()) << launcher.log();
    std::this_thread::sleep_for(std::chrono::milliseconds(s.delay_ms));
    const std::string binary = s.kill_to_restore ? "strata_conv_worker" : s.binary;
    const int rank = s.kill_to_restore ? 1 : s.rank;
    const pid_t victim = testing::FindStrataChild(launcher.pid(), binary, rank);
    ASSERT_GT(victim, 0) << launcher.log();
    ASSERT_EQ(::kill(victim, s.fault == Fault::kStop ? SIGSTOP : SIGKILL), 0);
  }
  ASSERT_EQ(launcher.Wait(), 0) << launcher.log();
  const std::string log = launcher.log();
  if (s.fault == Fault::kMessages) {
    EXPECT_EQ(log.find("restarting the job"), std::string::npos) << log;
  } else if (s.fault == Fault::kCrashPoint) {
    // The crash happened (the marker is made just before it), and the job
    // was restarted from it.
    EXPECT_TRUE(std::filesystem::exists(crash_marker)) << log;
    EXPECT_NE(log.find("killing this process (STRATA_CRASH_AT)"), std::string::npos) << log;
    EXPECT_NE(log.find("restarting the job"), std::string::npos) << log;
  } else if (log.find("restarting the job") == std::string::npos) {
    // The job may end before the fault bites (a kill in its last moments
    // still fails it; a stop shorter than every timeout does not).
    EXPECT_EQ(s.fault, Fault::kStop) << log;
  }
  const float difference = MaxDifference(undisturbed, dir_ + "/out.ckpt");
  EXPECT_LE(difference, 1e-6f) << log;
  int restarts = 0;
  for (size_t at = log.find("restarting the job"); at != std::string::npos;
       at = log.find("restarting the job", at + 1)) {
    ++restarts;
  }
  // For the README's table (ctest keeps it in Testing/Temporary/LastTest.log).
  std::printf("chaos: %s: %d restart(s), max parameter difference %g\n", s.Describe().c_str(),
              restarts, difference);
  // The servers' counters: every chunk took one update per iteration since
  // the (last) start, none lost, none applied twice.
  EXPECT_NE(log.find("[server 0] updates applied: iterations "), std::string::npos) << log;
  EXPECT_NE(log.find("[server 1] updates applied: iterations "), std::string::npos) << log;
  EXPECT_EQ(log.find("not one per chunk and iteration"), std::string::npos) << log;
  EXPECT_EQ(testing::CountStrataProcesses(dir_), 0);
  // Nor files: a process killed with an ipc://* socket open leaves ZeroMQ's
  // socket directory behind unless it was made in the launcher's scratch.
  EXPECT_EQ(EntriesOfCurrentDirectory(), entries_before);
  // The checkpoints left behind load.
  const absl::StatusOr<CheckpointEpoch> newest = ChooseRestoreEpoch(checkpoints);
  ASSERT_TRUE(newest.ok()) << newest.status() << "\n" << log;
  for (const auto& [part, bytes] : newest->part_bytes) {
    EXPECT_TRUE(ReadCheckpoint(newest->PartPath(checkpoints, part)).ok()) << part;
  }
}

int Seeds() {
  const char* env = std::getenv("STRATA_CHAOS_SEEDS");
  return env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 13;
}

INSTANTIATE_TEST_SUITE_P(Seeds, ChaosTest, ::testing::Range(1, Seeds() + 1));

}  // namespace
}  // namespace strata
