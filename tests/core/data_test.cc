// Readers on the real Fashion-MNIST files and on broken ones; the loader.
#include <gtest/gtest.h>

#include <set>

#include <zlib.h>
#include <optional>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/data/batch_loader.h"
#include "core/data/dataset.h"

namespace strata {
namespace {

const std::string kFashion = "/usr/share/datasets/fashion-mnist";

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/strata_data_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string IdxBytes(std::vector<uint32_t> dims, size_t data_bytes, uint8_t fill = 1) {
  std::string s = {0, 0, 8, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    s += static_cast<char>(d >> 24);
    s += static_cast<char>(d >> 16);
    s += static_cast<char>(d >> 8);
    s += static_cast<char>(d);
  }
  return s + std::string(data_bytes, static_cast<char>(fill));
}

TEST(DataTest, TheTrainingSetSizeComesFromTheConfigAlone) {
  DataConfig data;
  data.dataset = "fashion_mnist";
  data.path = "/nonexistent";  // nothing is read
  EXPECT_EQ(TrainingSetSize(data), 60000);
  data.dataset = "cifar10";
  EXPECT_EQ(TrainingSetSize(data), 50000);
  data.train_size = 1234;
  EXPECT_EQ(TrainingSetSize(data), 1234);
}

TEST(IdxReaderTest, ReadsTheRealFashionMnist) {
  auto train = ReadIdxDataset(kFashion + "/train-images-idx3-ubyte.gz",
                              kFashion + "/train-labels-idx1-ubyte.gz", 10);
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(train->sample_shape, Shape({28, 28, 1}));
  EXPECT_EQ(train->labels[0], 9);  // the first training image is an ankle boot
  EXPECT_EQ(train->labels[1], 0);
  std::vector<int> counts(10, 0);
  for (int32_t l : train->labels) counts[l]++;
  for (int c : counts) EXPECT_EQ(c, 6000);  // Fashion-MNIST is balanced
  auto test = ReadIdxDataset(kFashion + "/t10k-images-idx3-ubyte.gz",
                             kFashion + "/t10k-labels-idx1-ubyte.gz", 10);
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(test->size(), 10000);
}

TEST(IdxReaderTest, RawFileWithWrongMagic) {
  TempDir dir;
  WriteBytes(dir.File("bad"), std::string("\x01\x02\x08\x01", 4) + std::string(10, 'x'));
  auto r = ReadIdxFile(dir.File("bad"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      r.status().message(),
      dir.File("bad") + ": not an IDX file (wrong magic number: first bytes 1 2, expected 0 0)");
}

TEST(IdxReaderTest, TruncatedRawFile) {
  TempDir dir;
  WriteBytes(dir.File("short"), IdxBytes({10, 28, 28}, 1000));
  auto r = ReadIdxFile(dir.File("short"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(), dir.File("short") +
                                      ": truncated: expected 7840 bytes of IDX data (7840 "
                                      "declared), found 1000");
}

TEST(IdxReaderTest, TruncatedGzipOfTheRealFile) {
  TempDir dir;
  std::ifstream in(kFashion + "/t10k-labels-idx1-ubyte.gz", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u);
  WriteBytes(dir.File("cut.gz"), bytes.substr(0, bytes.size() / 2));
  auto r = ReadIdxFile(dir.File("cut.gz"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find(dir.File("cut.gz")), std::string::npos);
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status();
}

TEST(IdxReaderTest, CorruptGzipBody) {
  TempDir dir;
  std::ifstream in(kFashion + "/t10k-labels-idx1-ubyte.gz", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t i = 100; i < 400; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5A);
  WriteBytes(dir.File("corrupt.gz"), bytes);
  auto r = ReadIdxFile(dir.File("corrupt.gz"));
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(dir.File("corrupt.gz")), std::string::npos);
  EXPECT_NE(r.status().message().find("corrupt"), std::string::npos) << r.status();
}

TEST(IdxReaderTest, LabelOutOfRangeAndCountMismatch) {
  TempDir dir;
  WriteBytes(dir.File("images"), IdxBytes({3, 2, 2}, 12));
  WriteBytes(dir.File("labels"), IdxBytes({3}, 3, 11));
  auto r = ReadIdxDataset(dir.File("images"), dir.File("labels"), 10);
  EXPECT_EQ(r.status().message(), dir.File("labels") + ": label 11 at index 0 is outside [0, 10)");
  WriteBytes(dir.File("labels2"), IdxBytes({2}, 2, 1));
  auto mismatch = ReadIdxDataset(dir.File("images"), dir.File("labels2"), 10);
  EXPECT_EQ(mismatch.status().message(),
            dir.File("images") + " holds 3 images but " + dir.File("labels2") + " holds 2 labels");
}

TEST(IdxReaderTest, MissingFile) {
  EXPECT_EQ(ReadIdxFile("/nonexistent/x.gz").status().code(), absl::StatusCode::kNotFound);
}

TEST(Cifar10ReaderTest, ReadsRecordsAsHwc) {
  TempDir dir;
  std::string record(3073, 0);
  record[0] = 7;
  record[1] = 10;         // R of pixel 0
  record[1 + 1024] = 20;  // G of pixel 0
  record[1 + 2048] = 30;  // B of pixel 0
  record[1 + 5] = 40;     // R of pixel 5
  WriteBytes(dir.File("b.bin"), record + record);
  auto ds = ReadCifar10({dir.File("b.bin")});
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->size(), 2);
  EXPECT_EQ(ds->labels[1], 7);
  EXPECT_EQ(ds->sample_shape, Shape({32, 32, 3}));
  EXPECT_EQ(ds->pixels[0], 10);
  EXPECT_EQ(ds->pixels[1], 20);
  EXPECT_EQ(ds->pixels[2], 30);
  EXPECT_EQ(ds->pixels[15], 40);
}

TEST(Cifar10ReaderTest, RejectsPartialRecordsAndBadLabels) {
  TempDir dir;
  WriteBytes(dir.File("cut.bin"), std::string(3073 + 100, 0));
  EXPECT_EQ(ReadCifar10({dir.File("cut.bin")}).status().message(),
            dir.File("cut.bin") +
                ": 3173 bytes is not a whole number of CIFAR-10 records of 3073 bytes "
                "(truncated or not a CIFAR-10 binary batch)");
  std::string record(3073, 0);
  record[0] = 12;
  WriteBytes(dir.File("label.bin"), record);
  EXPECT_EQ(ReadCifar10({dir.File("label.bin")}).status().message(),
            dir.File("label.bin") + ": label 12 of record 0 is outside [0, 10)");
}

TEST(SyntheticDatasetTest, SeededAndShaped) {
  Dataset a = MakeSyntheticDataset({8, 8, 3}, 5, 100, 42);
  Dataset b = MakeSyntheticDataset({8, 8, 3}, 5, 100, 42);
  Dataset c = MakeSyntheticDataset({8, 8, 3}, 5, 100, 43);
  EXPECT_EQ(a.pixels.size(), 100u * 192);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.pixels, c.pixels);
  for (int32_t l : a.labels) EXPECT_TRUE(l >= 0 && l < 5);
}

// Rank `rank` of `world`'s part of batch `step` of `epoch`, loaded as
// `options` says otherwise.
Batch ShardOf(const Dataset& ds, BatchLoaderOptions options, int rank, int world, int64_t epoch,
              int64_t step) {
  options.rank = rank;
  options.world = world;
  BatchLoader part(ds, options);
  part.StartEpoch(epoch);
  return part.Get(step);
}

// The (dy, dx, flip) for which `augmented` is `plain` cropped at offset
// (dy, dx) from its zero-padded image and mirrored if flip, or nullopt.
// Both are one {H, W, C} sample without normalisation.
struct Transform {
  int64_t dy = 0, dx = 0;
  bool flip = false;
};
std::optional<Transform> FindTransform(const float* plain, const float* augmented,
                                       const Shape& shape, int64_t pad) {
  const int64_t h = shape[0], w = shape[1], channels = shape[2];
  for (int64_t dy = -pad; dy <= pad; ++dy) {
    for (int64_t dx = -pad; dx <= pad; ++dx) {
      for (bool flip : {false, true}) {
        bool same = true;
        for (int64_t y = 0; y < h && same; ++y) {
          for (int64_t x = 0; x < w && same; ++x) {
            const int64_t sy = y + dy, sx = (flip ? w - 1 - x : x) + dx;
            const bool inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
            for (int64_t c = 0; c < channels && same; ++c) {
              const float want = inside ? plain[(sy * w + sx) * channels + c] : 0.0f;
              same = augmented[(y * w + x) * channels + c] == want;
            }
          }
        }
        if (same) return Transform{dy, dx, flip};
      }
    }
  }
  return std::nullopt;
}

TEST(BatchLoaderTest, AugmentationCropsFromThePaddedImageAndFlipsAlikeOnEveryShard) {
  const Shape sample({6, 5, 2});  // not square, two channels
  Dataset ds = MakeSyntheticDataset(sample, 3, 40, 7);
  BatchLoaderOptions plain;
  plain.global_batch = 40;
  plain.shuffle = false;
  BatchLoaderOptions augmenting = plain;
  augmenting.crop_padding = 2;
  augmenting.horizontal_flip = true;
  BatchLoader original(ds, plain), augmented(ds, augmenting);
  original.StartEpoch(0);
  augmented.StartEpoch(0);
  const Batch a = original.Get(0), b = augmented.Get(0);
  const int64_t numel = sample.numel();
  std::set<std::pair<int64_t, int64_t>> offsets;
  int flips = 0;
  for (int64_t i = 0; i < 40; ++i) {
    const std::optional<Transform> t =
        FindTransform(a.images.data() + i * numel, b.images.data() + i * numel, sample, 2);
    ASSERT_TRUE(t.has_value()) << "sample " << i << " is no crop or mirror of its image";
    offsets.insert({t->dy, t->dx});
    flips += t->flip ? 1 : 0;
    EXPECT_EQ(a.labels[i], b.labels[i]);
  }
  // Drawn, not fixed: several offsets, mirrored and not.
  EXPECT_GE(offsets.size(), 5u);
  EXPECT_GT(flips, 0);
  EXPECT_LT(flips, 40);

  // Four ranks of 10 see the same augmented samples as one process of 40.
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(MaxAbsDiff(ShardOf(ds, augmenting, rank, 4, 0, 0).images,
                         b.images.Slice(rank * 10, rank * 10 + 10)),
              0.0f);
  }
  // Another epoch draws again; the same epoch draws the same.
  augmented.StartEpoch(1);
  EXPECT_GT(MaxAbsDiff(augmented.Get(0).images, b.images), 0.0f);
  augmented.StartEpoch(0);
  EXPECT_EQ(MaxAbsDiff(augmented.Get(0).images, b.images), 0.0f);
}

TEST(BatchLoaderTest, NormalisesShufflesAndShards) {
  Dataset ds = MakeSyntheticDataset({2, 2, 1}, 3, 40, 1);
  BatchLoaderOptions o;
  o.global_batch = 8;
  o.mean = {0.5f};
  o.std = {0.25f};
  BatchLoader whole(ds, o);
  whole.StartEpoch(3);
  Batch full = whole.Get(2);
  ASSERT_EQ(full.images.shape(), Shape({8, 2, 2, 1}));
  // Two ranks of batch 4 see exactly the two halves of the global batch.
  for (int rank = 0; rank < 2; ++rank) {
    Batch b = ShardOf(ds, o, rank, 2, 3, 2);
    ASSERT_EQ(b.images.dim(0), 4);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(b.labels[i], full.labels[rank * 4 + i]);
    EXPECT_EQ(MaxAbsDiff(b.images, full.images.Slice(rank * 4, rank * 4 + 4)), 0.0f);
  }
  // Values are (pixel/255 - mean)/std.
  BatchLoaderOptions plain = o;
  plain.shuffle = false;
  BatchLoader ordered(ds, plain);
  ordered.StartEpoch(0);
  Batch first = ordered.Get(0);
  EXPECT_NEAR(first.images.data()[0], (ds.pixels[0] / 255.0f - 0.5f) / 0.25f, 1e-5);
  // Different epochs give different orders; the same epoch the same order.
  whole.StartEpoch(4);
  Batch other = whole.Get(2);
  whole.StartEpoch(3);
  EXPECT_EQ(whole.Get(2).labels, full.labels);
  EXPECT_GT(MaxAbsDiff(other.images, full.images), 0.0f);
  EXPECT_EQ(whole.steps_per_epoch(), 5);
}

}  // namespace
}  // namespace strata
