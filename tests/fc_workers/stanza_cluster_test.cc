// Stanza mode end to end with real processes: the same math as single and
// ps, bad activations from a raw ZeroMQ client, and a dead FC worker.
#include <gtest/gtest.h>
#include <unistd.h>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/net/admission.h"
#include "core/net/stanza_wire.h"
#include "core/net/transport.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::InjectedFaultCount;
using testing::kBin;
using testing::kConfig;
using testing::Process;
using testing::RunCommand;

class StanzaTest : public testing::ClusterTest {
 protected:
  // Starts a server, one FC worker and two conv workers by hand.
  void StartCluster(int max_steps, double timeout) {
    server_ = std::make_unique<Process>(
        std::vector<std::string>{
            kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0", "--config",
            kConfig, "--mode", "stanza", "--servers", "1", "--conv-workers", "2", "--fc-workers",
            "1", "--max-steps", std::to_string(max_steps), "--ready-file", dir_ + "/server.ready"},
        dir_ + "/server.log");
    const std::string coordinator = server_->WaitForReady(dir_ + "/server.ready");
    ASSERT_FALSE(coordinator.empty()) << server_->log();
    fc_ = std::make_unique<Process>(
        std::vector<std::string>{kBin + "strata_fc_worker", "--rank", "0", "--coordinator",
                                 coordinator, "--config", kConfig, "--threads", "1", "--max-steps",
                                 std::to_string(max_steps), "--evaluate=false", "--progress=false",
                                 "--timeout", std::to_string(timeout), "--ready-file",
                                 dir_ + "/fc.ready"},
        dir_ + "/fc.log");
    for (int w = 0; w < 2; ++w) {
      conv_.push_back(std::make_unique<Process>(
          std::vector<std::string>{kBin + "strata_conv_worker", "--mode", "stanza", "--coordinator",
                                   coordinator, "--config", kConfig, "--rank", std::to_string(w),
                                   "--threads", "1", "--max-steps", std::to_string(max_steps),
                                   "--timeout", std::to_string(timeout)},
          dir_ + "/conv" + std::to_string(w) + ".log"));
    }
    fc_address_ = fc_->WaitForReady(dir_ + "/fc.ready");
    ASSERT_FALSE(fc_address_.empty()) << fc_->log();
  }

  void ExpectModesAgreeWithOneConvWorker(const std::string& base,
                                         const std::vector<std::string>& statistics,
                                         float tolerance);

  std::unique_ptr<Process> server_, fc_;
  std::vector<std::unique_ptr<Process>> conv_;
  std::string fc_address_;
};

TEST_F(StanzaTest, EqualsSingleAndPsWithTheSameGlobalBatch) {
  const std::string config = PlainSgdConfig();
  const std::string common =
      " --batch-size 64 --max-steps 20 --evaluate=false --progress=false --parameters-out ";
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"single", "--mode single"},
      {"ps", "--mode ps --servers 1 --conv-workers 2"},
      {"stanza", "--mode stanza --servers 1 --conv-workers 2 --fc-workers 1"},
      {"stanza2", "--mode stanza --servers 2 --conv-workers 2 --fc-workers 2"}};
  for (const auto& [name, flags] : runs) {
    auto [code, out] = RunCommand(kBin + "strata_launch --config " + config + " " + flags + common +
                                  dir_ + "/" + name + ".ckpt");
    ASSERT_EQ(code, 0) << out;
  }
  EXPECT_LE(MaxDifference(dir_ + "/single.ckpt", dir_ + "/stanza.ckpt"), 1e-4f);
  EXPECT_LE(MaxDifference(dir_ + "/ps.ckpt", dir_ + "/stanza.ckpt"), 1e-4f);
  // Two FC workers reduce the head through the servers: still the same math.
  EXPECT_LE(MaxDifference(dir_ + "/single.ckpt", dir_ + "/stanza2.ckpt"), 1e-4f);
}

// A bad network under every process of a stanza job (as the ps test in
// tests/server/ps_cluster_test.cc does): lost activations and gradients
// are sent again and answered again, lost pushes and pulls too; the job
// finishes with the undisturbed run's parameters.
TEST_F(StanzaTest, ABadNetworkLosesNoUpdateAndAppliesNoneTwice) {
  const std::string config = PlainSgdConfig();
  auto run = [&](const std::string& flags, const std::string& out) {
    return RunCommand(kBin + "strata_launch --config " + config +
                      " --mode stanza --servers 1 --conv-workers 2 --fc-workers 1 "
                      "--shared-memory=false --batch-size 64 --max-steps 20 --timeout 30 "
                      "--evaluate=false --progress=false " +
                      flags + " --parameters-out " + dir_ + "/" + out);
  };
  auto [clean_code, clean_out] = run("", "clean.ckpt");
  ASSERT_EQ(clean_code, 0) << clean_out;
  auto [code, out] = run(
      "--inject-faults drop=0.02,duplicate=0.02,delay=0.02,reorder=0.02,delay_ms=30,seed=3",
      "faulty.ckpt");
  ASSERT_EQ(code, 0) << out;
  EXPECT_LE(MaxDifference(dir_ + "/clean.ckpt", dir_ + "/faulty.ckpt"), 1e-6f);
  EXPECT_GT(InjectedFaultCount(out, "dropped "), 0) << out;
  EXPECT_GT(InjectedFaultCount(out, "duplicated "), 0) << out;
}

// BatchNorm's running statistics are state, not parameters: conv workers
// push them, the servers keep their mean, and whoever writes the model pulls
// them. With one conv worker all three modes hold the same parameters and
// the same statistics after 20 plain-SGD steps of `base`.
void StanzaTest::ExpectModesAgreeWithOneConvWorker(const std::string& base,
                                                   const std::vector<std::string>& statistics,
                                                   float tolerance) {
  const std::string config = PlainSgdConfig(base);
  const std::string common =
      " --batch-size 64 --max-steps 20 --evaluate=false --progress=false --parameters-out ";
  for (const auto& [name, flags] : std::vector<std::pair<std::string, std::string>>{
           {"single", "--mode single"},
           {"ps", "--mode ps --servers 1 --conv-workers 1"},
           {"stanza", "--mode stanza --servers 1 --conv-workers 1 --fc-workers 1"}}) {
    auto [code, out] = RunCommand(kBin + "strata_launch --config " + config + " " + flags + common +
                                  dir_ + "/" + name + ".ckpt");
    ASSERT_EQ(code, 0) << out;
  }
  const auto single = Parameters(dir_ + "/single.ckpt");
  for (const std::string& name : statistics) {
    ASSERT_EQ(single.count(name), 1u) << name;
    // 20 steps moved the statistics away from their initial 0 and 1.
    const float initial = name.find("var") != std::string::npos ? 1.0f : 0.0f;
    EXPECT_GT(std::fabs(single.at(name)[0] - initial), 1e-3f) << name;
  }
  EXPECT_LE(MaxDifference(dir_ + "/single.ckpt", dir_ + "/ps.ckpt"), tolerance);
  EXPECT_LE(MaxDifference(dir_ + "/single.ckpt", dir_ + "/stanza.ckpt"), tolerance);
}

TEST_F(StanzaTest, BatchNormStatisticsMatchSingleAndPsWithOneConvWorker) {
  ExpectModesAgreeWithOneConvWorker(testing::kBatchNormConfig,
                                    {"bn1.running_mean", "bn1.running_var", "bn2.running_mean"},
                                    1e-5f);
}

// The same for ResNet-20: statistics inside residual blocks, on the body and
// on a projection shortcut, travel like any other state.
TEST_F(StanzaTest, AResidualBatchNormModelMatchesSingleAndPsWithOneConvWorker) {
  ExpectModesAgreeWithOneConvWorker(
      std::string(STRATA_SOURCE_DIR) + "/configs/resnet20_fmnist.json",
      {"bn1.running_mean", "layer1.0.bn2.running_var", "layer2.0.downsample.1.running_mean",
       "layer3.2.bn1.running_var"},
      1e-4f);
}

// Sends one ACTIVATIONS message (after a HELLO as conv worker `sender` of
// the default job run for 300 steps, when `hello`) and returns the error
// text of the refusal.
std::string SendActivations(const std::string& address, int sender, int64_t iteration,
                            const std::vector<int64_t>& shape, size_t act_bytes, size_t label_bytes,
                            bool hello = true) {
  zmq::context_t context(1);
  auto socket = Socket::Connect(context, SocketKind::kDealer, address);
  if (!socket.ok()) return "<no socket>";
  if (hello) {
    const absl::Status said =
        Introduce(**socket, JobCredentials{1, "", testing::DefaultJobIdentity(300), "", ""},
                  wire::Role::CONV_WORKER, sender, "fc",
                  absl::Seconds(testing::ScaledSeconds(10)))
            .status();
    if (!said.ok()) return std::string(said.message());
  }
  OutgoingMessage m(wire::stanza::Kind::ACTIVATIONS);
  auto h = m.header();
  h.setJobId(1);
  h.setIteration(iteration);
  h.setSenderRole(wire::Role::CONV_WORKER);
  h.setSenderRank(sender);
  h.setRequestId(99);
  auto s = BodyOf<wire::stanza::Body>(h).initShape(static_cast<unsigned>(shape.size()));
  for (size_t i = 0; i < shape.size(); ++i) s.set(static_cast<unsigned>(i), shape[i]);
  m.AddFrame(std::string(act_bytes, '\0'));
  m.AddFrame(std::string(label_bytes, '\0'));
  if (!(*socket)->Send(m).ok()) return "<send failed>";
  // A slow answer to our hello made Introduce say it again, and every hello
  // is answered: a second HELLO_ACK may still be on its way.
  while (true) {
    auto raw = (*socket)->Receive(absl::Seconds(testing::ScaledSeconds(10)));
    if (!raw.ok()) return "<no reply>";
    auto reply = Decode(*std::move(raw), WireLimits());
    if (reply.ok() && TypeOf(reply->header()) == wire::Kind::HELLO_ACK) continue;
    if (!reply.ok() || TypeOf(reply->header()) != wire::Kind::ERROR) return "<not an error>";
    return reply->header().getErrorMessage().cStr();
  }
}

TEST_F(StanzaTest, BadActivationsGetErrorsAndTheOthersKeepTraining) {
  StartCluster(/*max_steps=*/300, /*timeout=*/60);  // long enough to be attacked mid-run
  ASSERT_FALSE(fc_address_.empty());
  const size_t good = 32 * 7 * 7 * 64 * 4;
  const std::string narrow = SendActivations(fc_address_, 0, 0, {32, 7, 7, 32}, good / 2, 128);
  EXPECT_EQ(narrow.find("activations of shape [32, 7, 7, 32], expected [32, 7, 7, 64]"), 0u)
      << narrow;
  const std::string short_batch =
      SendActivations(fc_address_, 1, 0, {16, 7, 7, 64}, good / 2, 64);
  EXPECT_EQ(short_batch.find("activations of shape [16, 7, 7, 64], expected [32, 7, 7, 64]"), 0u)
      << short_batch;
  // A conv worker this FC worker does not serve, and a connection that
  // never said hello.
  EXPECT_EQ(SendActivations(fc_address_, 5, 0, {32, 7, 7, 64}, good, 128),
            "fc refused us: worker 5 is not a conv worker served by fc worker 0");
  EXPECT_EQ(SendActivations(fc_address_, 0, 0, {32, 7, 7, 64}, good, 128, /*hello=*/false),
            "activations from a connection that never said hello to fc worker 0 (every "
            "connection registers first)");
  EXPECT_EQ(SendActivations(fc_address_, 0, 0, {32, 7, 7, 64}, good, 100),
            "activations of shape [32, 7, 7, 64] in fp32 need 2 frames of 401408 and 128 bytes "
            "(activations, int32 labels)");
  for (auto& c : conv_) EXPECT_EQ(c->Wait(), 0) << c->log();
  EXPECT_EQ(fc_->Wait(), 0) << fc_->log();
  EXPECT_EQ(server_->Wait(), 0) << server_->log();
  EXPECT_NE(fc_->log().find("finished (5 requests refused)"), std::string::npos) << fc_->log();
}

TEST_F(StanzaTest, ADeadFcWorkerStopsItsConvWorkersWithAClearError) {
  StartCluster(/*max_steps=*/100000, /*timeout=*/3);
  ASSERT_FALSE(fc_address_.empty());
  testing::SleepScaled(absl::Seconds(1));  // training is under way
  fc_->Kill9();
  const auto start = std::chrono::steady_clock::now();
  // Each conv worker either saw the connection close in its own exchange,
  // or waited on a pull that its peer's LEAVE failed with that cause; none
  // waits out the timeout ("within 3s").
  for (auto& c : conv_) {
    EXPECT_EQ(c->Wait(), 1);
    EXPECT_NE(c->log().find("no activation gradients from fc worker 0 (" + fc_address_ +
                            ") for iteration "),
              std::string::npos)
        << c->log();
    EXPECT_NE(c->log().find(fc_address_ + " closed the connection"), std::string::npos) << c->log();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
}

TEST_F(StanzaTest, TheLauncherStopsEverythingWhenAnFcWorkerDies) {
  const std::string config = dir_ + "/fc_dies.json";
  std::ofstream(config) << testing::ReadFile(kConfig);
  Process launcher(
      {kBin + "strata_launch", "--config", config, "--mode", "stanza", "--servers", "1",
       "--conv-workers", "2", "--fc-workers", "1", "--epochs", "5", "--timeout", "3"},
      dir_ + "/launch.log");
  ASSERT_FALSE(launcher.WaitFor("step 100/").empty()) << launcher.log();
  // Kill the FC worker (the process of this run whose command line names strata_fc_worker).
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string cmdline = testing::ReadFile(entry.path().string() + "/cmdline");
    if (cmdline.find(config) != std::string::npos &&
        cmdline.find("strata_fc_worker") != std::string::npos) {
      kill(std::stoi(entry.path().filename().string()), SIGKILL);
    }
  }
  EXPECT_EQ(launcher.Wait(), 1);
  EXPECT_NE(launcher.log().find("strata_launch: error: fc worker 0 was killed by signal 9"),
            std::string::npos)
      << launcher.log();
  EXPECT_EQ(testing::CountStrataProcesses(config), 0);
}

}  // namespace
}  // namespace strata
