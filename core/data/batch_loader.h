// BatchLoader: turns a Dataset into normalised float batches, shuffled per
// epoch from a seed and sharded by rank.
//
// Sharding keeps a cluster numerically equal to one process: every epoch has
// one global order (a seeded shuffle); global batch s is items
// [s*G, (s+1)*G) of that order, and rank r of R takes the contiguous slice
// [r*G/R, (r+1)*G/R) of it. One process with batch G and R processes with
// batch G/R each therefore see the same samples at every step.
//
// Augmentation (random crop from a padded image, horizontal flip) is drawn
// per sample from the seed, the epoch and the sample's index in the data
// set, so it too is the same however the batch is sharded.
#ifndef STRATA_CORE_DATA_BATCH_LOADER_H_
#define STRATA_CORE_DATA_BATCH_LOADER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "core/data/dataset.h"
#include "core/tensor/tensor.h"

namespace strata {

struct Batch {
  Tensor images;                // {n, H, W, C}, normalised
  std::vector<int32_t> labels;  // n labels
};

// The rows [begin, begin + rows) of a global batch: the part one rank
// takes when the ranks' shares are not even (core/model/batch_shares.h).
struct BatchSlice {
  int64_t begin = 0;
  int64_t rows = 0;
  friend bool operator==(const BatchSlice& a, const BatchSlice& b) {
    return a.begin == b.begin && a.rows == b.rows;
  }
};
// Rank `rank`'s slice when rank r takes rows[r] rows, in rank order;
// unset when every rank takes as many (the loader's own shares are those).
std::optional<BatchSlice> SliceOfRank(const std::vector<int64_t>& rows, int rank);

struct BatchLoaderOptions {
  int64_t global_batch = 64;
  int rank = 0;
  int world = 1;  // global_batch must be divisible by world
  bool shuffle = true;
  bool drop_last = true;  // false keeps a final short batch
  uint64_t seed = 1;
  std::vector<float> mean;  // per channel, or one value; empty = 0
  std::vector<float> std;   // per channel, or one value; empty = 1
  // Training images only (samples {H, W, C}); see AugmentConfig in
  // core/model/job_config.h.
  int64_t crop_padding = 0;
  bool horizontal_flip = false;
};

class BatchLoader {
 public:
  // `dataset` must outlive the loader. Aborts if global_batch is not divisible
  // by world (the launcher validates this first).
  BatchLoader(const Dataset& dataset, BatchLoaderOptions options);

  int64_t steps_per_epoch() const;
  // Re-orders the data for `epoch` (a pure function of seed and epoch).
  void StartEpoch(int64_t epoch);
  // This rank's part of global batch `step` of the current epoch: its
  // even part, or `slice` of the batch when given (clipped to the data).
  Batch Get(int64_t step, const std::optional<BatchSlice>& slice = std::nullopt) const;
  // This rank's part of the batch of global training step `step` (counted
  // over the whole run): re-orders for a new epoch when the step enters one,
  // so a loop may also jump back (a rewind after a server restart).
  Batch ForStep(int64_t step, const std::optional<BatchSlice>& slice = std::nullopt);

 private:
  // Writes sample `index`, normalised and (where asked) augmented, to dst.
  void Fill(int64_t index, float* dst) const;

  const Dataset& dataset_;
  BatchLoaderOptions options_;
  std::vector<int64_t> order_;
  int64_t epoch_ = -1;         // the epoch order_ was built for
  std::vector<float> scale_;   // per channel: 1 / (255 * std)
  std::vector<float> offset_;  // per channel: -mean / std
};

}  // namespace strata

#endif  // STRATA_CORE_DATA_BATCH_LOADER_H_
