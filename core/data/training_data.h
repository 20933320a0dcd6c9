// TrainingData: what every training process loads — the data splits, the
// loader of its shard of the training set, and the run length.
#ifndef STRATA_CORE_DATA_TRAINING_DATA_H_
#define STRATA_CORE_DATA_TRAINING_DATA_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/data/batch_loader.h"
#include "core/data/dataset.h"
#include "core/data/prefetching_loader.h"
#include "core/model/job_config.h"

namespace strata {

struct TrainingData {
  DataSplits splits;
  BatchLoaderOptions loader_options;    // normalisation and sharding
  std::unique_ptr<BatchLoader> loader;  // rank's shard of splits.train
  // The loader's batches one step ahead: what a training loop takes its
  // batches from (after `loader`, so it stops first).
  std::unique_ptr<PrefetchingLoader> batches;
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
};

// Loads the data of `config`, keeps the first `train_limit` training images
// when > 0, and builds rank `rank` of `world`'s loader. Fails when the
// global batch does not divide over the ranks or exceeds the training set.
absl::StatusOr<std::unique_ptr<TrainingData>> LoadTrainingData(const JobConfig& config, int rank,
                                                               int world, int64_t train_limit);

}  // namespace strata

#endif  // STRATA_CORE_DATA_TRAINING_DATA_H_
