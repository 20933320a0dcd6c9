// Server groups started without any job config (strata_server with no
// --config or --job): they learn each job from its workers' hellos, serve
// several at once and one after another, compute what a server given the
// config computes, exit after the last job (or, with --serve-forever, on a
// signal), and refuse a hello they cannot serve, naming why, while the job
// they serve trains on.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::kBatchNormConfig;
using testing::kBin;
using testing::kConfig;
using testing::Process;
using testing::RunCommand;

constexpr int kSteps = 12;

class LearningServerTest : public testing::ClusterTest {
 protected:
  // `base` with `servers` servers in its cluster block, in the scratch
  // directory as `name`.
  std::string WithServers(const std::string& base, int servers, const std::string& name) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << testing::EditedConfig(base, R"("servers": 1)",
                                                 "\"servers\": " + std::to_string(servers));
    return path;
  }
  // A learning server of rank `rank` (rank 0 binds a fresh port and its
  // address is returned through `coordinator`; others join it).
  std::unique_ptr<Process> Server(int rank, int servers, const std::vector<std::string>& extra,
                                  std::string* coordinator) {
    const std::string name = dir_ + "/server" + std::to_string(rank);
    std::vector<std::string> argv = {kBin + "strata_server",
                                     "--rank",
                                     std::to_string(rank),
                                     "--coordinator",
                                     rank == 0 ? "tcp://127.0.0.1:0" : *coordinator,
                                     "--servers",
                                     std::to_string(servers),
                                     "--ready-file",
                                     name + ".ready"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto server = std::make_unique<Process>(argv, name + ".log");
    const std::string address = server->WaitForReady(name + ".ready");
    EXPECT_FALSE(address.empty()) << server->log();
    if (rank == 0) *coordinator = address;
    return server;
  }
  // `command` (a worker binary and its mode) for job `job_id` of `config`
  // with the flags every worker here takes; its parameters go to
  // `name`.ckpt, its output to `name`.log.
  std::unique_ptr<Process> Node(std::vector<std::string> command, const std::string& coordinator,
                                const std::string& config, int job_id, const std::string& name,
                                const std::vector<std::string>& extra = {}) const {
    command.insert(
        command.end(),
        {"--coordinator", coordinator, "--config", config, "--job-id", std::to_string(job_id),
         "--max-steps", std::to_string(kSteps), "--evaluate=false", "--progress=false", "--threads",
         "1", "--timeout", "30", "--parameters-out", dir_ + "/" + name + ".ckpt"});
    command.insert(command.end(), extra.begin(), extra.end());
    return std::make_unique<Process>(command, dir_ + "/" + name + ".log");
  }
  // A ps conv worker (see Node).
  std::unique_ptr<Process> Worker(const std::string& coordinator, const std::string& config,
                                  int job_id, const std::string& name,
                                  const std::vector<std::string>& extra = {}) const {
    return Node({kBin + "strata_conv_worker", "--mode", "ps"}, coordinator, config, job_id, name,
                extra);
  }
  // `config` trained by strata_launch with servers given its config.
  std::string Alone(const std::string& config, int servers, const std::string& name) const {
    const std::string out = dir_ + "/" + name + ".ckpt";
    const auto [code, log] = RunCommand(
        kBin + "strata_launch --config " + config + " --mode ps --servers " +
        std::to_string(servers) + " --conv-workers 2 --threads 1 --max-steps " +
        std::to_string(kSteps) + " --evaluate=false --progress=false --parameters-out " + out);
    EXPECT_EQ(code, 0) << log;
    return out;
  }
};

TEST_F(LearningServerTest, TwoServersLearnEachJobAndServeJobsTogetherAndInTurn) {
  const std::string a = WithServers(kConfig, 2, "a.json");
  const std::string b = WithServers(kBatchNormConfig, 2, "b.json");
  const std::string alone_a = Alone(a, 2, "alone_a");
  const std::string alone_b = Alone(b, 2, "alone_b");
  std::string coordinator;
  const std::vector<std::string> flags = {"--serve-forever", "--assemble-timeout", "2"};
  auto server0 = Server(0, 2, flags, &coordinator);
  auto server1 = Server(1, 2, flags, &coordinator);
  {
    // Two jobs at once, two workers each.
    std::vector<std::unique_ptr<Process>> workers;
    for (int rank = 0; rank < 2; ++rank) {
      const std::vector<std::string> flags = {"--rank", std::to_string(rank)};
      workers.push_back(Worker(coordinator, a, 1, "a" + std::to_string(rank), flags));
      workers.push_back(Worker(coordinator, b, 2, "b" + std::to_string(rank), flags));
    }
    for (auto& w : workers) EXPECT_EQ(w->Wait(), 0) << w->log();
  }
  // Worker 0 of each job wrote its parameters.
  const std::string a_out = dir_ + "/a0.ckpt", b_out = dir_ + "/b0.ckpt";
  EXPECT_LE(MaxDifference(alone_a, a_out), 1e-6);
  EXPECT_LE(MaxDifference(alone_b, b_out), 1e-6);
  {
    // Job id 1 again, now with the other config: a fresh job.
    auto w0 = Worker(coordinator, b, 1, "again0", {"--rank", "0"});
    auto w1 = Worker(coordinator, b, 1, "again1", {"--rank", "1"});
    EXPECT_EQ(w0->Wait(), 0) << w0->log();
    EXPECT_EQ(w1->Wait(), 0) << w1->log();
  }
  EXPECT_LE(MaxDifference(alone_b, dir_ + "/again0.ckpt"), 1e-6);
  // A job whose second worker never comes is ended on both servers after
  // --assemble-timeout, and its first worker is told why.
  auto lone = Worker(coordinator, a, 5, "lone");
  EXPECT_EQ(lone->Wait(), 1);
  EXPECT_NE(lone->log().find("did not all register within 2s (2/2 servers, 1/2 workers"),
            std::string::npos)
      << lone->log();
  EXPECT_FALSE(server1->WaitFor("job 5: the coordinator").empty()) << server1->log();
  // Still serving (--serve-forever) until told to stop; job 5's error
  // makes the exit status.
  server0->Interrupt();
  server1->Interrupt();
  EXPECT_EQ(server0->Wait(), 1) << server0->log();
  EXPECT_EQ(server1->Wait(), 1) << server1->log();
  const std::string log1 = server1->log();
  EXPECT_NE(log1.find("learned job 2 from server 0"), std::string::npos) << log1;
  EXPECT_EQ(testing::CountStrataProcesses(dir_), 0);
}

// Stanza: the FC worker and the conv workers of a stanza job bring its
// spec; the server learns the job (stanza keys: the trunk's only) from
// whichever says hello first, and the job trains to its end.
TEST_F(LearningServerTest, AStanzaJobIsLearnedAndTrainsToItsEnd) {
  std::string coordinator;
  auto server = Server(0, 1, {}, &coordinator);
  auto fc = Node({kBin + "strata_fc_worker"}, coordinator, kConfig, 1, "fc");
  std::vector<std::unique_ptr<Process>> workers;
  for (int rank = 0; rank < 2; ++rank) {
    workers.push_back(Node({kBin + "strata_conv_worker", "--mode", "stanza"}, coordinator, kConfig,
                           1, "stanza" + std::to_string(rank), {"--rank", std::to_string(rank)}));
  }
  for (auto& w : workers) EXPECT_EQ(w->Wait(), 0) << w->log();
  EXPECT_EQ(fc->Wait(), 0) << fc->log();
  EXPECT_EQ(server->Wait(), 0) << server->log();
  const std::string log = server->log();
  EXPECT_NE(log.find("learned job 1 from the hello of"), std::string::npos) << log;
  EXPECT_NE(log.find("finished job 1: worker clocks [" + std::to_string(kSteps) + " " +
                     std::to_string(kSteps) + "]"),
            std::string::npos)
      << log;
}

TEST_F(LearningServerTest, AHelloItCannotServeIsRefusedByNameAndTheJobItServesTrainsOn) {
  const std::string token = dir_ + "/token";
  std::ofstream(token) << "learning-test-token\n";
  ::chmod(token.c_str(), 0600);
  const std::string wrong_token = dir_ + "/wrong_token";
  std::ofstream(wrong_token) << "another-token\n";
  ::chmod(wrong_token.c_str(), 0600);
  std::string coordinator;
  auto server = Server(0, 1, {"--job-token-file", token}, &coordinator);
  // A stranger without the token starts no job.
  auto stranger = Worker(coordinator, kConfig, 1, "stranger", {"--job-token-file", wrong_token});
  EXPECT_EQ(stranger->Wait(), 1);
  EXPECT_NE(stranger->log().find("does not take the job token this process presents"),
            std::string::npos)
      << stranger->log();
  // A job laid out for two servers does not fit a group of one.
  const std::string two = WithServers(kConfig, 2, "two.json");
  auto misfit = Worker(coordinator, two, 1, "misfit", {"--job-token-file", token});
  EXPECT_EQ(misfit->Wait(), 1);
  EXPECT_NE(misfit->log().find("cluster.servers"), std::string::npos) << misfit->log();
  // The job is learned from its first worker; a third worker with another
  // config under the same id is refused naming the difference.
  auto w0 = Worker(coordinator, kConfig, 1, "w0", {"--job-token-file", token, "--rank", "0"});
  EXPECT_FALSE(server->WaitFor("learned job 1").empty()) << server->log();
  auto other = Worker(coordinator, kBatchNormConfig, 1, "other", {"--job-token-file", token});
  EXPECT_EQ(other->Wait(), 1);
  EXPECT_NE(other->log().find("runs another job config than server 0"), std::string::npos)
      << other->log();
  auto w1 = Worker(coordinator, kConfig, 1, "w1", {"--job-token-file", token, "--rank", "1"});
  EXPECT_EQ(w0->Wait(), 0) << w0->log();
  EXPECT_EQ(w1->Wait(), 0) << w1->log();
  EXPECT_EQ(Parameters(dir_ + "/w0.ckpt").empty(), false);
  // Without --serve-forever the server leaves after the job it served.
  EXPECT_EQ(server->Wait(), 0) << server->log();
  EXPECT_NE(server->log().find("finished job 1"), std::string::npos) << server->log();
}

}  // namespace
}  // namespace strata
