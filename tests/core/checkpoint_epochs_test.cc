// Coordinated checkpoint epochs: the directory layout, what makes an epoch
// complete, which one a restore takes, what pruning keeps, and the writer
// thread.
#include "core/train/checkpoint_epochs.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace strata {
namespace {

namespace fs = std::filesystem;

class CheckpointEpochsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/strata_epochs_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A part holding one tensor filled with `value`.
  void WritePart(int64_t iteration, const std::string& part, float value) {
    Checkpoint c;
    c.metadata_json = "{\"iteration\": " + std::to_string(iteration) + "}";
    Tensor t = Tensor::Zeros({4});
    for (int i = 0; i < 4; ++i) t.data()[i] = value;
    c.tensors.push_back({"w", t});
    fs::create_directories(EpochDirectory(dir_, iteration));
    ASSERT_TRUE(WriteCheckpoint(EpochPartPath(dir_, iteration, part), c).ok());
  }

  std::string dir_;
};

TEST_F(CheckpointEpochsTest, PathsNameTheIterationAndThePart) {
  EXPECT_EQ(CheckpointPartName("server", 1), "server-1");
  EXPECT_EQ(EpochDirectory("/ck", 40), "/ck/epoch-000000000040");
  EXPECT_EQ(EpochPartPath("/ck", 40, "fc_worker-0"), "/ck/epoch-000000000040/fc_worker-0.ckpt");
}

TEST_F(CheckpointEpochsTest, AnEpochCountsOnlyOnceItsManifestIsWritten) {
  EXPECT_EQ(ChooseRestoreEpoch(dir_).status().code(), absl::StatusCode::kNotFound);  // no run
  EXPECT_EQ(BeginGeneration(dir_, /*restore=*/true).status().message(),
            dir_ + " holds no checkpoints to restore (no RUN.json)");
  const absl::StatusOr<RunStamp> stamp = BeginGeneration(dir_, /*restore=*/false);
  ASSERT_TRUE(stamp.ok()) << stamp.status();
  EXPECT_EQ(stamp->generation, 1);
  EXPECT_EQ(stamp->run.size(), 16u);
  EXPECT_EQ(ChooseRestoreEpoch(dir_).status().message(),
            "no checkpoint epoch of run " + stamp->run + " in " + dir_ +
                " can be restored (none is complete)");
  WritePart(10, "server-0", 1);
  WritePart(10, "server-1", 2);
  EXPECT_FALSE(ChooseRestoreEpoch(dir_).ok());  // parts, no manifest
  absl::StatusOr<CheckpointEpoch> done = CompleteEpoch(dir_, 10, *stamp);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->part_bytes.size(), 2u);
  absl::StatusOr<CheckpointEpoch> chosen = ChooseRestoreEpoch(dir_);
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->iteration, 10);
  EXPECT_EQ(chosen->stamp, *stamp);
  EXPECT_EQ(chosen->part_bytes.count("server-1"), 1u);
  EXPECT_EQ(chosen->PartPath(dir_, "server-1"), EpochPartPath(dir_, 10, "server-1"));
  // A newer epoch still being written does not replace it.
  WritePart(20, "server-0", 3);
  EXPECT_EQ(ChooseRestoreEpoch(dir_)->iteration, 10);
  EXPECT_EQ(CompleteEpoch(dir_, 30, *stamp).status().code(), absl::StatusCode::kNotFound);
}

// A damaged file is never a different model: an epoch whose part is torn
// or fails its CRC is passed over, naming the part and why, for the newest
// one that verifies; when none does, the error names each.
TEST_F(CheckpointEpochsTest, AnEpochWithADamagedPartIsPassedOverForTheNewestThatVerifies) {
  const RunStamp stamp = *BeginGeneration(dir_, false);
  for (int64_t it : {10, 20, 30}) {
    WritePart(it, "server-0", static_cast<float>(it));
    WritePart(it, "server-1", static_cast<float>(it));
    ASSERT_TRUE(CompleteEpoch(dir_, it, stamp).ok());
  }
  // Epoch 30: one flipped byte in a part (its size unchanged).
  const std::string flipped = EpochPartPath(dir_, 30, "server-1");
  {
    std::fstream f(flipped, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x5a');
  }
  absl::StatusOr<CheckpointEpoch> chosen = ChooseRestoreEpoch(dir_);
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->iteration, 20);
  // Epoch 20 torn after its manifest (a disk that lost a write).
  fs::resize_file(EpochPartPath(dir_, 20, "server-0"), 10);
  EXPECT_EQ(ChooseRestoreEpoch(dir_)->iteration, 10);
  // And a manifest that is not JSON: nothing is left.
  std::ofstream(EpochDirectory(dir_, 10) + "/MANIFEST.json") << "{not json";
  EXPECT_EQ(ChooseRestoreEpoch(dir_).status().message(),
            "no checkpoint epoch of run " + stamp.run + " in " + dir_ + " can be restored: epoch 30: " +
                flipped + ": checkpoint CRC mismatch (file corrupt); epoch 20: " +
                EpochPartPath(dir_, 20, "server-0") + " has 10 bytes, the manifest says " +
                std::to_string(fs::file_size(EpochPartPath(dir_, 20, "server-1"))) +
                "; epoch 10: " + EpochDirectory(dir_, 10) +
                "/MANIFEST.json is not a manifest of iteration 10");
}

// Every start of a job's coordinator begins a generation; one that a newer
// start took the directory from writes no manifest and prunes nothing, and
// another run's epochs are neither restored nor pruned.
TEST_F(CheckpointEpochsTest, AProcessOfAnOlderGenerationWritesNoManifestAndPrunesNothing) {
  const RunStamp first = *BeginGeneration(dir_, false);
  WritePart(10, "server-0", 1);
  ASSERT_TRUE(CompleteEpoch(dir_, 10, first).ok());
  const RunStamp second = *BeginGeneration(dir_, /*restore=*/true);
  EXPECT_EQ(second.run, first.run);
  EXPECT_EQ(second.generation, 2);
  EXPECT_EQ(CheckGeneration(dir_, second).code(), absl::StatusCode::kOk);
  WritePart(20, "server-0", 2);
  const absl::Status stale = CompleteEpoch(dir_, 20, first).status();
  EXPECT_EQ(stale.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(stale.message(), dir_ + " belongs to " + DescribeStamp(second) +
                                 " now, not to this process's " + DescribeStamp(first) +
                                 " (a newer start of the job took it over)");
  EXPECT_FALSE(fs::exists(EpochDirectory(dir_, 20) + "/MANIFEST.json"));
  EXPECT_EQ(PruneEpochs(dir_, 1, first).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(CompleteEpoch(dir_, 20, second).ok());
  EXPECT_EQ(ChooseRestoreEpoch(dir_)->iteration, 20);

  // A fresh start is another run: the old run's epochs stay where they are,
  // but are not this run's to restore or to prune.
  const RunStamp fresh = *BeginGeneration(dir_, /*restore=*/false);
  EXPECT_NE(fresh.run, first.run);
  EXPECT_EQ(fresh.generation, 1);
  EXPECT_FALSE(ChooseRestoreEpoch(dir_).ok());
  WritePart(5, "server-0", 3);
  ASSERT_TRUE(CompleteEpoch(dir_, 5, fresh).ok());
  EXPECT_EQ(*PruneEpochs(dir_, 1, fresh), 0);
  EXPECT_TRUE(fs::exists(EpochDirectory(dir_, 10)));
  EXPECT_EQ(ChooseRestoreEpoch(dir_)->iteration, 5);
}

TEST_F(CheckpointEpochsTest, PruningKeepsTheNewestCompleteEpochsAndAnyNewerOneBeingWritten) {
  const RunStamp stamp = *BeginGeneration(dir_, false);
  for (int64_t it : {10, 20, 30, 40}) {
    WritePart(it, "server-0", static_cast<float>(it));
    ASSERT_TRUE(CompleteEpoch(dir_, it, stamp).ok());
  }
  WritePart(25, "server-0", 0);  // abandoned: older than the newest complete
  WritePart(50, "server-0", 0);  // being written
  EXPECT_EQ(*PruneEpochs(dir_, 2, stamp), 3);  // 10, 20 and 25
  EXPECT_FALSE(fs::exists(EpochDirectory(dir_, 10)));
  EXPECT_FALSE(fs::exists(EpochDirectory(dir_, 20)));
  EXPECT_FALSE(fs::exists(EpochDirectory(dir_, 25)));
  EXPECT_TRUE(fs::exists(EpochDirectory(dir_, 30)));
  EXPECT_TRUE(fs::exists(EpochDirectory(dir_, 40)));
  EXPECT_TRUE(fs::exists(EpochDirectory(dir_, 50)));
  EXPECT_EQ(*PruneEpochs(dir_, 2, stamp), 0);
}

TEST_F(CheckpointEpochsTest, TheWriterWritesInOrderOffTheCallersThreadAndReportsTheNewest) {
  CheckpointWriter writer;
  EXPECT_EQ(writer.last_written(), -1);
  for (int64_t it : {5, 10}) {
    Checkpoint c;
    Tensor t = Tensor::Zeros({1000});
    t.data()[0] = static_cast<float>(it);
    c.tensors.push_back({"w", t});
    writer.Write(EpochPartPath(dir_, it, "server-0"), it, std::move(c));
  }
  writer.Flush();
  EXPECT_EQ(writer.last_written(), 10);
  EXPECT_TRUE(writer.first_error().ok());
  absl::StatusOr<Checkpoint> read = ReadCheckpoint(EpochPartPath(dir_, 5, "server-0"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->tensors[0].value.data()[0], 5.0f);
  // A path that cannot be written: the error is kept, the newest stays.
  writer.Write("/proc/strata_cannot_write/x.ckpt", 15, Checkpoint());
  writer.Flush();
  EXPECT_EQ(writer.last_written(), 10);
  EXPECT_FALSE(writer.first_error().ok());
  // ... and handed to its owner to report, once.
  const std::vector<std::pair<int64_t, absl::Status>> failures = writer.TakeFailures();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].first, 15);
  EXPECT_NE(failures[0].second.message().find("/proc/strata_cannot_write/x.ckpt"),
            std::string::npos)
      << failures[0].second;
  EXPECT_TRUE(writer.TakeFailures().empty());
}

}  // namespace
}  // namespace strata
