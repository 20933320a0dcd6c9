// Residual blocks: the layer (forward against its branches summed, backward
// against finite differences, the refusal of branches that disagree) and the
// "residual" layer type (nested names, errors that name the block's path,
// identity).
#include <gtest/gtest.h>

#include "core/layers/batchnorm2d.h"
#include "core/layers/conv2d.h"
#include "core/layers/residual.h"
#include "core/model/job_config.h"
#include "core/model/job_identity.h"
#include "core/model/model.h"
#include "tests/core/gradient_check.h"
#include "tests/core/reference_ops.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::ExpectGradientsMatch;
using testing::GradientCheckOptions;
using testing::RandomTensor;

std::unique_ptr<Layer> Conv(const std::string& name, const Shape& input, Conv2dOptions options) {
  auto conv = Conv2d::Create(name, input, options);
  EXPECT_TRUE(conv.ok()) << conv.status();
  return *std::move(conv);
}

std::unique_ptr<Layer> Norm(const std::string& name, const Shape& input) {
  auto bn = BatchNorm2d::Create(name, input, {});
  EXPECT_TRUE(bn.ok()) << bn.status();
  return *std::move(bn);
}

// Moves parameters off their constant starts (BatchNorm's 1 and 0), so the
// checks see every term.
void Perturb(Layer& layer, uint64_t seed) {
  Rng rng(seed);
  layer.InitParameters(rng);
  for (Parameter* p : layer.parameters()) {
    for (int64_t i = 0; i < p->value.numel(); ++i) p->value.data()[i] += rng.Uniform(-0.3f, 0.3f);
  }
}

TEST(ResidualTest, AnIdentityShortcutAddsTheInputToTheBody) {
  const Shape in{5, 5, 3};
  LayerChain body;
  body.push_back(Conv("b.conv", in, {3, 3, 1, 1}));
  auto block = Residual::Create("b", in, std::move(body), {});
  ASSERT_TRUE(block.ok()) << block.status();
  Perturb(**block, 1);
  const Tensor x = RandomTensor({2, 5, 5, 3}, 2);
  const Tensor y = (*block)->Forward(x, /*training=*/false);
  auto params = (*block)->parameters();
  ASSERT_EQ(params.size(), 2u);
  const Tensor conv = reference::Conv2d(x, params[0]->value, params[1]->value, 1, 1);
  Tensor want = conv.Clone();
  for (int64_t i = 0; i < want.numel(); ++i) want.data()[i] += x.data()[i];
  EXPECT_LT(MaxAbsDiff(y, want), 1e-4f);
  // The sum really includes the input: without it the output is the conv's.
  EXPECT_GT(MaxAbsDiff(y, conv), 0.1f);
  ExpectGradientsMatch(**block, x);
}

// The downsampling block of a ResNet: a strided body with BatchNorm and a
// 1x1 strided projection with BatchNorm on the shortcut.
TEST(ResidualTest, AProjectionBlockMatchesFiniteDifferences) {
  const Shape in{6, 6, 2};
  LayerChain body;
  body.push_back(Conv("b.conv1", in, {4, 3, 2, 1, /*bias=*/false}));
  body.push_back(Norm("b.bn1", {3, 3, 4}));
  body.push_back(Conv("b.conv2", {3, 3, 4}, {4, 3, 1, 1, /*bias=*/false}));
  LayerChain shortcut;
  shortcut.push_back(Conv("b.proj", in, {4, 1, 2, 0, /*bias=*/false}));
  shortcut.push_back(Norm("b.proj_bn", {3, 3, 4}));
  auto block = Residual::Create("b", in, std::move(body), std::move(shortcut));
  ASSERT_TRUE(block.ok()) << block.status();
  EXPECT_EQ((*block)->output_shape(), Shape({3, 3, 4}));
  Perturb(**block, 3);
  std::vector<std::string> names;
  for (Parameter* p : (*block)->parameters()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"b.conv1.weight", "b.bn1.weight", "b.bn1.bias",
                                             "b.conv2.weight", "b.proj.weight", "b.proj_bn.weight",
                                             "b.proj_bn.bias"}));
  ASSERT_EQ((*block)->state_buffers().size(), 4u);
  EXPECT_EQ((*block)->state_buffers()[2]->name, "b.proj_bn.running_mean");
  GradientCheckOptions go;
  go.step = 1e-3f;
  ExpectGradientsMatch(**block, RandomTensor({3, 6, 6, 2}, 4), go);
}

TEST(ResidualTest, WithoutInputGradientTheBlockStillFillsEveryParameterGradient) {
  const Shape in{4, 4, 2};
  LayerChain body;
  body.push_back(Conv("b.conv", in, {2, 3, 1, 1}));
  LayerChain shortcut;
  shortcut.push_back(Conv("b.proj", in, {2, 1, 1, 0}));
  auto block = Residual::Create("b", in, std::move(body), std::move(shortcut));
  ASSERT_TRUE(block.ok());
  Perturb(**block, 5);
  const Tensor y = (*block)->Forward(RandomTensor({2, 4, 4, 2}, 6), true);
  for (Parameter* p : (*block)->parameters()) p->grad.Fill(0.0f);
  EXPECT_FALSE((*block)->Backward(RandomTensor(y.shape(), 7), false).defined());
  for (Parameter* p : (*block)->parameters()) {
    float largest = 0.0f;
    for (int64_t i = 0; i < p->grad.numel(); ++i)
      largest = std::max(largest, std::fabs(p->grad.data()[i]));
    EXPECT_GT(largest, 0.0f) << p->name;
  }
}

TEST(ResidualTest, BranchesThatEndInDifferentShapesAreRefused) {
  const Shape in{6, 6, 2};
  LayerChain body;
  body.push_back(Conv("b.conv", in, {4, 3, 2, 1}));
  auto identity = Residual::Create("b", in, std::move(body), {});
  EXPECT_EQ(identity.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(identity.status().message(),
            "the body outputs [3, 3, 4] per sample but the identity shortcut passes [6, 6, 2]; "
            "the two are summed, so they must agree (a shortcut of one conv2d with kernel 1, the "
            "body's stride and its out_channels projects the input)");
  EXPECT_EQ(Residual::Create("b", in, {}, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

// A small residual model in a job config: a stem, a projection block, an
// identity block, and the head.
constexpr char kResidualConfig[] = R"({
  "data": {"dataset": "synthetic", "train_size": 64, "test_size": 16},
  "model": {
    "input": [8, 8, 2], "classes": 3, "split_after": "pool",
    "layers": [
      {"type": "conv2d", "name": "stem", "out_channels": 4, "padding": 1, "bias": false},
      {"type": "residual", "name": "block1",
       "body": [{"type": "conv2d", "out_channels": 8, "stride": 2, "padding": 1, "bias": false},
                {"type": "batchnorm2d"}, {"type": "relu"},
                {"type": "conv2d", "out_channels": 8, "padding": 1, "bias": false},
                {"type": "batchnorm2d"}],
       "shortcut": [{"type": "conv2d", "name": "proj", "out_channels": 8, "kernel": 1,
                     "stride": 2, "bias": false}]},
      {"type": "relu"},
      {"type": "residual", "name": "block2",
       "body": [{"type": "conv2d", "out_channels": 8, "padding": 1}]},
      {"type": "global_avgpool", "name": "pool"},
      {"type": "linear", "name": "fc", "out_features": 3}
    ]
  },
  "optimizer": {"type": "sgd", "lr": 0.1},
  "training": {"batch_size": 8, "epochs": 1}
})";

std::string Edited(const std::string& from, const std::string& to) {
  std::string text = kResidualConfig;
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(ResidualTypeTest, NestedLayersAreNamedAfterTheirBlock) {
  auto config = ParseJobConfig(kResidualConfig, "job.json");
  ASSERT_TRUE(config.ok()) << config.status();
  const LayerSpec& block1 = config->model.layers[1];
  ASSERT_EQ(block1.body.size(), 5u);
  EXPECT_EQ(block1.body[0].name, "block1.conv2d1");
  EXPECT_EQ(block1.body[3].name, "block1.conv2d2");
  EXPECT_EQ(block1.body[4].name, "block1.batchnorm2d2");
  EXPECT_EQ(block1.body[4].path, "model.layers[1].body[4]");
  EXPECT_EQ(block1.shortcut[0].name, "block1.proj");
  EXPECT_FALSE(block1.shortcut[0].bias);
  EXPECT_EQ(config->model.split_index, 5);

  auto model = Model::Build(config->model, 1);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_STREQ((*model)->layer(1).kind(), "residual");
  // stem 72; block1: 288 + 16 + 576 + 16 + proj 32; block2: 576 + 8; fc 27
  EXPECT_EQ((*model)->num_parameter_elements(), 72 + 288 + 16 + 576 + 16 + 32 + 576 + 8 + 27);
  EXPECT_EQ((*model)->state_buffers().size(), 4u);
  EXPECT_EQ((*model)->parameters(0, 5).size(), 10u);  // stem 1, block1 7, block2 2
}

TEST(ResidualTypeTest, ErrorsNameTheBlockAndThePartByPath) {
  using testing::ConfigError;
  // A body that changes the shape without a projection.
  EXPECT_EQ(ConfigError(Edited(R"("body": [{"type": "conv2d", "out_channels": 8, "padding": 1}])",
                               R"("body": [{"type": "conv2d", "out_channels": 6, "padding": 1}])")),
            "model.layers[3] (residual \"block2\"): the body outputs [4, 4, 6] per sample but the "
            "identity shortcut passes [4, 4, 8]; the two are summed, so they must agree (a "
            "shortcut of one conv2d with kernel 1, the body's stride and its out_channels "
            "projects the input)");
  // A part that does not fit its input names its path inside the block.
  EXPECT_EQ(ConfigError(Edited(R"("kernel": 1,)", R"("kernel": 11,)")),
            "model.layers[1] (residual \"block1\"): shortcut[0] (conv2d \"block1.proj\"): conv2d "
            "kernel 11 is larger than the padded input [8, 8, 4]");
  // Config errors inside a block name the field's full path.
  EXPECT_EQ(ConfigError(Edited(R"({"type": "relu"},)", R"({"type": "relu", "p": 1},)")),
            "job.json: model.layers[1].body[2].p: unknown field");
  EXPECT_EQ(ConfigError(Edited(R"("shortcut": [{"type": "conv2d", "name": "proj",)",
                               R"("shortcut": [{"type": "conv2d", "name": "",)")),
            "job.json: model.layers[1].shortcut[0].name: must not be empty");
  EXPECT_EQ(ConfigError(Edited(R"("body": [{"type": "conv2d", "out_channels": 8, "padding": 1}])",
                               R"("body": [])")),
            "job.json: model.layers[3].body: expected a non-empty array of layers");
  EXPECT_EQ(ConfigError(Edited(R"("name": "block2",)", R"("name": "block2", "shortcut": {},)")),
            "job.json: model.layers[3].shortcut: expected an array of layers");
  // Names are unique across blocks and the top level.
  EXPECT_EQ(ConfigError(Edited(R"({"type": "global_avgpool", "name": "pool"})",
                               R"({"type": "global_avgpool", "name": "block1.proj"})")),
            "job.json: model.layers[4].name: duplicate layer name \"block1.proj\"");
  // The split is between top-level layers.
  EXPECT_EQ(ConfigError(Edited(R"("split_after": "pool")", R"("split_after": "block1.proj")")),
            "job.json: model.split_after: \"block1.proj\" is inside a residual block; the split "
            "must be after a layer of model.layers");
}

TEST(ResidualTypeTest, BlocksNestAndTheirPartsAreNamedAlongThePath) {
  auto config =
      ParseJobConfig(Edited(R"("body": [{"type": "conv2d", "out_channels": 8, "padding": 1}]},)",
                            R"("body": [{"type": "residual", "name": "inner",
                          "body": [{"type": "conv2d", "out_channels": 8, "padding": 1}]}]},)"),
                     "job.json");
  ASSERT_TRUE(config.ok()) << config.status();
  const LayerSpec& inner = config->model.layers[3].body[0];
  EXPECT_EQ(inner.name, "block2.inner");
  EXPECT_EQ(inner.body[0].name, "block2.inner.conv2d1");
  EXPECT_EQ(inner.body[0].path, "model.layers[3].body[0].body[0]");
  auto model = Model::Build(config->model, 1);
  ASSERT_TRUE(model.ok()) << model.status();
  bool found = false;
  for (Parameter* p : (*model)->parameters()) found |= p->name == "block2.inner.conv2d1.weight";
  EXPECT_TRUE(found);
  // The inner block holds what block2 held: the same parameters as before.
  EXPECT_EQ((*model)->num_parameter_elements(), 72 + 288 + 16 + 576 + 16 + 32 + 576 + 8 + 27);
}

TEST(ResidualTypeTest, TheIdentityCoversTheBlocksParts) {
  auto config = ParseJobConfig(kResidualConfig, "job.json");
  auto no_bias =
      ParseJobConfig(Edited(R"("stride": 2, "bias": false}]})", R"("stride": 2}]})"), "job.json");
  auto identity_shortcut =
      ParseJobConfig(Edited(R"("body": [{"type": "conv2d", "out_channels": 8, "padding": 1}]},)",
                            R"("body": [{"type": "conv2d", "out_channels": 8, "padding": 1}],
                               "shortcut": []},)"),
                     "job.json");
  ASSERT_TRUE(config.ok() && no_bias.ok() && identity_shortcut.ok());
  EXPECT_NE(JobIdentity(*config), JobIdentity(*no_bias));  // a field of a shortcut's part
  // An empty shortcut is the identity, as an absent one.
  EXPECT_EQ(JobIdentity(*config), JobIdentity(*identity_shortcut));
}

}  // namespace
}  // namespace strata
