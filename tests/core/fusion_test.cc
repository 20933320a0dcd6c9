// ReLU fusion (core/layers/fusion.h): a BatchNorm2d that absorbs the ReLU
// after it computes what the two layers compute apart, in training and in
// evaluation, forward and backward; FuseRelus fuses only what it may; a
// model fuses inside residual blocks and on each side of its split, never
// across it.
#include <gtest/gtest.h>

#include "core/layers/activation.h"
#include "core/layers/batchnorm2d.h"
#include "core/layers/conv2d.h"
#include "core/layers/fusion.h"
#include "core/model/job_config.h"
#include "core/model/model.h"
#include "core/layers/residual.h"
#include "tests/core/gradient_check.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::RandomTensor;

// [bn, relu] over {4, 4, 8} images, with gamma and beta moved off 1 and 0
// so that some outputs are rectified and others not.
LayerChain NormThenRelu() {
  const Shape shape{4, 4, 8};
  LayerChain chain;
  auto bn = BatchNorm2d::Create("bn", shape, {});
  EXPECT_TRUE(bn.ok()) << bn.status();
  chain.push_back(*std::move(bn));
  chain.push_back(std::make_unique<Relu>("relu", shape));
  Rng rng(5);
  for (Parameter* p : chain[0]->parameters()) {
    for (int64_t i = 0; i < p->value.numel(); ++i) p->value.data()[i] += rng.Uniform(-0.5f, 0.5f);
  }
  return chain;
}

Tensor Forward(LayerChain& chain, const Tensor& x, bool training) {
  Tensor y = x;
  for (auto& layer : chain) y = layer->Forward(y, training);
  return y;
}

Tensor Backward(LayerChain& chain, const Tensor& dy) {
  Tensor g = dy;
  for (size_t i = chain.size(); i-- > 0;) g = chain[i]->Backward(g, /*need_input_grad=*/true);
  return g;
}

TEST(FusionTest, ABatchNormThatAbsorbsItsReluComputesWhatTheTwoComputeApart) {
  LayerChain apart = NormThenRelu();
  LayerChain fused = NormThenRelu();
  ASSERT_EQ(FuseRelus(fused, 0, fused.size()), 1);
  EXPECT_TRUE(dynamic_cast<Relu&>(*fused[1]).absorbed());

  const Tensor x = RandomTensor({6, 4, 4, 8}, 11);
  const Tensor y_apart = Forward(apart, x, /*training=*/true);
  const Tensor y_fused = Forward(fused, x, /*training=*/true);
  EXPECT_LT(MaxAbsDiff(y_fused, y_apart), 1e-6f);
  int rectified = 0;
  for (float v : y_fused.ToVector()) rectified += v == 0.0f;
  EXPECT_GT(rectified, y_fused.numel() / 8);  // the mask matters in this test

  const Tensor dy = RandomTensor(y_apart.shape(), 12);
  EXPECT_LT(MaxAbsDiff(Backward(fused, dy), Backward(apart, dy)), 1e-5f);
  for (int i = 0; i < 2; ++i) {
    EXPECT_LT(MaxAbsDiff(fused[0]->parameters()[i]->grad, apart[0]->parameters()[i]->grad), 1e-5f)
        << fused[0]->parameters()[i]->name;
  }
  // Evaluation (running statistics) rectifies too.
  EXPECT_LT(MaxAbsDiff(Forward(fused, x, false), Forward(apart, x, false)), 1e-6f);
}

TEST(FusionTest, FusedGradientsMatchFiniteDifferences) {
  LayerChain fused = NormThenRelu();
  ASSERT_EQ(FuseRelus(fused, 0, fused.size()), 1);
  testing::GradientCheckOptions go;
  go.step = 1e-3f;
  // The BatchNorm layer alone now is BN followed by ReLU.
  testing::ExpectGradientsMatch(*fused[0], RandomTensor({4, 4, 4, 8}, 13), go);
}

TEST(FusionTest, OnlyAdjacentPairsInsideTheRangeWhoseFirstLayerAgreesAreFused) {
  LayerChain split = NormThenRelu();
  EXPECT_EQ(FuseRelus(split, 0, 1), 0);  // the pair straddles the range's end
  EXPECT_FALSE(dynamic_cast<Relu&>(*split[1]).absorbed());

  LayerChain conv_relu;  // a convolution does not absorb a ReLU
  auto conv = Conv2d::Create("conv", {4, 4, 8}, {8, 3, 1, 1});
  ASSERT_TRUE(conv.ok());
  conv_relu.push_back(*std::move(conv));
  conv_relu.push_back(std::make_unique<Relu>("relu", Shape{4, 4, 8}));
  EXPECT_EQ(FuseRelus(conv_relu, 0, conv_relu.size()), 0);
  EXPECT_FALSE(dynamic_cast<Relu&>(*conv_relu[1]).absorbed());
}

int AbsorbedRelus(const LayerChain& chain);

int AbsorbedRelus(Layer& layer) {
  if (auto* relu = dynamic_cast<Relu*>(&layer)) return relu->absorbed() ? 1 : 0;
  if (auto* block = dynamic_cast<Residual*>(&layer)) {
    return AbsorbedRelus(block->body()) + AbsorbedRelus(block->shortcut());
  }
  return 0;
}

int AbsorbedRelus(const LayerChain& chain) {
  int n = 0;
  for (const auto& layer : chain) n += AbsorbedRelus(*layer);
  return n;
}

TEST(FusionTest, AResidualModelFusesEveryNormThenReluInsideAndOutsideItsBlocks) {
  auto config = LoadJobConfig(std::string(STRATA_SOURCE_DIR) + "/configs/resnet20_cifar.json");
  ASSERT_TRUE(config.ok()) << config.status();
  auto model = Model::Build(config->model, 1);
  ASSERT_TRUE(model.ok()) << model.status();
  int absorbed = 0;
  for (int i = 0; i < (*model)->num_layers(); ++i) absorbed += AbsorbedRelus((*model)->layer(i));
  // The stem's bn1+relu and each of the nine blocks' bn1+relu1; the ReLUs
  // after each block's sum follow a residual layer, which does not absorb.
  EXPECT_EQ(absorbed, 10);
}

TEST(FusionTest, APairAcrossTheSplitStaysApart) {
  // fashion_mnist_bn's trunk ends at pool2; move the split between bn2 and relu2.
  const std::string text = testing::EditedConfig(testing::kBatchNormConfig,
                                                 R"("split_after": "pool2")",
                                                 R"("split_after": "bn2")");
  auto config = ParseJobConfig(text, "job.json");
  ASSERT_TRUE(config.ok()) << config.status();
  auto model = Model::Build(config->model, 1);
  ASSERT_TRUE(model.ok()) << model.status();
  const int split = (*model)->split_index();
  ASSERT_STREQ((*model)->layer(split - 1).kind(), "batchnorm2d");
  EXPECT_FALSE(dynamic_cast<Relu&>((*model)->layer(split)).absorbed());  // relu2, across
  EXPECT_TRUE(dynamic_cast<Relu&>((*model)->layer(2)).absorbed());       // relu1, in the trunk
}

}  // namespace
}  // namespace strata
