// Partitions and singled-out losses on real clusters (the cuts and losses
// of --inject-faults, core/net/fault_injection.h): BSP jobs whose
// processes stop hearing each other for a while, or for good, or miss the
// same answer several times over. Every run ends with the parameters of the
// same job run undisturbed, or stops with an error that names the peer it
// lost; none hangs past its --timeout, and none leaves a process behind.
//
//   * a two-way cut between a conv worker and a server, shorter than the
//     timeout: resent requests ride it through;
//   * a one-way cut from the FC worker to a conv worker (its activation
//     gradients vanish): the conv worker asks again and is answered again;
//   * a server silent to everyone for a while: ridden through;
//   * a lasting cut, and an FC worker silent for good: the job stops,
//     naming the server or FC worker that did not answer within --timeout;
//   * an MoE stanza job (experts split over two FC workers) whose conv
//     worker loses the answer to one iteration four times in a row: asked
//     for again within the timeout, as a run of bad luck under 1% message
//     faults once made it (chaos seed 8), and the job rides it through.
//
// Cuts are timed from the launch; their starts scale with the test time
// scale so that they fall inside training on a slow (sanitized) build, and
// each test checks that its cut took messages, so a cut that missed the job
// fails rather than passing vacuously.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::InjectedFaultCount;
using testing::kBin;
using testing::RunCommand;

class PartitionClusterTest : public testing::ClusterTest {
 protected:
  // strata_launch of a BSP job in `mode` (ps; stanza with one FC worker;
  // moe: stanza with the MoE model's experts split over two FC workers) on
  // 2 servers and 2 conv workers, every message over sockets (lanes are
  // memory on one host: nothing to cut), then `extra`.
  std::vector<std::string> Launch(const std::string& mode,
                                  const std::vector<std::string>& extra) const {
    std::vector<std::string> argv = {kBin + "strata_launch",
                                     "--config",
                                     mode == "moe" ? testing::kMoeConfig : testing::kConfig,
                                     "--mode",
                                     mode == "ps" ? "ps" : "stanza",
                                     "--servers",
                                     "2",
                                     "--conv-workers",
                                     "2",
                                     "--max-steps",
                                     "200",
                                     "--evaluate=false",
                                     "--progress=false",
                                     "--shared-memory=false",
                                     "--timeout",
                                     std::to_string(mode == "moe"
                                                        ? testing::ScaledSeconds(kMoeTimeoutSeconds)
                                                        : kTimeoutSeconds)};
    if (mode != "ps") argv.insert(argv.end(), {"--fc-workers", mode == "moe" ? "2" : "1"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  // The parameters of the job in `mode` run undisturbed.
  std::string Undisturbed(const std::string& mode) {
    const std::string out = dir_ + "/undisturbed.ckpt";
    const auto [code, log] =
        RunCommand(absl::StrJoin(Launch(mode, {"--parameters-out", out}), " "));
    EXPECT_EQ(code, 0) << log;
    return out;
  }

  // Runs the job in `mode` with the faults `spec`, its parameters going to
  // dir_/out.ckpt (which also marks its processes for
  // CountStrataProcesses); the time it took in took_.
  std::pair<int, std::string> RunFaulty(const std::string& mode, const std::string& spec) {
    const std::vector<std::string> flags = {"--inject-faults", "'" + spec + "'", "--parameters-out",
                                            dir_ + "/out.ckpt"};
    const absl::Time start = absl::Now();
    auto result = RunCommand(absl::StrJoin(Launch(mode, flags), " ") + " 2>&1");
    took_ = absl::Now() - start;
    return result;
  }

  // `ms` milliseconds scaled by the test time scale, as a duration in a
  // cut ("1500ms").
  static std::string Ms(int ms) {
    return absl::StrCat(static_cast<int>(ms * testing::TimeScale()), "ms");
  }

  static constexpr int kTimeoutSeconds = 5;
  // Room for five sends of the activations whose answer is lost four times
  // when back-off stops at a quarter of the timeout (core/net/round_trip.h),
  // and too little for sends whose back-off doubles on (0.2 s, 1 s, 4.2 s,
  // then 14.2 s after the first). Scaled with the test time scale: a
  // sanitized build answers several times slower.
  static constexpr int kMoeTimeoutSeconds = 8;
  absl::Duration took_;
};

TEST_F(PartitionClusterTest, ATwoWayCutShorterThanTheTimeoutIsRiddenThrough) {
  const std::string undisturbed = Undisturbed("ps");
  const auto [code, log] = RunFaulty("ps", absl::StrCat("cut=conv0:server1@", Ms(1500), "+2s"));
  ASSERT_EQ(code, 0) << log;
  EXPECT_GT(InjectedFaultCount(log, "cut "), 0) << log;
  EXPECT_EQ(log.find("restarting the job"), std::string::npos) << log;
  EXPECT_LE(MaxDifference(undisturbed, dir_ + "/out.ckpt"), 1e-6f) << log;
}

TEST_F(PartitionClusterTest, AOneWayCutOfActivationGradientsIsRiddenThrough) {
  const std::string undisturbed = Undisturbed("stanza");
  const auto [code, log] = RunFaulty("stanza", absl::StrCat("cut=fc0>conv1@", Ms(1500), "+2s"));
  ASSERT_EQ(code, 0) << log;
  // Only conv1 hears from fc0, so only conv1's count can move.
  EXPECT_GT(InjectedFaultCount(log, "cut "), 0) << log;
  EXPECT_NE(log.find("[worker 1] sent activations to fc worker 0 again"), std::string::npos) << log;
  EXPECT_LE(MaxDifference(undisturbed, dir_ + "/out.ckpt"), 1e-6f) << log;
}

TEST_F(PartitionClusterTest, AServerSilentForAWhileIsRiddenThrough) {
  const std::string undisturbed = Undisturbed("ps");
  const auto [code, log] = RunFaulty("ps", absl::StrCat("silence=server1@", Ms(1500), "+2s"));
  ASSERT_EQ(code, 0) << log;
  EXPECT_GT(InjectedFaultCount(log, "cut "), 0) << log;
  EXPECT_LE(MaxDifference(undisturbed, dir_ + "/out.ckpt"), 1e-6f) << log;
}

TEST_F(PartitionClusterTest, ALastingCutStopsTheJobNamingTheServerWithinTheTimeout) {
  const auto [code, log] = RunFaulty("ps", absl::StrCat("cut=conv0:server1@", Ms(1500)));
  EXPECT_EQ(code, 1) << log;
  EXPECT_NE(log.find("strata_launch: error: "), std::string::npos) << log;
  EXPECT_NE(log.find(absl::StrCat("from server 1 (")), std::string::npos) << log;
  EXPECT_NE(log.find(absl::StrCat("within ", kTimeoutSeconds, "s")), std::string::npos) << log;
  // Not a hang: the launch, the cut's start and one timeout, with room for
  // a loaded machine; a job that waited for the cut to heal would not end.
  EXPECT_LT(took_, absl::Seconds(testing::ScaledSeconds(6 * kTimeoutSeconds))) << log;
  EXPECT_EQ(testing::CountStrataProcesses(dir_), 0);
}

TEST_F(PartitionClusterTest, AnFcWorkerSilentForGoodStopsTheJobNamingIt) {
  const auto [code, log] = RunFaulty("stanza", absl::StrCat("silence=fc0@", Ms(1500)));
  EXPECT_EQ(code, 1) << log;
  EXPECT_NE(log.find("strata_launch: error: "), std::string::npos) << log;
  EXPECT_NE(log.find("no activation gradients from fc worker 0 ("), std::string::npos) << log;
  EXPECT_NE(log.find(absl::StrCat("within ", kTimeoutSeconds, "s")), std::string::npos) << log;
  EXPECT_LT(took_, absl::Seconds(testing::ScaledSeconds(6 * kTimeoutSeconds))) << log;
  EXPECT_EQ(testing::CountStrataProcesses(dir_), 0);
}

TEST_F(PartitionClusterTest, AnAnswerLostFourTimesInARowIsAskedForAgainWithinTheTimeout) {
  const std::string undisturbed = Undisturbed("moe");
  // conv1's activations go to fc1; fc1's answers to iteration 90 (the
  // first, and the ones to three resends) vanish on their way to conv1.
  const auto [code, log] = RunFaulty("moe", "lose=fc1>conv1:activation-grads@90x4");
  ASSERT_EQ(code, 0) << log;
  EXPECT_EQ(InjectedFaultCount(log, "lost "), 4) << log;
  EXPECT_NE(log.find("[worker 1] sent activations to fc worker 1 again"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("restarting the job"), std::string::npos) << log;
  EXPECT_LE(MaxDifference(undisturbed, dir_ + "/out.ckpt"), 1e-6f) << log;
}

}  // namespace
}  // namespace strata
