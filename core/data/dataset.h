// Dataset: labelled images held in memory as bytes, and the readers that
// fill it from Fashion-MNIST/MNIST IDX files, CIFAR-10 binary batches, or a
// seeded synthetic generator.
//
// Every reader validates what it reads (magic numbers, dimensions, sizes,
// label range) and fails with an error that names the file and the problem;
// a corrupt or truncated file never crashes the process.
#ifndef STRATA_CORE_DATA_DATASET_H_
#define STRATA_CORE_DATA_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/job_config.h"
#include "core/tensor/tensor.h"

namespace strata {

struct Dataset {
  std::string name;
  Shape sample_shape;  // {H, W, C}
  int64_t classes = 0;
  std::vector<uint8_t> pixels;  // size() * sample_shape.numel() bytes, HWC per image
  std::vector<int32_t> labels;  // in [0, classes)

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
};

struct DataSplits {
  Dataset train;
  Dataset test;
};

// An IDX array (the MNIST file format) of unsigned bytes.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

// Reads an IDX file of unsigned bytes, gzip-compressed or raw.
absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path);

// Reads one MNIST-format split: an images file (3 dims) and a labels file
// (1 dim) whose counts must agree, labels < `classes`.
absl::StatusOr<Dataset> ReadIdxDataset(const std::string& images_path,
                                       const std::string& labels_path, int64_t classes);

// Reads CIFAR-10 binary batch files (records of 1 label byte + 3072 pixel
// bytes, channel-major) into one HWC dataset.
absl::StatusOr<Dataset> ReadCifar10(const std::vector<std::string>& paths);

// A seeded synthetic data set: each class has its own mean image, samples are
// noisy copies, so models can learn it. Same seed, same bytes.
Dataset MakeSyntheticDataset(const Shape& sample_shape, int64_t classes, int64_t size,
                             uint64_t seed);

// Loads the train and test splits that `data` names and checks them against
// the model's input shape and class count, and the training images against
// TrainingSetSize(data) (InvalidArgument naming both counts and the field).
absl::StatusOr<DataSplits> LoadDataSplits(const DataConfig& data, const Shape& model_input,
                                          int64_t classes, uint64_t seed);

// Number of training samples of `data`, from the config alone (no file is
// read, so servers plan a run without the data set): data.train_size when
// given, else the data set's standard count (mnist and fashion_mnist 60000,
// cifar10 50000).
int64_t TrainingSetSize(const DataConfig& data);

// Steps of a run: epochs x (train_size / global batch), capped by max_steps.
int64_t TotalTrainingSteps(const TrainingConfig& training, int64_t train_size);

}  // namespace strata

#endif  // STRATA_CORE_DATA_DATASET_H_
