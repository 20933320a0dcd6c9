#include "core/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/util/rng.h"

namespace strata {

Dataset MakeSyntheticDataset(const Shape& sample_shape, int64_t classes, int64_t size,
                             uint64_t seed) {
  Dataset ds;
  ds.name = "synthetic";
  ds.sample_shape = sample_shape;
  ds.classes = classes;
  const int64_t numel = sample_shape.numel();
  // Each class has a mean image drawn from a stream of its own that depends
  // on neither `size` nor `seed`, so the train and test splits share their
  // classes; it is drawn again for each sample rather than kept, so a data
  // set of large images and many classes costs only its samples.
  const uint64_t class_seed = DeriveSeed(0x5EED, classes);
  Rng rng(seed);
  ds.labels.resize(size);
  ds.pixels.resize(size * numel);
  for (int64_t i = 0; i < size; ++i) {
    const int32_t label = static_cast<int32_t>(rng.Below(classes));
    ds.labels[i] = label;
    Rng mean(DeriveSeed(class_seed, label));
    uint8_t* out = ds.pixels.data() + i * numel;
    for (int64_t j = 0; j < numel; ++j) {
      const int noisy = static_cast<int>(mean.Below(256)) + static_cast<int>(rng.Below(97)) - 48;
      out[j] = static_cast<uint8_t>(std::clamp(noisy, 0, 255));
    }
  }
  return ds;
}

namespace {

absl::Status CheckMatches(const Dataset& ds, const std::string& what, const Shape& model_input,
                          int64_t classes) {
  if (ds.sample_shape != model_input) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has samples of shape ",
                                                   ds.sample_shape.ToString(),
                                                   " but model.input is ", model_input.ToString()));
  }
  if (ds.classes > classes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has ", ds.classes, " classes but model.classes is ", classes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DataSplits> LoadDataSplits(const DataConfig& data, const Shape& model_input,
                                          int64_t classes, uint64_t seed) {
  DataSplits splits;
  if (data.dataset == "synthetic") {
    if (model_input.rank() != 3) {
      return absl::InvalidArgumentError("synthetic data needs an image model.input [H, W, C]");
    }
    splits.train =
        MakeSyntheticDataset(model_input, classes, TrainingSetSize(data), DeriveSeed(seed, 1));
    splits.test =
        MakeSyntheticDataset(model_input, classes, data.synthetic_test, DeriveSeed(seed, 2));
  } else if (data.dataset == "fashion_mnist" || data.dataset == "mnist") {
    const std::string& dir = data.path;
    // Debian ships the files gzip-compressed; accept the unpacked names too.
    auto pick = [&dir](const std::string& stem) {
      const std::string gz = absl::StrCat(dir, "/", stem, ".gz");
      return std::ifstream(gz).good() ? gz : absl::StrCat(dir, "/", stem);
    };
    STRATA_ASSIGN_OR_RETURN(splits.train, ReadIdxDataset(pick("train-images-idx3-ubyte"),
                                                         pick("train-labels-idx1-ubyte"), 10));
    STRATA_ASSIGN_OR_RETURN(splits.test, ReadIdxDataset(pick("t10k-images-idx3-ubyte"),
                                                        pick("t10k-labels-idx1-ubyte"), 10));
  } else if (data.dataset == "cifar10") {
    std::vector<std::string> train_files;
    for (int i = 1; i <= 5; ++i) {
      train_files.push_back(absl::StrCat(data.path, "/data_batch_", i, ".bin"));
    }
    STRATA_ASSIGN_OR_RETURN(splits.train, ReadCifar10(train_files));
    STRATA_ASSIGN_OR_RETURN(splits.test, ReadCifar10({data.path + "/test_batch.bin"}));
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown data set \"", data.dataset, "\""));
  }
  splits.train.name = data.dataset + "/train";
  splits.test.name = data.dataset + "/test";
  if (splits.train.size() != TrainingSetSize(data)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.train_size: the job plans for ", TrainingSetSize(data), " training images",
        data.train_size > 0 ? "" : absl::StrCat(" (", data.dataset, "'s standard count)"),
        " but ", data.path, " holds ", splits.train.size(), "; set data.train_size to ",
        splits.train.size()));
  }
  STRATA_RETURN_IF_ERROR(CheckMatches(splits.train, splits.train.name, model_input, classes));
  STRATA_RETURN_IF_ERROR(CheckMatches(splits.test, splits.test.name, model_input, classes));
  return splits;
}

int64_t TrainingSetSize(const DataConfig& data) {
  if (data.train_size > 0) return data.train_size;
  return data.dataset == "cifar10" ? 50000 : 60000;
}

int64_t TotalTrainingSteps(const TrainingConfig& training, int64_t train_size) {
  int64_t steps = train_size / training.batch_size * training.epochs;
  if (training.max_steps > 0) steps = std::min(steps, training.max_steps);
  return steps;
}

}  // namespace strata
