// Job config parsing and model building: errors name the field's path.
#include <gtest/gtest.h>

#include <map>

#include "core/model/job_config.h"
#include "core/model/job_identity.h"
#include "core/model/job_spec.h"
#include "core/model/layer_registry.h"
#include "core/model/model.h"
#include "core/model/server_keys.h"
#include "core/ops/cpu_backend.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

// The default config with `from` replaced by `to` (which must occur).
std::string Edited(const std::string& from, const std::string& to) {
  return testing::EditedConfig(testing::kConfig, from, to);
}

std::string ErrorOf(const std::string& text) { return testing::ConfigError(text); }

TEST(JobConfigTest, DefaultConfigLoadsAndBuilds) {
  auto config = LoadJobConfig(testing::kConfig);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model.layers.size(), 10u);
  EXPECT_EQ(config->model.split_index, 6);
  EXPECT_EQ(config->training.batch_size, 64);
  EXPECT_EQ(config->optimizer.type, "sgd");
  EXPECT_FLOAT_EQ(config->optimizer.momentum, 0.9f);
  auto model = Model::Build(config->model, 1);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->boundary_shape(), Shape({7, 7, 64}));
  // conv1 320 + conv2 18496 + fc1 1606144 + fc2 5130
  EXPECT_EQ((*model)->num_parameter_elements(), 1630090);
  EXPECT_EQ((*model)->parameters(0, 6).size(), 4u);
  EXPECT_EQ((*model)->parameters()[0]->name, "conv1.weight");
  EXPECT_EQ((*model)->parameters().back()->name, "fc2.bias");
}

// Counts the points between layers a model offers for the device to
// change hands, and the layers run by then.
class CountingObserver final : public WaitObserver {
 public:
  void WaitBegins() override {}
  void WaitEnds() override {}
  void MayYield() override { ++yields; }
  int yields = 0;
};

TEST(ModelTest, ForwardAndBackwardOfferThePointBetweenEveryTwoLayers) {
  auto config = LoadJobConfig(testing::kConfig);
  ASSERT_TRUE(config.ok()) << config.status();
  auto model = Model::Build(config->model, 1);
  ASSERT_TRUE(model.ok()) << model.status();
  CountingObserver observer;
  (*model)->set_wait_observer(&observer);
  const int layers = (*model)->num_layers();
  std::vector<int64_t> dims = {2};
  for (int64_t d : (*model)->input_shape().dims()) dims.push_back(d);
  Tensor images = Tensor::Zeros(Shape(dims));
  Tensor logits = (*model)->Forward(images, /*training=*/true);
  EXPECT_EQ(observer.yields, layers - 1);
  (*model)->Backward(Tensor::Zeros(logits.shape()));
  EXPECT_EQ(observer.yields, 2 * (layers - 1));
  // A part of the model: between its own layers only.
  const int split = (*model)->split_index();
  observer.yields = 0;
  (*model)->Forward(images, /*training=*/false, 0, split);
  EXPECT_EQ(observer.yields, split - 1);
  (*model)->set_wait_observer(nullptr);
  (*model)->Forward(images, /*training=*/false);
  EXPECT_EQ(observer.yields, split - 1);
}

// The host's kernels, counting the calls a model's layers make.
class CountingBackend final : public CpuBackend {
 public:
  std::string name() const override { return "counting"; }
  absl::Status Relu(const Tensor& x, const Tensor& y) const override {
    ++calls["relu"];
    return CpuBackend::Relu(x, y);
  }
  absl::Status ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) const override {
    ++calls["relu_backward"];
    return CpuBackend::ReluBackward(y, dy, dx);
  }
  absl::Status BroadcastRows(const Tensor& bias, const Tensor& out) const override {
    ++calls["broadcast_rows"];
    return CpuBackend::BroadcastRows(bias, out);
  }
  absl::Status SumRows(const Tensor& m, const Tensor& sums, bool accumulate) const override {
    ++calls["sum_rows"];
    return CpuBackend::SumRows(m, sums, accumulate);
  }
  absl::Status Gemm(bool transpose_a, bool transpose_b, float alpha, const Tensor& a,
                    const Tensor& b, float beta, const Tensor& c) const override {
    ++calls["gemm"];
    return CpuBackend::Gemm(transpose_a, transpose_b, alpha, a, b, beta, c);
  }
  mutable std::map<std::string, int> calls;
};

TEST(ModelTest, LayersComputeThroughTheBackendTheModelIsBuiltOn) {
  auto config = LoadJobConfig(testing::kConfig);
  ASSERT_TRUE(config.ok()) << config.status();
  CountingBackend backend;
  auto model = Model::Build(config->model, 1, backend);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<int64_t> dims = {2};
  for (int64_t d : (*model)->input_shape().dims()) dims.push_back(d);
  Tensor logits = (*model)->Forward(Tensor::Zeros(Shape(dims)), /*training=*/true);
  (*model)->Backward(Tensor::Zeros(logits.shape()));
  // The default model: relu after conv1, conv2 and fc1; linear fc1 and fc2
  // (a product forward, two backward: weights and input).
  const std::map<std::string, int> expected = {
      {"relu", 3}, {"relu_backward", 3}, {"broadcast_rows", 2}, {"sum_rows", 2}, {"gemm", 6}};
  EXPECT_EQ(backend.calls, expected);
  // The same weights as on the host's backend: the backend changes where,
  // not what.
  auto host = Model::Build(config->model, 1);
  ASSERT_TRUE(host.ok());
  EXPECT_EQ((*host)->parameters()[0]->value.ToVector(),
            (*model)->parameters()[0]->value.ToVector());
}

TEST(ModelTest, ALayerTypeThatDoesNotRunOnTheBackendsDeviceIsRefusedByName) {
  // Every shipped layer type, the MoE layer included, runs on every
  // backend; a type registered for the host alone (here, a ReLU by another
  // name) is refused on the checking device.
  const Backend& check = **BackendRegistry::Global().Find("check");
  auto moe = LoadJobConfig(testing::kMoeConfig);
  ASSERT_TRUE(moe.ok()) << moe.status();
  EXPECT_TRUE(Model::Build(moe->model, 1, check).ok());
  static const bool registered = [] {
    LayerType host_only = *LayerRegistry::Global().Find("relu");
    host_only.name = "host_only_relu";
    host_only.devices = {Device::kCpu};
    return LayerRegistry::Global().Register(std::move(host_only)).ok();
  }();
  ASSERT_TRUE(registered);
  auto config = ParseJobConfig(Edited(R"({"type": "relu", "name": "relu2"})",
                                      R"({"type": "host_only_relu", "name": "relu2"})"),
                               "job.json");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(Model::Build(config->model, 1).ok());
  auto model = Model::Build(config->model, 1, check);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "model.layers[4] (host_only_relu \"relu2\"): host_only_relu layers do not run on the "
            "check backend");
}

TEST(JobConfigTest, AugmentationIsOffByDefaultAndCheckedWhenAsked) {
  auto plain = LoadJobConfig(testing::kConfig);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->data.augment.enabled());
  const std::string from = R"("std": [0.3530])";
  auto augmented = ParseJobConfig(
      Edited(from,
             std::string(from) + R"(, "augment": {"crop_padding": 4, "horizontal_flip": true})"),
      "augmented");
  ASSERT_TRUE(augmented.ok()) << augmented.status();
  EXPECT_EQ(augmented->data.augment.crop_padding, 4);
  EXPECT_TRUE(augmented->data.augment.horizontal_flip);
  // Processes that augment differently are different jobs.
  EXPECT_NE(JobIdentity(*plain), JobIdentity(*augmented));
  EXPECT_EQ(ErrorOf(Edited(from, std::string(from) + R"(, "augment": {"crop_padding": -1})")),
            "job.json: data.augment.crop_padding: must be >= 0, got -1");
  EXPECT_EQ(ErrorOf(Edited(from, std::string(from) + R"(, "augment": {"crop_padding": 28})")),
            "job.json: data.augment.crop_padding: 28 is not smaller than the image ([28, 28, 1])");
  EXPECT_EQ(ErrorOf(Edited(from, std::string(from) + R"(, "augment": {"flip": true})")),
            "job.json: data.augment.flip: unknown field");
}

TEST(JobConfigTest, AConvolutionAlgorithmIsCheckedAndLeftOutOfTheIdentity) {
  const std::string conv1 = R"("name": "conv1", "out_channels": 32, "kernel": 3, "padding": 1)";
  EXPECT_EQ(ErrorOf(Edited(conv1, conv1 + R"(, "algorithm": "fft")")),
            "job.json: model.layers[0].algorithm: unknown convolution algorithm \"fft\" (auto, "
            "direct or winograd)");
  auto plain = LoadJobConfig(testing::kConfig);
  auto direct = ParseJobConfig(Edited(conv1, conv1 + R"(, "algorithm": "direct")"), "direct");
  ASSERT_TRUE(plain.ok() && direct.ok()) << direct.status();
  EXPECT_EQ(direct->model.layers[0].algorithm, "direct");
  // How a layer computes is no part of what the job computes.
  EXPECT_EQ(JobIdentity(*plain), JobIdentity(*direct));
}

TEST(JobConfigTest, FcBatchingIsGatheredByDefaultAndCheckedWhenGiven) {
  auto plain = LoadJobConfig(testing::kConfig);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->cluster.fc_batching, "gathered");
  const std::string from = R"("fc_workers": 1})";
  auto arrival =
      ParseJobConfig(Edited(from, R"("fc_workers": 1, "fc_batching": "arrival"})"), "arrival");
  ASSERT_TRUE(arrival.ok()) << arrival.status();
  EXPECT_EQ(arrival->cluster.fc_batching, "arrival");
  EXPECT_NE(JobIdentity(*plain), JobIdentity(*arrival));
  EXPECT_EQ(ErrorOf(Edited(from, R"("fc_workers": 1, "fc_batching": "each"})")),
            "job.json: cluster.fc_batching: unknown FC batching \"each\" (use gathered or "
            "arrival)");
}

TEST(JobConfigTest, UnknownLayerType) {
  EXPECT_EQ(ErrorOf(Edited(R"("type": "relu", "name": "relu2")", R"("type": "gelu")")),
            "job.json: model.layers[4].type: unknown layer type \"gelu\" (known: avgpool2d, "
            "batchnorm2d, conv2d, dropout, flatten, global_avgpool, linear, maxpool2d, moe, relu, "
            "residual)");
}

TEST(JobConfigTest, MissingField) {
  EXPECT_EQ(ErrorOf(Edited(R"("name": "fc1", "out_features": 512)", R"("name": "fc1")")),
            "job.json: model.layers[7].out_features: missing field");
  EXPECT_EQ(ErrorOf(Edited(R"("type": "sgd", "lr": 0.05,)", R"("type": "sgd",)")),
            "job.json: optimizer.lr: missing field");
}

TEST(JobConfigTest, WrongTypeAndUnknownField) {
  EXPECT_EQ(ErrorOf(Edited(R"("batch_size": 64)", R"("batch_size": "64")")),
            "job.json: training.batch_size: expected an integer, got string \"64\"");
  EXPECT_EQ(ErrorOf(Edited(R"("batch_size": 64)", R"("batchsize": 64)")),
            "job.json: training.batchsize: unknown field");
}

TEST(JobConfigTest, ShapesThatDoNotChain) {
  // Without flatten, fc1 gets an image.
  EXPECT_EQ(ErrorOf(Edited(R"({"type": "flatten", "name": "flatten"},)", "")),
            "model.layers[6] (linear \"fc1\"): linear needs a vector input [F], got [7, 7, 64] "
            "(put a flatten layer before it)");
  // A head that does not end in `classes` outputs.
  EXPECT_EQ(ErrorOf(Edited(R"("name": "fc2", "out_features": 10)",
                           R"("name": "fc2", "out_features": 12)")),
            "model.layers: the last layer outputs [12] per sample, but the model has 10 classes "
            "(end with a linear layer of out_features 10)");
}

TEST(JobConfigTest, SplitMustNameALayer) {
  EXPECT_EQ(ErrorOf(Edited(R"("split_after": "pool2")", R"("split_after": "pool9")")),
            "job.json: model.split_after: no layer is named \"pool9\"");
}

TEST(JobConfigTest, InvalidJsonNamesLineAndSource) {
  const std::string error = ErrorOf("{\"data\": }");
  EXPECT_NE(error.find("job.json: invalid JSON"), std::string::npos) << error;
}

TEST(JobConfigTest, MissingFileIsNotFound) {
  EXPECT_EQ(LoadJobConfig("/nonexistent/job.json").status().code(), absl::StatusCode::kNotFound);
}

// A spec carries the config with its overrides and the mode; read back, it
// is the same job (same identity) with the same overrides.
TEST(JobSpecTest, ASpecReadBackIsTheSameJobWithItsOverrides) {
  auto config = LoadJobConfig(testing::kConfig);
  ASSERT_TRUE(config.ok()) << config.status();
  config->training.batch_size = 256;  // as --batch-size would
  config->training.max_steps = 7;
  config->cluster.conv_workers = 3;
  auto spec = ParseJobSpec(JobSpecText(*config, "stanza"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->mode, "stanza");
  EXPECT_EQ(spec->config.training.batch_size, 256);
  EXPECT_EQ(spec->config.training.max_steps, 7);
  EXPECT_EQ(spec->config.cluster.conv_workers, 3);
  EXPECT_EQ(JobIdentity(spec->config), JobIdentity(*config));
  config->training.batch_size = 64;
  EXPECT_NE(JobIdentity(spec->config), JobIdentity(*config));
}

TEST(JobSpecTest, AConfigBuiltInCodeHasNoSpec) { EXPECT_EQ(JobSpecText(JobConfig{}, "ps"), ""); }

TEST(JobSpecTest, AMalformedSpecIsRefusedNamingWhatIsWrong) {
  auto config = LoadJobConfig(testing::kConfig);
  ASSERT_TRUE(config.ok()) << config.status();
  const std::string good = JobSpecText(*config, "ps");
  auto error = [](const std::string& text) {
    return std::string(ParseJobSpec(text).status().message());
  };
  EXPECT_NE(error("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error(R"({"mode": "ps"})").find("config: missing"), std::string::npos);
  std::string bad_mode = good;
  bad_mode.replace(bad_mode.find(R"("mode":"ps")"), 11, R"("mode":"xy")");
  EXPECT_NE(error(bad_mode).find("mode \"xy\""), std::string::npos) << error(bad_mode);
  std::string bad_field = good;
  bad_field.replace(bad_field.find(R"("batch_size":64)"), 15, R"("batch_size":-1)");
  EXPECT_NE(error(bad_field).find("training.batch_size"), std::string::npos) << error(bad_field);
  EXPECT_NE(error(R"({"config": {}, "mode": "ps", "extra": 1})").find("unknown field \"extra\""),
            std::string::npos);
}

}  // namespace
}  // namespace strata
