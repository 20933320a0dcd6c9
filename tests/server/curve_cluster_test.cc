// CURVE (core/net/curve.h) with real processes: keyed nodes train as they
// would in plain text, to the same parameters; a node without keys, one
// whose key is not listed, and one whose key is listed for another job can
// neither register nor change anything (each refusal logged by the server,
// the last one named to the node too); strata_keygen's keys and its
// refusals.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::kBin;
using testing::kConfig;
using testing::Process;
using testing::ReadFile;
using testing::RunCommand;

class CurveClusterTest : public testing::ClusterTest {
 protected:
  // strata_keygen --keys DIR --jobs JOBS --client NAME, which must succeed.
  void Keygen(const std::string& dir, const std::string& jobs, const std::string& name) {
    const auto [code, out] = RunCommand(kBin + "strata_keygen --keys " + dir + " --jobs " + jobs +
                                        " --client " + name);
    ASSERT_EQ(code, 0) << out;
  }

  // A conv worker of job `job_id` with `flags`, against `address`.
  std::vector<std::string> Worker(const std::string& address, const std::string& config,
                                  uint64_t job_id, const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {kBin + "strata_conv_worker", "--mode", "ps", "--coordinator",
                                     address, "--config", config, "--job-id",
                                     std::to_string(job_id), "--rank", "0", "--threads", "1",
                                     "--max-steps", "20", "--timeout", std::to_string(testing::ScaledSeconds(4)), "--evaluate=false",
                                     "--progress=false"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return argv;
  }
};

TEST_F(CurveClusterTest, KeyedNodesTrainAsInPlainTextAndNodesWithoutAListedKeyAreRefused) {
  const std::string keys = dir_ + "/keys";
  Keygen(keys, "1", "client");
  Keygen(keys, "2", "other_job");  // listed, but for job 2 only
  // A key pair the cluster never listed, beside the cluster's server.pub.
  const std::string stranger = dir_ + "/stranger";
  Keygen(dir_ + "/elsewhere", "1", "client");
  std::filesystem::create_directories(stranger);
  std::filesystem::copy_file(keys + "/server.pub", stranger + "/server.pub");
  std::filesystem::copy_file(dir_ + "/elsewhere/client.key", stranger + "/client.key");
  chmod(stranger.c_str(), 0700);

  const std::string config = PlainSgdConfig();
  // The honest job in plain text first: the parameters to match.
  {
    Process server({kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0",
                    "--config", config, "--conv-workers", "1", "--max-steps", "20",
                    "--ready-file", dir_ + "/plain.ready"},
                   dir_ + "/plain_server.log");
    const std::string address = server.WaitForReady(dir_ + "/plain.ready");
    ASSERT_FALSE(address.empty()) << server.log();
    Process worker(Worker(address, config, 1, {"--parameters-out", dir_ + "/plain.ckpt"}),
                   dir_ + "/plain_worker.log");
    ASSERT_EQ(worker.Wait(), 0) << worker.log();
    ASSERT_EQ(server.Wait(), 0) << server.log();
  }

  // A server of two jobs (ids 1 and 2), every connection CURVE; job 2's
  // workers never come.
  Process server({kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0",
                  "--job", config, "--job", config, "--conv-workers", "1", "--max-steps", "20",
                  "--curve-keys", keys, "--curve-client", "client", "--ready-file",
                  dir_ + "/server.ready"},
                 dir_ + "/server.log");
  const std::string address = server.WaitForReady(dir_ + "/server.ready");
  ASSERT_FALSE(address.empty()) << server.log();

  struct Stranger {
    std::vector<std::string> flags;
    std::string worker_error;  // what the refused worker is told
    std::string server_log;    // what the server logs
  };
  // A peer without keys or with an unlisted key fails the handshake, and
  // hears why at once; how the server's monitor words the first depends on
  // when the peer hangs up, so only the refusal is checked there.
  const std::vector<Stranger> strangers = {
      {{},
       "it takes only connections that present the job token (--job-token-file or "
       "$STRATA_JOB_TOKEN) or CURVE keys (--curve-keys), and this process has neither",
       "refused a connection to " + address + ": "},
      {{"--curve-keys", stranger},
       address + " refused the connection: it does not admit this process's CURVE key (not in "
                 "its authorized_keys, or not for this job)",
       "is not in " + keys + "/authorized_keys"},
      {{"--curve-keys", keys, "--curve-client", "other_job"},
       "worker 0's CURVE key \"other_job\" is listed for job(s) 2, not for job 1",
       "worker 0's CURVE key \"other_job\" is listed for job(s) 2, not for job 1"},
  };
  for (size_t i = 0; i < strangers.size(); ++i) {
    const Stranger& s = strangers[i];
    Process refused(Worker(address, config, 1, s.flags),
                    dir_ + "/stranger" + std::to_string(i) + ".log");
    EXPECT_EQ(refused.Wait(), 1) << refused.log();
    EXPECT_NE(refused.log().find(s.worker_error), std::string::npos) << refused.log();
    EXPECT_FALSE(server.WaitFor(s.server_log, 10).empty()) << s.server_log << "\n" << server.log();
    // Nor can it change the job's knobs.
    std::string ctl = kBin + "strata_ctl --coordinator " + address + " --timeout 3";
    for (size_t f = 0; f < s.flags.size(); ++f) ctl += " " + s.flags[f];
    const auto [ctl_code, ctl_out] = RunCommand(ctl + " set moe.pipeline_chunks=2");
    EXPECT_EQ(ctl_code, 1) << ctl_out;
    EXPECT_EQ(ctl_out.find("from iteration"), std::string::npos) << ctl_out;
  }

  // The honest, keyed worker trains to the plain-text run's parameters.
  Process honest(Worker(address, config, 1,
                        {"--curve-keys", keys, "--parameters-out", dir_ + "/curve.ckpt"}),
                 dir_ + "/honest.log");
  ASSERT_EQ(honest.Wait(), 0) << honest.log();
  EXPECT_FALSE(server.WaitFor("finished job 1", 10).empty()) << server.log();
  EXPECT_EQ(MaxDifference(dir_ + "/plain.ckpt", dir_ + "/curve.ckpt"), 0.0f);
}

TEST_F(CurveClusterTest, KeygenKeepsSecretsPrivateAndNeverReplacesAKey) {
  const std::string keys = dir_ + "/keys";
  Keygen(keys, "1,2", "client");
  struct stat st;
  ASSERT_EQ(stat((keys + "/server.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(keys.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const std::string authorized = ReadFile(keys + "/authorized_keys");
  EXPECT_EQ(authorized.rfind("1,2 ", 0), 0u) << authorized;
  EXPECT_NE(authorized.find(" client\n"), std::string::npos) << authorized;
  const auto [again, out] = RunCommand(kBin + "strata_keygen --keys " + keys + " --jobs 1");
  EXPECT_EQ(again, 1);
  EXPECT_NE(out.find("client.key exists; pick another --client name"), std::string::npos) << out;
  // A secret others can read is refused by whoever loads it.
  chmod((keys + "/client.key").c_str(), 0644);
  const auto [code, launch] =
      RunCommand(kBin + "strata_launch --config " + kConfig + " --mode ps --curve-keys " + keys);
  EXPECT_EQ(code, 1);
  EXPECT_NE(launch.find("--curve-keys: " + keys +
                        "/client.key is readable by others (mode 0644); chmod 600 it"),
            std::string::npos)
      << launch;
}

}  // namespace
}  // namespace strata
