#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/train/checkpoint.h"

namespace strata {
namespace {

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/strata_ckpt_test_XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/model.ckpt";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Checkpoint Sample() const {
    Checkpoint c;
    c.metadata_json = R"({"step":12,"epoch":1})";
    c.tensors.push_back({"w", Tensor::FromVector({2, 3}, {1, 2, 3, 4, 5, 6})});
    c.tensors.push_back({"b", Tensor::FromVector({3}, {-1, 0, 1})});
    return c;
  }
  std::string Bytes() const {
    std::ifstream in(path_, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  void Overwrite(const std::string& bytes) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  std::string dir_;
  std::string path_;
};

TEST_F(CheckpointTest, RoundTrip) {
  ASSERT_TRUE(WriteCheckpoint(path_, Sample()).ok());
  auto c = ReadCheckpoint(path_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->metadata_json, R"({"step":12,"epoch":1})");
  ASSERT_EQ(c->tensors.size(), 2u);
  EXPECT_EQ(c->tensors[0].name, "w");
  EXPECT_EQ(c->tensors[0].value.shape(), Shape({2, 3}));
  EXPECT_EQ(c->tensors[0].value.ToVector(), std::vector<float>({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(c->tensors[1].value.ToVector(), std::vector<float>({-1, 0, 1}));
  // No temporary file is left behind.
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(CheckpointTest, FlippedByteFailsTheCrc) {
  ASSERT_TRUE(WriteCheckpoint(path_, Sample()).ok());
  std::string bytes = Bytes();
  bytes[bytes.size() - 10] ^= 1;
  Overwrite(bytes);
  auto c = ReadCheckpoint(path_);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(c.status().message(), path_ + ": checkpoint CRC mismatch (file corrupt)");
}

TEST_F(CheckpointTest, TruncatedFile) {
  ASSERT_TRUE(WriteCheckpoint(path_, Sample()).ok());
  Overwrite(Bytes().substr(0, 40));
  EXPECT_EQ(ReadCheckpoint(path_).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(CheckpointTest, WrongMagicAndVersion) {
  Overwrite("NOTACKPT with some bytes after it");
  EXPECT_EQ(ReadCheckpoint(path_).status().message(),
            path_ + ": not a Strata checkpoint (bad magic)");
  ASSERT_TRUE(WriteCheckpoint(path_, Sample()).ok());
  std::string bytes = Bytes();
  bytes[8] = 9;  // version 9
  Overwrite(bytes);
  EXPECT_EQ(ReadCheckpoint(path_).status().message(),
            path_ + ": checkpoint format version 9, this build reads version 1");
}

TEST_F(CheckpointTest, UnwritableDirectory) {
  auto s = WriteCheckpoint("/nonexistent-dir/x.ckpt", Sample());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot create checkpoint /nonexistent-dir/x.ckpt.tmp."),
            std::string::npos);
}

}  // namespace
}  // namespace strata
