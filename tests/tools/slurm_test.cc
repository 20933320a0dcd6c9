// Strata under a real Slurm: a single-node Slurm from Debian's packages
// (munged, slurmctld, slurmd; tools/cloud/slurm/local_slurm.sh) runs
// tools/cloud/slurm/strata.sbatch as a user would submit it, CURVE on (its
// default). One job trains
// the default job in stanza mode with 4 tasks (1 server, 1 FC worker, 2
// conv workers); another, whose conv workers cannot read the data, fails:
// the job exits non-zero, the failing role's error is in its log, and no
// process of the job is left.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/cluster_fixture.h"
#include "tests/support/requirements.h"

namespace strata {
namespace {

using testing::kConfig;
using testing::ReadFile;
using testing::RunCommand;

const std::string kSlurmDir = std::string(STRATA_SOURCE_DIR) + "/tools/cloud/slurm";

class SlurmTest : public testing::ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (::geteuid() != 0)
      STRATA_SKIP_WITHOUT("root") << "a local Slurm needs root (slurmd runs jobs as users)";
    const auto [code, out] = RunCommand(kSlurmDir + "/local_slurm.sh start " + dir_ + "/slurm");
    ASSERT_EQ(code, 0) << out;
    started_ = true;
  }
  void TearDown() override {
    if (started_) {
      const auto [code, out] = RunCommand(kSlurmDir + "/local_slurm.sh stop " + dir_ + "/slurm");
      EXPECT_EQ(code, 0) << out;
    }
    ClusterTest::TearDown();
  }

  // Submits strata.sbatch with 4 tasks for `config` and waits for the job;
  // returns its exit code and the job's output file.
  std::pair<int, std::string> RunJob(const std::string& config, const std::string& flags) {
    const std::string env = "SLURM_CONF=" + dir_ + "/slurm/slurm.conf STRATA_BIN=" +
                            std::string(STRATA_BINARY_DIR) + "/bin STRATA_LOG_DIR=" + dir_ +
                            "/logs STRATA_PORT_BASE=29700 ";
    const auto [code, out] =
        // A job that overruns is cancelled by Slurm, and the test's own
        // timeout never leaves the daemons behind.
        RunCommand(env + "timeout " + std::to_string(testing::ScaledSeconds(250)) +
                   " sbatch --wait --time " + std::to_string(testing::ScaledSeconds(240) / 60) +
                   " --ntasks 4 --output " + dir_ +
                   "/job.out " + kSlurmDir +
                   "/strata.sbatch " + config + " " + flags);
    return {code, out + ReadFile(dir_ + "/job.out")};
  }

  bool started_ = false;
};

TEST_F(SlurmTest, OneSrunStartsEveryRoleAndTheJobTrainsTheDefaultJob) {
  const auto [code, out] = RunJob(kConfig, "--mode stanza --servers 1 --fc-workers 1 --epochs 1 "
                                           "--summary-out " + dir_ + "/summary.json");
  ASSERT_EQ(code, 0) << out;
  for (const std::string role : {"server 0", "fc worker 0", "conv worker 0", "conv worker 1"}) {
    EXPECT_NE(out.find(" is " + role + " (coordinator tcp://127.0.0.1:29700)"),
              std::string::npos)
        << role << "\n" << out;
  }
  // Every role ran with the job's CURVE keys (the script's default).
  for (const std::string log : {"server-0", "fc_worker-0", "conv_worker-0", "conv_worker-1"}) {
    EXPECT_NE(ReadFile(dir_ + "/logs/" + log + ".log").find("CURVE: every connection encrypted"),
              std::string::npos)
        << log;
  }
  const nlohmann::json summary = Summary(dir_ + "/summary.json");
  EXPECT_EQ(summary["mode"], "stanza");
  EXPECT_EQ(summary["epochs"], 1);
  EXPECT_GE(summary["test_accuracy"].get<double>(), 0.88) << summary.dump();
}

TEST_F(SlurmTest, AFailingRoleEndsTheJobNonZeroWithItsErrorLoggedAndNothingLeft) {
  const std::string config = dir_ + "/unreadable_data.json";
  std::ofstream(config) << testing::EditedConfig(kConfig, "/usr/share/datasets/fashion-mnist",
                                                 dir_ + "/no-such-data");
  const auto [code, out] = RunJob(config, "--mode stanza --servers 1 --fc-workers 1 --epochs 1");
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("strata.sbatch: the job step failed"), std::string::npos) << out;
  // The first role to read the data (a conv worker or FC worker 0, which
  // evaluates) fails; srun then stops the others. The script shows the end
  // of every role's log.
  EXPECT_NE(out.find("error: " + dir_ + "/no-such-data/train-images-idx3-ubyte: cannot open"),
            std::string::npos)
      << out;
  EXPECT_EQ(testing::CountStrataProcesses(config), 0);
  const auto [queue_code, queue] = RunCommand("SLURM_CONF=" + dir_ + "/slurm/slurm.conf squeue -h");
  EXPECT_EQ(queue_code, 0);
  EXPECT_EQ(queue, "");
}

}  // namespace
}  // namespace strata
