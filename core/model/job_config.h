// JobConfig: everything one training job needs, read from one JSON file.
//
// The format (README.md, "Job config", has the full reference):
//
//   {
//     "name": "fashion_mnist",
//     "data": {"dataset": "fashion_mnist", "path": "/usr/share/datasets/fashion-mnist",
//              "mean": [0.2860], "std": [0.3530]},
//     "model": {"input": [28, 28, 1], "classes": 10, "split_after": "pool2",
//               "layers": [{"type": "conv2d", "name": "conv1", "out_channels": 32,
//                           "kernel": 3, "padding": 1}, ...]},
//     "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
//     "schedule": {"type": "cosine", "warmup_steps": 100},
//     "training": {"batch_size": 64, "epochs": 3, "seed": 1, "threads": 2},
//     "cluster": {"mode": "single", "servers": 1, "conv_workers": 2, "fc_workers": 1}
//   }
//
// Parsing checks types, ranges and unknown fields, and names the offending
// field by its path ("model.layers[3].kernel: missing field"). Whether the
// layers chain (shapes) is checked when the model is built (model.h).
#ifndef STRATA_CORE_MODEL_JOB_CONFIG_H_
#define STRATA_CORE_MODEL_JOB_CONFIG_H_

#include <any>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/optim/lr_schedule.h"
#include "core/optim/optimizer.h"
#include "core/tensor/tensor.h"

namespace strata {

// One entry of model.layers. Only the fields of its type are meaningful;
// its type is one of the layer registry's (core/model/layer_registry.h).
struct LayerSpec {
  std::string type;  // conv2d, relu, maxpool2d, avgpool2d, global_avgpool,
                     // batchnorm2d, flatten, linear, dropout, residual; moe (moe/)
  // Unique in the model; defaults to type + ordinal ("conv2d2"). A layer
  // inside a residual block is named after it: "block1.conv2d1".
  std::string name;
  std::string path;                // "model.layers[3]", "model.layers[3].body[0]": for errors
  int64_t out_channels = 0;        // conv2d
  bool bias = true;                // conv2d
  std::string algorithm = "auto";  // conv2d: auto, direct or winograd (core/layers/conv2d.h)
  int64_t kernel = 0;              // conv2d (default 3), pooling (default 2)
  int64_t stride = 0;              // conv2d (default 1), pooling (default = kernel)
  int64_t padding = 0;             // conv2d, pooling
  int64_t out_features = 0;        // linear
  float p = 0.5f;                  // dropout
  float epsilon = 1e-5f;           // batchnorm2d
  float momentum = 0.1f;           // batchnorm2d
  // residual: the body's layers and the shortcut's (none: the identity).
  std::vector<LayerSpec> body;
  std::vector<LayerSpec> shortcut;
  // The fields of a type registered outside core (moe/'s MoeSpec), set by
  // that type's parser and read by its builder.
  std::any options;
};

struct ModelConfig {
  Shape input;  // per-sample input, [H, W, C]
  int64_t classes = 0;
  std::vector<LayerSpec> layers;
  std::string split_after;  // last layer of the conv trunk; "" = no split
  int split_index = 0;      // index of the first head layer (layers.size() if no split)
};

// Seeded augmentation of training images (data.augment); off by default.
// Each sample's draw is a function of the seed, the epoch and the sample,
// so every process of a cluster sees the same augmented batch.
struct AugmentConfig {
  // Random crop of the input's size from the image padded by this many
  // pixels on every side (padding is black: raw pixel 0); 0 = none.
  int64_t crop_padding = 0;
  bool horizontal_flip = false;  // mirror left-right with probability 1/2
  bool enabled() const { return crop_padding > 0 || horizontal_flip; }
};

struct DataConfig {
  std::string dataset;      // fashion_mnist, mnist, cifar10, synthetic
  std::string path;         // directory of the data files
  std::vector<float> mean;  // per channel (or one value for all)
  std::vector<float> std;   // per channel (or one value for all)
  // Training images. Synthetic: how many to make (default 60000). Files:
  // how many they hold, the data set's standard count unless given
  // (TrainingSetSize); servers plan the run's steps from it without the
  // files, and a worker whose files hold another count stops with an error.
  int64_t train_size = 0;
  int64_t synthetic_test = 0;  // synthetic: test images to make
  AugmentConfig augment;       // training images only
};

struct TrainingConfig {
  int64_t batch_size = 64;
  int64_t epochs = 1;
  int64_t max_steps = 0;  // 0 = no limit beyond epochs
  int64_t seed = 1;
  int64_t threads = 0;     // 0 = the machine's default
  int64_t log_every = 50;  // steps between metric lines
  bool evaluate = true;    // test-set accuracy after every epoch
  // Where single-process training computes: "cpu", "cuda", "cuda:N" or
  // "check" (core/ops/backend.h: ParseDeviceSpec).
  std::string device = "cpu";
  // TensorFloat-32 in a GPU's matrix products and convolutions.
  bool tf32 = false;
};

struct ClusterConfig {
  std::string mode = "single";  // single, ps, stanza
  int64_t servers = 1;
  int64_t conv_workers = 1;
  int64_t fc_workers = 1;
  // What pushes, pulls and activations carry on the sockets at start: fp32,
  // or bf16 (half the bytes; the wire.format knob changes it while the job
  // runs). Servers keep and accumulate fp32 either way.
  std::string wire_format = "fp32";
  // How each global batch divides over the conv workers at start: "even",
  // or a weight per conv worker ("3:1", core/model/batch_shares.h); the
  // batch.shares knob changes it while the job runs.
  std::string batch_shares = "even";
  // How a stanza FC worker batches its conv workers' activations at start:
  // "gathered" or "arrival" (core/model/fc_batching.h); the fc.batching knob
  // changes it while the job runs.
  std::string fc_batching = "gathered";
};

struct JobConfig {
  std::string name;
  std::string source;  // file the config came from
  // The config as parsed, as JSON text ("" for one built in code); its
  // training and cluster blocks may since have been overridden in the
  // fields below (core/model/job_spec.h writes them back).
  std::string text;
  DataConfig data;
  ModelConfig model;
  OptimizerConfig optimizer;
  LrScheduleConfig schedule;
  TrainingConfig training;
  ClusterConfig cluster;
};

// Reads and validates a job config file. Errors name the file and the field.
absl::StatusOr<JobConfig> LoadJobConfig(const std::string& path);

// Same, from JSON text; `source` names it in errors.
absl::StatusOr<JobConfig> ParseJobConfig(const std::string& text, const std::string& source);

}  // namespace strata

#endif  // STRATA_CORE_MODEL_JOB_CONFIG_H_
