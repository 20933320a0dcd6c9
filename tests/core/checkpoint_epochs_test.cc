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
  EXPECT_FALSE(NewestCompleteEpoch(dir_).has_value());
  EXPECT_FALSE(NewestCompleteEpoch(dir_ + "/missing").has_value());
  WritePart(10, "server-0", 1);
  WritePart(10, "server-1", 2);
  EXPECT_FALSE(NewestCompleteEpoch(dir_).has_value());  // parts, no manifest
  absl::StatusOr<CheckpointEpoch> done = CompleteEpoch(dir_, 10);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->part_bytes.size(), 2u);
  std::optional<CheckpointEpoch> newest = NewestCompleteEpoch(dir_);
  ASSERT_TRUE(newest.has_value());
  EXPECT_EQ(newest->iteration, 10);
  EXPECT_EQ(newest->part_bytes.count("server-1"), 1u);
  EXPECT_EQ(newest->PartPath(dir_, "server-1"), EpochPartPath(dir_, 10, "server-1"));
  // A newer epoch still being written does not replace it.
  WritePart(20, "server-0", 3);
  EXPECT_EQ(NewestCompleteEpoch(dir_)->iteration, 10);
  EXPECT_EQ(CompleteEpoch(dir_, 30).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(CheckpointEpochsTest, AnEpochWhosePartChangedSizeIsSkippedForTheOneBefore) {
  WritePart(10, "server-0", 1);
  ASSERT_TRUE(CompleteEpoch(dir_, 10).ok());
  WritePart(20, "server-0", 2);
  ASSERT_TRUE(CompleteEpoch(dir_, 20).ok());
  // Epoch 20's part torn after its manifest (a disk that lost a write).
  fs::resize_file(EpochPartPath(dir_, 20, "server-0"), 10);
  EXPECT_EQ(NewestCompleteEpoch(dir_)->iteration, 10);
  // And a manifest that is not JSON.
  std::ofstream(EpochDirectory(dir_, 10) + "/MANIFEST.json") << "{not json";
  EXPECT_FALSE(NewestCompleteEpoch(dir_).has_value());
}

TEST_F(CheckpointEpochsTest, PruningKeepsTheNewestCompleteEpochsAndAnyNewerOneBeingWritten) {
  for (int64_t it : {10, 20, 30, 40}) {
    WritePart(it, "server-0", static_cast<float>(it));
    ASSERT_TRUE(CompleteEpoch(dir_, it).ok());
  }
  WritePart(25, "server-0", 0);  // abandoned: older than the newest complete
  WritePart(50, "server-0", 0);  // being written
  EXPECT_EQ(PruneEpochs(dir_, 2), 3);  // 10, 20 and 25
  EXPECT_FALSE(fs::exists(EpochDirectory(dir_, 10)));
  EXPECT_FALSE(fs::exists(EpochDirectory(dir_, 20)));
  EXPECT_FALSE(fs::exists(EpochDirectory(dir_, 25)));
  EXPECT_TRUE(fs::exists(EpochDirectory(dir_, 30)));
  EXPECT_TRUE(fs::exists(EpochDirectory(dir_, 40)));
  EXPECT_TRUE(fs::exists(EpochDirectory(dir_, 50)));
  EXPECT_EQ(PruneEpochs(dir_, 2), 0);
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
}

}  // namespace
}  // namespace strata
