// BatchShares (core/model/batch_shares.h) and the uneven slices of a global
// batch they give the data loaders: every row of a global batch goes to
// exactly one rank, whatever the shares, and a prefetching loader makes the
// slice it is asked for when the shares change.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/data/batch_loader.h"
#include "core/data/dataset.h"
#include "core/data/prefetching_loader.h"
#include "core/model/batch_shares.h"

namespace strata {
namespace {

std::vector<int64_t> RowsOf(const std::string& text, int64_t global, int ranks) {
  absl::StatusOr<BatchShares> shares = BatchShares::Parse(text);
  EXPECT_TRUE(shares.ok()) << shares.status();
  absl::StatusOr<std::vector<int64_t>> rows = shares->Rows(global, ranks);
  EXPECT_TRUE(rows.ok()) << rows.status();
  return rows.ok() ? *rows : std::vector<int64_t>{};
}

TEST(BatchSharesTest, RowsFollowTheWeightsAndSumToTheGlobalBatch) {
  EXPECT_EQ(RowsOf("even", 64, 2), (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(RowsOf("3:1", 64, 2), (std::vector<int64_t>{48, 16}));
  EXPECT_EQ(RowsOf("1:3", 64, 2), (std::vector<int64_t>{16, 48}));
  // 64 * 2/3 = 42.67 and 21.33: the larger remainder takes the spare row.
  EXPECT_EQ(RowsOf("2:1", 64, 2), (std::vector<int64_t>{43, 21}));
  // Equal remainders: the lower rank first.
  EXPECT_EQ(RowsOf("1:1:1", 64, 3), (std::vector<int64_t>{22, 21, 21}));
  EXPECT_EQ(RowsOf("5:1:1:1", 16, 4), (std::vector<int64_t>{10, 2, 2, 2}));
  EXPECT_EQ(BatchShares::Parse("3:1")->ToString(), "3:1");
  EXPECT_EQ(BatchShares().ToString(), "even");
  EXPECT_EQ(BatchShares().ForRanks(3).ToString(), "1:1:1");
  EXPECT_EQ(BatchShares::Parse("2:1")->ForRanks(5).ToString(), "2:1");
}

TEST(BatchSharesTest, BadSharesAreRefusedNamingTheRule) {
  EXPECT_EQ(BatchShares::Parse("3:0").status().message(),
            "batch shares \"3:0\": \"0\" is not a weight from 1 to 1000 (write \"even\" or one "
            "weight per conv worker joined by ':', e.g. \"3:1\")");
  EXPECT_FALSE(BatchShares::Parse("").ok());
  EXPECT_FALSE(BatchShares::Parse("3:").ok());
  EXPECT_FALSE(BatchShares::Parse("uneven").ok());
  EXPECT_FALSE(BatchShares::Parse("1001:1").ok());
  EXPECT_EQ(BatchShares::Parse("3:1")->Rows(64, 4).status().message(),
            "batch shares 3:1 give 2 weights for 4 conv workers (one each)");
  EXPECT_EQ(BatchShares::Parse("1000:1")->Rows(64, 2).status().message(),
            "batch shares 1000:1 give conv worker 1 no row of a global batch of 64");
}

TEST(BatchSharesTest, SlicesOfEveryRankMakeUpTheGlobalBatch) {
  const Dataset ds = MakeSyntheticDataset({4, 4, 1}, 5, 200, 2);
  BatchLoaderOptions whole;
  whole.global_batch = 20;
  whole.seed = 9;
  BatchLoader single(ds, whole);
  for (const char* text : {"even", "3:1", "1:4"}) {
    const std::vector<int64_t> rows = RowsOf(text, 20, 2);
    std::vector<int32_t> labels;
    std::vector<float> pixels;
    for (int rank = 0; rank < 2; ++rank) {
      BatchLoaderOptions o = whole;
      o.rank = rank;
      o.world = 2;
      BatchLoader loader(ds, o);
      const Batch part = loader.ForStep(13, SliceOfRank(rows, rank));
      EXPECT_EQ(static_cast<int64_t>(part.labels.size()), rows[rank]) << text;
      labels.insert(labels.end(), part.labels.begin(), part.labels.end());
      const std::vector<float> p = part.images.ToVector();
      pixels.insert(pixels.end(), p.begin(), p.end());
    }
    const Batch all = single.ForStep(13);
    EXPECT_EQ(labels, all.labels) << text;
    EXPECT_EQ(pixels, all.images.ToVector()) << text;
  }
  // Even shares need no slice: the loader's own are those.
  EXPECT_FALSE(SliceOfRank({32, 32}, 1).has_value());
  EXPECT_EQ(SliceOfRank({48, 16}, 1), (BatchSlice{48, 16}));
}

TEST(BatchSharesTest, APrefetchingLoaderMakesTheSliceAskedForWhenTheSharesChange) {
  const Dataset ds = MakeSyntheticDataset({4, 4, 1}, 5, 200, 2);
  BatchLoaderOptions o;
  o.global_batch = 20;
  o.rank = 1;
  o.world = 2;
  BatchLoader reference(ds, o);
  BatchLoader inner(ds, o);
  PrefetchingLoader loader(inner);
  const std::optional<BatchSlice> even, uneven = BatchSlice{15, 5};
  for (const auto& [step, slice] : std::vector<std::pair<int64_t, std::optional<BatchSlice>>>{
           {0, even}, {1, even}, {2, uneven}, {3, uneven}, {4, even}}) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the step's compute
    const Batch want = reference.ForStep(step, slice);
    const Batch got = loader.ForStep(step, slice);
    EXPECT_EQ(got.labels, want.labels) << "step " << step;
    EXPECT_EQ(got.images.ToVector(), want.images.ToVector()) << "step " << step;
  }
  // Steps 2 and 4 changed slice: made on demand, like step 0.
  EXPECT_EQ(loader.waits(), 3);
}

}  // namespace
}  // namespace strata
