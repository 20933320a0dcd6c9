#include "core/data/training_data.h"

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace strata {

absl::StatusOr<std::unique_ptr<TrainingData>> LoadTrainingData(const JobConfig& config, int rank,
                                                               int world, int64_t train_limit) {
  const TrainingConfig& tc = config.training;
  if (world < 1 || tc.batch_size % world != 0) {
    return absl::InvalidArgumentError(absl::StrCat("training.batch_size ", tc.batch_size,
                                                   " is not divisible by the ", world, " workers"));
  }
  auto data = std::make_unique<TrainingData>();
  STRATA_ASSIGN_OR_RETURN(data->splits,
                          LoadDataSplits(config.data, config.model.input, config.model.classes,
                                         static_cast<uint64_t>(tc.seed)));
  Dataset& train = data->splits.train;
  if (train_limit > 0 && train_limit < train.size()) {
    train.labels.resize(train_limit);
    train.pixels.resize(train_limit * train.sample_shape.numel());
  }
  BatchLoaderOptions& lo = data->loader_options;
  lo.global_batch = tc.batch_size;
  lo.rank = rank;
  lo.world = world;
  lo.seed = static_cast<uint64_t>(tc.seed);
  lo.mean = config.data.mean;
  lo.std = config.data.std;
  lo.crop_padding = config.data.augment.crop_padding;
  lo.horizontal_flip = config.data.augment.horizontal_flip;
  data->loader = std::make_unique<BatchLoader>(train, lo);
  data->steps_per_epoch = data->loader->steps_per_epoch();
  if (data->steps_per_epoch == 0) {
    return absl::InvalidArgumentError(absl::StrCat("the training set (", train.size(),
                                                   " images) is smaller than one global batch (",
                                                   tc.batch_size, ")"));
  }
  data->total_steps = TotalTrainingSteps(tc, train.size());
  data->batches = std::make_unique<PrefetchingLoader>(*data->loader);
  return data;
}

}  // namespace strata
