// A role killed mid-run (kill -9) with strata_launch --restart-failed: the
// launcher stops the rest, starts the whole job again from the newest
// complete checkpoint epoch, and the job ends with the parameters of a run
// that was never disturbed (BSP from an epoch repeats the same math).
#include <signal.h>

#include <filesystem>

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
  const std::optional<CheckpointEpoch> newest = NewestCompleteEpoch(checkpoints);
  ASSERT_TRUE(newest.has_value());
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

class RestoreFlagsTest : public testing::ClusterTest {};

TEST_F(RestoreFlagsTest, RestoreWithoutACompleteEpochIsAClearError) {
  const auto [code, out] = testing::RunCommand(
      kBin + "strata_launch --config " + testing::kConfig + " --mode ps --max-steps 5 " +
      "--checkpoint-dir " + dir_ + "/empty --checkpoint-every 5 --restore --progress=false");
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("--restore: no complete checkpoint epoch in " + dir_ + "/empty"),
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
