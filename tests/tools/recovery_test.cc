// A role killed mid-run (kill -9) with strata_launch --restart-failed: the
// launcher stops the rest, starts the whole job again from the newest
// complete checkpoint epoch, and the job ends with the parameters of a run
// that was never disturbed (BSP from an epoch repeats the same math).
#include <signal.h>

#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/train/checkpoint_epochs.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::kBin;
using testing::Process;

struct KillCase {
  std::string name;
  std::string mode;
  std::string config;  // "" = the default
  std::string binary;  // the role killed
  int rank;
  std::vector<std::string> layout;
};

void PrintTo(const KillCase& c, std::ostream* os) { *os << c.name; }

class RecoveryTest : public testing::ClusterTest,
                     public ::testing::WithParamInterface<KillCase> {
 protected:
  std::vector<std::string> Launch(const KillCase& c, const std::string& out) {
    std::vector<std::string> argv = {kBin + "strata_launch",
                                     "--config",
                                     c.config.empty() ? testing::kConfig : c.config,
                                     "--mode",
                                     c.mode,
                                     "--max-steps",
                                     "150",
                                     "--evaluate=false",
                                     "--progress=false",
                                     "--parameters-out",
                                     out};
    argv.insert(argv.end(), c.layout.begin(), c.layout.end());
    return argv;
  }
};

TEST_P(RecoveryTest, AKilledRoleRestartsTheJobFromTheLastEpochWithTheUndisturbedResult) {
  const KillCase& c = GetParam();
  const auto [code, out] = testing::RunCommand(
      absl::StrJoin(Launch(c, dir_ + "/undisturbed.ckpt"), " "));
  ASSERT_EQ(code, 0) << out;

  const std::string checkpoints = dir_ + "/checkpoints";
  std::vector<std::string> argv = Launch(c, dir_ + "/restarted.ckpt");
  argv.insert(argv.end(), {"--checkpoint-dir", checkpoints, "--checkpoint-every", "10",
                           "--keep-checkpoints", "2", "--restart-failed", "1"});
  Process launcher(argv, dir_ + "/launch.log");
  // Once an epoch is complete (every part written and reported).
  ASSERT_FALSE(launcher.WaitFor(" complete (", 120).empty()) << launcher.log();
  const pid_t victim = testing::FindStrataChild(launcher.pid(), c.binary, c.rank);
  ASSERT_GT(victim, 0) << c.binary << " " << c.rank << "\n" << launcher.log();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  ASSERT_EQ(launcher.Wait(), 0) << launcher.log();

  const std::string log = launcher.log();
  const size_t restart = log.find("restarting the job (restart 1 of 1) from checkpoint epoch ");
  ASSERT_NE(restart, std::string::npos) << log;
  const int64_t epoch = std::stoll(log.substr(log.find("epoch ", restart) + 6));
  EXPECT_GE(epoch, 10);
  EXPECT_EQ(epoch % 10, 0);
  EXPECT_NE(log.find("was killed by signal 9"), std::string::npos) << log;
  // Every server part was restored from that epoch.
  EXPECT_NE(log.find(absl::StrCat("epoch-", std::string(12 - std::to_string(epoch).size(), '0'),
                                  epoch, "/server-0.ckpt at iteration ", epoch)),
            std::string::npos)
      << log;
  EXPECT_LE(MaxDifference(dir_ + "/undisturbed.ckpt", dir_ + "/restarted.ckpt"), 1e-6f);
  // The servers' counters: after the restart every chunk took one update
  // per iteration from the restored epoch on, none lost, none twice.
  EXPECT_NE(log.find(absl::StrCat("[server 0] updates applied: iterations ", epoch, " to 149, ")),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("not one per chunk and iteration"), std::string::npos) << log;
  // The newest complete epochs kept, two at most (and one being written,
  // where the job ended before its last parts were all reported).
  const absl::StatusOr<CheckpointEpoch> newest = ChooseRestoreEpoch(checkpoints);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_GE(newest->iteration, epoch);
  int epochs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoints)) {
    epochs += std::filesystem::exists(entry.path() / "MANIFEST.json") ? 1 : 0;
  }
  EXPECT_LE(epochs, 2);
  EXPECT_EQ(testing::CountStrataProcesses(dir_), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Roles, RecoveryTest,
    ::testing::Values(
        KillCase{"PsServer", "ps", "", "strata_server", 1,
                 {"--servers", "2", "--conv-workers", "2"}},
        KillCase{"PsConvWorker", "ps", "", "strata_conv_worker", 1,
                 {"--servers", "2", "--conv-workers", "2"}},
        KillCase{"StanzaFcWorker", "stanza", "", "strata_fc_worker", 0,
                 {"--servers", "1", "--conv-workers", "2", "--fc-workers", "1"}},
        KillCase{"MoeSplitExpertsFcWorker", "stanza", testing::kMoeConfig, "strata_fc_worker", 1,
                 {"--servers", "1", "--conv-workers", "2", "--fc-workers", "2"}}),
    [](const ::testing::TestParamInfo<KillCase>& info) { return info.param.name; });

// --lost-conv-worker (tools/launch/lost_conv_worker.h): a job that loses a
// conv worker goes on without it from the newest checkpoint epoch, or
// stops naming it.
class LostConvWorkerClusterTest : public testing::ClusterTest {
 protected:
  std::vector<std::string> Launch(const std::vector<std::string>& layout, const std::string& out) {
    std::vector<std::string> argv = {kBin + "strata_launch", "--config",   testing::kConfig,
                                     "--max-steps",          "150",        "--evaluate=false",
                                     "--progress=false",     "--parameters-out", out};
    argv.insert(argv.end(), layout.begin(), layout.end());
    return argv;
  }
  // Runs the job with checkpoints and `policy`, hitting conv worker `rank`
  // with `signal` once an epoch is complete; returns the exit status and
  // the log.
  std::pair<int, std::string> LoseAConvWorker(const std::vector<std::string>& layout,
                                              const std::vector<std::string>& policy, int rank,
                                              int signal) {
    std::vector<std::string> argv = Launch(layout, dir_ + "/out.ckpt");
    argv.insert(argv.end(), {"--checkpoint-dir", dir_ + "/checkpoints", "--checkpoint-every",
                             "10", "--keep-checkpoints", "100"});
    argv.insert(argv.end(), policy.begin(), policy.end());
    Process launcher(argv, dir_ + "/launch.log");
    EXPECT_FALSE(launcher.WaitFor(" complete (", 120).empty()) << launcher.log();
    const pid_t victim = testing::FindStrataChild(launcher.pid(), "strata_conv_worker", rank);
    EXPECT_GT(victim, 0) << launcher.log();
    if (victim > 0) ::kill(victim, signal);
    const int status = launcher.Wait();
    return {status, launcher.log()};
  }
  // The iteration of the epoch the job went on from ("... from checkpoint
  // epoch E in ..."), or -1.
  static int64_t ContinuedFrom(const std::string& log) {
    const std::string said = "split every batch from checkpoint epoch ";
    const size_t at = log.find(said);
    return at == std::string::npos ? -1 : std::stoll(log.substr(at + said.size()));
  }
  // The parameters of the job started from epoch `epoch` of the run above
  // with `conv_workers` conv workers (`layout`'s servers and FC workers):
  // what the run that went on without its lost worker must have computed.
  std::string FromEpoch(int64_t epoch, std::vector<std::string> layout, int conv_workers) {
    const std::string only = dir_ + "/only_epoch";
    std::filesystem::create_directories(only);
    const std::string name = std::filesystem::path(EpochDirectory(dir_ + "/checkpoints", epoch))
                                 .filename()
                                 .string();
    std::filesystem::copy(dir_ + "/checkpoints/" + name, only + "/" + name,
                          std::filesystem::copy_options::recursive);
    // With its run's stamp: an epoch is restored as one of its run.
    std::filesystem::copy(dir_ + "/checkpoints/RUN.json", only + "/RUN.json");
    for (size_t i = 0; i + 1 < layout.size(); ++i) {
      if (layout[i] == "--conv-workers") layout[i + 1] = std::to_string(conv_workers);
    }
    // The threads each process ran with: the launcher split the config's
    // two among the two conv workers it started with, and kept that.
    std::vector<std::string> argv = Launch(layout, dir_ + "/reference.ckpt");
    argv.insert(argv.end(), {"--checkpoint-dir", only, "--checkpoint-every", "1000", "--restore",
                             "--threads", "1"});
    const auto [code, out] = testing::RunCommand(absl::StrJoin(argv, " "));
    EXPECT_EQ(code, 0) << out;
    return dir_ + "/reference.ckpt";
  }
};

// Killed: the launcher sees it go. The other conv worker takes the whole
// global batch from the newest epoch on, every chunk of both servers takes
// one update per iteration from there, and the result is exactly that of
// the job restored from that epoch with one conv worker. (One worker's step
// is the two's step: the same global batch, the mean of its gradients.)
TEST_F(LostConvWorkerClusterTest, AKilledConvWorkerIsLeftBehindAndTheOthersFinishTheJob) {
  const std::vector<std::string> layout = {"--mode", "ps", "--servers", "2", "--conv-workers",
                                           "2"};
  const auto [status, log] =
      LoseAConvWorker(layout, {"--lost-conv-worker", "continue"}, 1, SIGKILL);
  ASSERT_EQ(status, 0) << log;
  EXPECT_NE(log.find("worker 1 was killed by signal 9"), std::string::npos) << log;
  EXPECT_NE(log.find("continuing without conv worker 1: 1 conv workers split every batch"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("restarting the job"), std::string::npos) << log;
  const int64_t epoch = ContinuedFrom(log);
  ASSERT_GE(epoch, 10) << log;
  for (const char* server : {"[server 0]", "[server 1]"}) {
    EXPECT_NE(log.find(absl::StrCat(server, " updates applied: iterations ", epoch, " to 149, ")),
              std::string::npos)
        << log;
  }
  EXPECT_EQ(log.find("not one per chunk and iteration"), std::string::npos) << log;
  EXPECT_EQ(testing::CountStrataProcesses(dir_), 0);
  EXPECT_LE(MaxDifference(FromEpoch(epoch, layout, 1), dir_ + "/out.ckpt"), 1e-6f) << log;
}

// Hung: nothing exits until the coordinator declares it dead (10 s of
// silence) and fails what waits for it; the FC worker and the other conv
// worker fail, and the coordinator's record says whom the job lost.
TEST_F(LostConvWorkerClusterTest, AHungConvWorkerIsDeclaredDeadAndTheStanzaJobGoesOnWithout) {
  const std::vector<std::string> layout = {"--mode",         "stanza", "--servers",
                                           "1",              "--conv-workers", "2",
                                           "--fc-workers",   "1",      "--timeout",
                                           "40"};
  const auto [status, log] =
      LoseAConvWorker(layout, {"--lost-conv-worker", "continue"}, 0, SIGSTOP);
  ASSERT_EQ(status, 0) << log;
  EXPECT_NE(log.find("coordinator: worker 0 sent no heartbeat for "), std::string::npos) << log;
  EXPECT_NE(log.find("continuing without conv worker 0: 1 conv workers split every batch"),
            std::string::npos)
      << log;
  const int64_t epoch = ContinuedFrom(log);
  ASSERT_GE(epoch, 10) << log;
  EXPECT_EQ(testing::CountStrataProcesses(dir_), 0);
  EXPECT_LE(MaxDifference(FromEpoch(epoch, layout, 1), dir_ + "/out.ckpt"), 1e-6f) << log;
}

TEST_F(LostConvWorkerClusterTest, StopEndsTheJobNamingTheLostWorkerEvenWithRestartsLeft) {
  const auto [status, log] =
      LoseAConvWorker({"--mode", "ps", "--servers", "1", "--conv-workers", "2"},
                      {"--lost-conv-worker", "stop", "--restart-failed", "2"}, 1, SIGKILL);
  EXPECT_NE(status, 0) << log;
  EXPECT_NE(log.find("the job lost conv worker 1 and --lost-conv-worker stop ends it: worker 1 "
                     "was killed by signal 9"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("restarting the job"), std::string::npos) << log;
  EXPECT_EQ(testing::CountStrataProcesses(dir_), 0);
}

class RestoreFlagsTest : public testing::ClusterTest {};

TEST_F(RestoreFlagsTest, ContinuingWithoutAConvWorkerNeedsBspAndCheckpoints) {
  const std::string launch =
      kBin + "strata_launch --config " + testing::kConfig + " --mode ps --max-steps 5 ";
  const auto [code, out] = testing::RunCommand(launch + "--lost-conv-worker continue");
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("--lost-conv-worker continue needs --checkpoint-dir"), std::string::npos)
      << out;
  const auto [code2, out2] = testing::RunCommand(
      launch + "--lost-conv-worker continue --consistency ssp --checkpoint-dir " + dir_);
  EXPECT_NE(code2, 0);
  EXPECT_NE(out2.find("--lost-conv-worker continue needs --consistency bsp: under ssp"),
            std::string::npos)
      << out2;
  const auto [code3, out3] = testing::RunCommand(launch + "--lost-conv-worker later");
  EXPECT_NE(code3, 0);
  EXPECT_NE(out3.find("--lost-conv-worker later: use restart, continue or stop"),
            std::string::npos)
      << out3;
}

TEST_F(RestoreFlagsTest, RestoreWithoutACompleteEpochIsAClearError) {
  const auto [code, out] = testing::RunCommand(
      kBin + "strata_launch --config " + testing::kConfig + " --mode ps --max-steps 5 " +
      "--checkpoint-dir " + dir_ + "/empty --checkpoint-every 5 --restore --progress=false");
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("--restore: " + dir_ + "/empty holds no checkpoints to restore (no RUN.json)"),
            std::string::npos)
      << out;
  const auto [code2, out2] = testing::RunCommand(kBin + "strata_launch --config " +
                                                 testing::kConfig +
                                                 " --mode ps --max-steps 5 --restart-failed 1");
  EXPECT_NE(code2, 0);
  EXPECT_NE(out2.find("--restart-failed needs --checkpoint-dir"), std::string::npos) << out2;
}

}  // namespace
}  // namespace strata
