// Whom a failed run lost, and how many conv workers carry on without them
// (tools/launch/lost_conv_worker.h); the record the coordinator keeps of
// the nodes it declares dead (core/train/lost_nodes.h).
#include "tools/launch/lost_conv_worker.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace strata {
namespace {

TEST(LostConvWorkerTest, PoliciesParseAndAnUnknownOneNamesTheChoices) {
  EXPECT_EQ(*ParseLostConvWorkerPolicy("restart"), LostConvWorkerPolicy::kRestart);
  EXPECT_EQ(*ParseLostConvWorkerPolicy("continue"), LostConvWorkerPolicy::kContinue);
  EXPECT_EQ(*ParseLostConvWorkerPolicy("stop"), LostConvWorkerPolicy::kStop);
  EXPECT_EQ(ParseLostConvWorkerPolicy("shrink").status().message(),
            "--lost-conv-worker shrink: use restart, continue or stop");
}

TEST(LostConvWorkerTest, AKilledConvWorkerAndTheCoordinatorsDeadOnesAreLost) {
  // Killed first: lost. Failed with an error of its own: not lost.
  EXPECT_EQ(LostConvWorkers({"conv_worker", 2, true}, {}), std::vector<int>({2}));
  EXPECT_TRUE(LostConvWorkers({"conv_worker", 2, false}, {}).empty());
  EXPECT_TRUE(LostConvWorkers({"server", 1, true}, {}).empty());
  // A survivor that timed out failed first; the coordinator says whom the
  // job lost (its servers and FC workers are not conv workers).
  const std::vector<LostNode> recorded = {{1, "conv_worker", 3, "silent"},
                                          {1, "server", 1, "silent"},
                                          {1, "conv_worker", 0, "silent"}};
  EXPECT_EQ(LostConvWorkers({"conv_worker", 1, false}, recorded), std::vector<int>({0, 3}));
  EXPECT_EQ(LostConvWorkers({"conv_worker", 3, true}, recorded), std::vector<int>({0, 3}));
}

TEST(LostConvWorkerTest, TheCauseOfAFailureIsTheFirstKilledElseTheFirstSeen) {
  // A killed FC worker's conv workers exit with errors, and were seen first.
  const std::vector<FailedProcess> seen = {{"conv_worker", 0, false},
                                           {"conv_worker", 1, false},
                                           {"fc_worker", 0, true},
                                           {"server", 0, true}};
  const FailedProcess& cause = seen[CauseOfFailure(seen)];
  EXPECT_EQ(cause.role, "fc_worker");
  EXPECT_EQ(cause.rank, 0);
  EXPECT_TRUE(cause.killed);
  // No one killed: the first seen.
  const std::vector<FailedProcess> none_killed = {{"server", 1, false}, {"conv_worker", 0, false}};
  const FailedProcess& first = none_killed[CauseOfFailure(none_killed)];
  EXPECT_EQ(first.role, "server");
  EXPECT_EQ(first.rank, 1);
  EXPECT_FALSE(first.killed);
}

TEST(LostConvWorkerTest, TheOthersCarryOnInTheLargestNumberThatDividesEveryBatch) {
  EXPECT_EQ(*ConvWorkersWithout(2, 1, {64}, 0), 1);
  EXPECT_EQ(*ConvWorkersWithout(4, 1, {64}, 0), 2);      // 3 does not divide 64
  EXPECT_EQ(*ConvWorkersWithout(4, 1, {96}, 1), 3);
  EXPECT_EQ(*ConvWorkersWithout(6, 1, {60, 40}, 0), 5);  // every job's batch
  EXPECT_EQ(*ConvWorkersWithout(6, 2, {60, 48}, 0), 4);
  const absl::StatusOr<int> none = ConvWorkersWithout(4, 1, {64}, 3);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(none.status().message(),
            "without 1 of its 4 conv workers the job cannot go on: no number of them from 3 to "
            "3 divides the global batch (64)");
  EXPECT_EQ(ConvWorkersWithout(3, 2, {64}, 2).status().message(),
            "without 2 of its 3 conv workers the job cannot go on: 1 cannot feed its 2 FC "
            "workers (one each at least)");
  EXPECT_EQ(ConvWorkersWithout(1, 1, {64}, 0).status().message(),
            "without 1 of its 1 conv workers the job cannot go on: no conv worker is left");
}

TEST(LostNodesTest, EntriesAddUpAndAFileOfAnotherKindIsRefusedByName) {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("strata_lost_nodes_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/lost.json";
  EXPECT_TRUE(ReadLostNodes(path)->empty());  // none yet
  ASSERT_TRUE(RecordLostNode(path, {1, "conv_worker", 2, "stopped sending heartbeats"}).ok());
  ASSERT_TRUE(RecordLostNode(path, {7, "fc_worker", 0, "stopped sending heartbeats"}).ok());
  const absl::StatusOr<std::vector<LostNode>> nodes = ReadLostNodes(path);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].job, 1u);
  EXPECT_EQ((*nodes)[0].role, "conv_worker");
  EXPECT_EQ((*nodes)[0].rank, 2);
  EXPECT_EQ((*nodes)[1].job, 7u);
  EXPECT_EQ((*nodes)[1].role, "fc_worker");
  EXPECT_EQ((*nodes)[1].why, "stopped sending heartbeats");
  std::ofstream(path) << R"({"lost": [{"job": 1, "role": "conv_worker"}]})";
  EXPECT_EQ(ReadLostNodes(path).status().message(),
            path + ": not a record of lost nodes (entry 0 lacks job, role, rank or why)");
  std::ofstream(path) << "[1, 2]";
  EXPECT_EQ(ReadLostNodes(path).status().code(), absl::StatusCode::kDataLoss);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strata
