// Every layer: forward against the naive reference (oneDNN-backed ones), and
// backward against finite differences for inputs and parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/layers/activation.h"
#include "core/layers/batchnorm2d.h"
#include "core/layers/conv2d.h"
#include "core/layers/linear.h"
#include "core/layers/pool2d.h"
#include "core/layers/softmax_cross_entropy.h"
#include "core/ops/cpu/dnnl_convolution.h"
#include "tests/core/gradient_check.h"
#include "tests/core/reference_ops.h"

namespace strata {
namespace {

using testing::ExpectGradientsMatch;
using testing::GradientCheckOptions;
using testing::RandomTensor;

void InitRandom(Layer& layer, uint64_t seed) {
  Rng rng(seed);
  layer.InitParameters(rng);
  // Perturb parameters that start constant (BatchNorm's gamma=1, beta=0).
  for (Parameter* p : layer.parameters()) {
    for (int64_t i = 0; i < p->value.numel(); ++i) p->value.data()[i] += rng.Uniform(-0.3f, 0.3f);
  }
}

struct ConvCase {
  int64_t h, w, c, out, kernel, stride, padding;
};

class Conv2dTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dTest, ForwardMatchesReference) {
  const ConvCase p = GetParam();
  auto conv = Conv2d::Create("conv", {p.h, p.w, p.c}, {p.out, p.kernel, p.stride, p.padding});
  ASSERT_TRUE(conv.ok()) << conv.status();
  InitRandom(**conv, 1);
  for (int64_t batch : {3, 5}) {  // two batch sizes: two cached kernel sets
    Tensor x = RandomTensor({batch, p.h, p.w, p.c}, 2 + batch);
    Tensor y = (*conv)->Forward(x, false);
    Tensor want = reference::Conv2d(x, (*conv)->parameters()[0]->value,
                                    (*conv)->parameters()[1]->value, p.stride, p.padding);
    ASSERT_EQ(y.shape(), want.shape());
    EXPECT_LT(MaxAbsDiff(y, want), 1e-4f);
  }
}

TEST_P(Conv2dTest, GradientsMatchFiniteDifferences) {
  const ConvCase p = GetParam();
  auto conv = Conv2d::Create("conv", {p.h, p.w, p.c}, {p.out, p.kernel, p.stride, p.padding});
  ASSERT_TRUE(conv.ok()) << conv.status();
  InitRandom(**conv, 3);
  ExpectGradientsMatch(**conv, RandomTensor({2, p.h, p.w, p.c}, 4));
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dTest,
                         ::testing::Values(ConvCase{6, 6, 1, 4, 3, 1, 1},    // first layer
                                           ConvCase{7, 5, 3, 8, 3, 2, 1},    // stride 2
                                           ConvCase{5, 5, 16, 16, 1, 1, 0},  // 1x1
                                           ConvCase{8, 8, 4, 6, 5, 1, 2}));

TEST(Conv2dTest, WithoutBiasItHasOnlyAWeight) {
  Conv2dOptions o{4, 3, 2, 1};
  o.bias = false;
  auto conv = Conv2d::Create("conv", {7, 7, 3}, o);
  ASSERT_TRUE(conv.ok()) << conv.status();
  InitRandom(**conv, 5);
  auto params = (*conv)->parameters();
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0]->name, "conv.weight");
  Tensor x = RandomTensor({2, 7, 7, 3}, 6);
  Tensor want = reference::Conv2d(x, params[0]->value, Tensor::Zeros({4}), 2, 1);
  EXPECT_LT(MaxAbsDiff((*conv)->Forward(x, false), want), 1e-4f);
  ExpectGradientsMatch(**conv, x);
}

TEST(Conv2dTest, SkipsInputGradientWhenNotNeeded) {
  auto conv = Conv2d::Create("conv", {4, 4, 1}, {2, 3, 1, 1});
  ASSERT_TRUE(conv.ok());
  Tensor x = RandomTensor({2, 4, 4, 1}, 1);
  Tensor y = (*conv)->Forward(x, true);
  EXPECT_FALSE((*conv)->Backward(RandomTensor(y.shape(), 2), false).defined());
}

TEST(Conv2dTest, RejectsBadShapes) {
  auto vector_input = Conv2d::Create("c", {10}, {4, 3, 1, 0});
  EXPECT_EQ(vector_input.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(vector_input.status().message().find("[H, W, C]"), std::string::npos);
  auto big_kernel = Conv2d::Create("c", {2, 2, 1}, {4, 5, 1, 0});
  EXPECT_NE(big_kernel.status().message().find("larger than the padded input"), std::string::npos);
}

// The largest absolute value of `t`.
float MaxAbs(const Tensor& t) {
  float m = 0;
  for (float v : t.ToVector()) m = std::max(m, std::fabs(v));
  return m;
}

Conv2dOptions Conv3x3(int64_t out_channels, ConvAlgorithm algorithm) {
  Conv2dOptions o{out_channels, 3, 1, 1};
  o.algorithm = algorithm;
  return o;
}

TEST(Conv2dTest, WinogradMatchesTheReferenceAndFiniteDifferences) {
  auto conv = Conv2d::Create("conv", {8, 8, 64}, Conv3x3(64, ConvAlgorithm::kWinograd));
  if (conv.status().code() == absl::StatusCode::kUnimplemented) {
    GTEST_SKIP() << "no Winograd kernel on this CPU: " << conv.status().message();
  }
  ASSERT_TRUE(conv.ok()) << conv.status();
  InitRandom(**conv, 21);
  EXPECT_EQ((*conv)->AlgorithmFor(2), "winograd");
  Tensor x = RandomTensor({2, 8, 8, 64}, 22);
  Tensor want =
      reference::Conv2d(x, (*conv)->parameters()[0]->value, (*conv)->parameters()[1]->value, 1, 1);
  EXPECT_LT(MaxAbsDiff((*conv)->Forward(x, false), want), 1e-4f * MaxAbs(want));
  GradientCheckOptions go;
  go.samples_per_tensor = 20;
  ExpectGradientsMatch(**conv, x, go);
}

TEST(Conv2dTest, WinogradAndDirectAgreeWhereAutoPicksWinograd) {
  const Shape input{8, 8, 64};
  auto fast = Conv2d::Create("conv", input, Conv3x3(64, ConvAlgorithm::kAuto));
  auto direct = Conv2d::Create("conv", input, Conv3x3(64, ConvAlgorithm::kDirect));
  ASSERT_TRUE(fast.ok() && direct.ok());
  const int64_t batch = 64;  // 256 tiles of 4x4: auto's threshold for 64 channels
  if ((*fast)->AlgorithmFor(batch) != "winograd") {
    GTEST_SKIP() << "no Winograd kernel on this CPU";
  }
  EXPECT_EQ((*fast)->AlgorithmFor(4), "direct");  // 16 tiles: direct
  EXPECT_EQ((*direct)->AlgorithmFor(batch), "direct");
  InitRandom(**fast, 23);
  InitRandom(**direct, 23);
  Tensor x = RandomTensor({batch, 8, 8, 64}, 24);
  Tensor y_fast = (*fast)->Forward(x, true);
  Tensor y_direct = (*direct)->Forward(x, true);
  EXPECT_LT(MaxAbsDiff(y_fast, y_direct), 1e-5f * MaxAbs(y_direct));
  Tensor dy = RandomTensor(y_direct.shape(), 25);
  Tensor dx_fast = (*fast)->Backward(dy, true);
  Tensor dx_direct = (*direct)->Backward(dy, true);
  EXPECT_LT(MaxAbsDiff(dx_fast, dx_direct), 1e-5f * MaxAbs(dx_direct));
  for (int i = 0; i < 2; ++i) {
    const Tensor& g_fast = (*fast)->parameters()[i]->grad;
    const Tensor& g_direct = (*direct)->parameters()[i]->grad;
    EXPECT_LT(MaxAbsDiff(g_fast, g_direct), 1e-5f * MaxAbs(g_direct)) << "parameter " << i;
  }
}

// A padded 3x3 convolution of `batch` images of `input` to `out` channels.
ConvolutionShape Conv3x3Shape(int64_t batch, const Shape& input, int64_t out, int64_t stride = 1) {
  ConvolutionShape s;
  s.batch = batch;
  s.height = input[0];
  s.width = input[1];
  s.in_channels = input[2];
  s.out_channels = out;
  s.kernel = 3;
  s.stride = stride;
  s.padding = 1;
  return s;
}

TEST(Conv2dTest, WinogradPaysOnlyForTiledThreeByThreeConvolutionsWithEnoughTiles) {
  EXPECT_TRUE(WinogradPays(Conv3x3Shape(64, {8, 8, 64}, 64)));       // 256 tiles, 64 channels
  EXPECT_FALSE(WinogradPays(Conv3x3Shape(32, {8, 8, 64}, 64)));      // 128 tiles are too few
  EXPECT_TRUE(WinogradPays(Conv3x3Shape(64, {4, 4, 512}, 512)));     // 64 tiles at 512 channels
  EXPECT_FALSE(WinogradPays(Conv3x3Shape(16, {4, 4, 512}, 512)));    // 16 tiles
  EXPECT_FALSE(WinogradPays(Conv3x3Shape(64, {14, 14, 512}, 512)));  // 14 is no multiple of 4
  EXPECT_FALSE(WinogradPays(Conv3x3Shape(64, {2, 2, 512}, 512)));    // a 2x2 output in a 4x4 tile
  EXPECT_FALSE(WinogradPays(Conv3x3Shape(64, {32, 32, 32}, 32)));
  EXPECT_FALSE(WinogradPays(Conv3x3Shape(64, {32, 32, 3}, 64)));  // the first layer's 3 channels
  EXPECT_FALSE(WinogradPays(Conv3x3Shape(64, {16, 16, 64}, 64, /*stride=*/2)));
}

TEST(Conv2dTest, AWinogradRequestWithoutAKernelIsRefusedByName) {
  Conv2dOptions o{16, 1, 1, 0};
  o.algorithm = ConvAlgorithm::kWinograd;
  auto conv = Conv2d::Create("conv", {8, 8, 16}, o);
  EXPECT_EQ(conv.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(conv.status().message().find("no Winograd kernel"), std::string::npos) << conv.status();
  EXPECT_NE(conv.status().message().find("kernel 1"), std::string::npos) << conv.status();
}

TEST(Conv2dTest, AlgorithmNamesParse) {
  EXPECT_EQ(*ParseConvAlgorithm("winograd"), ConvAlgorithm::kWinograd);
  EXPECT_EQ(*ParseConvAlgorithm("direct"), ConvAlgorithm::kDirect);
  EXPECT_EQ(*ParseConvAlgorithm("auto"), ConvAlgorithm::kAuto);
  auto bad = ParseConvAlgorithm("fft");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("\"fft\""), std::string::npos);
}

struct PoolCase {
  PoolKind kind;
  int64_t kernel, stride, padding;
};

class Pool2dTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(Pool2dTest, ForwardMatchesReferenceAndGradientsMatch) {
  const PoolCase p = GetParam();
  Pool2dOptions o;
  o.kind = p.kind;
  o.kernel = p.kernel;
  o.stride = p.stride;
  o.padding = p.padding;
  auto pool = Pool2d::Create("pool", {6, 6, 3}, o);
  ASSERT_TRUE(pool.ok()) << pool.status();
  Tensor x = RandomTensor({2, 6, 6, 3}, 11);
  Tensor y = (*pool)->Forward(x, false);
  Tensor want = reference::Pool2d(x, p.kind == PoolKind::kMax, p.kernel,
                                  p.stride == 0 ? p.kernel : p.stride, p.padding);
  ASSERT_EQ(y.shape(), want.shape());
  EXPECT_LT(MaxAbsDiff(y, want), 1e-6f);
  GradientCheckOptions go;
  go.step = 1e-3f;  // small enough not to reorder the maxima of random inputs
  ExpectGradientsMatch(**pool, x, go);
}

INSTANTIATE_TEST_SUITE_P(Kinds, Pool2dTest,
                         ::testing::Values(PoolCase{PoolKind::kMax, 2, 0, 0},
                                           PoolCase{PoolKind::kMax, 3, 2, 1},
                                           PoolCase{PoolKind::kAverage, 2, 0, 0},
                                           PoolCase{PoolKind::kAverage, 3, 1, 1}));

TEST(GlobalAvgPoolTest, AveragesEachChannel) {
  Pool2dOptions o;
  o.global = true;
  auto pool = Pool2d::Create("gap", {4, 4, 5}, o);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ((*pool)->output_shape(), Shape({5}));
  Tensor x = RandomTensor({3, 4, 4, 5}, 5);
  Tensor y = (*pool)->Forward(x, false);
  ASSERT_EQ(y.shape(), Shape({3, 5}));
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t c = 0; c < 5; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < 16; ++i) sum += x.data()[(b * 16 + i) * 5 + c];
      EXPECT_NEAR(y.data()[b * 5 + c], sum / 16, 1e-5);
    }
  ExpectGradientsMatch(**pool, x);
}

TEST(BatchNorm2dTest, TrainForwardMatchesReferenceAndGradientsMatch) {
  auto bn = BatchNorm2d::Create("bn", {3, 3, 4}, {});
  ASSERT_TRUE(bn.ok());
  InitRandom(**bn, 9);
  Tensor x = RandomTensor({4, 3, 3, 4}, 10);
  Tensor y = (*bn)->Forward(x, true);
  Tensor want = reference::BatchNormTrain(x, (*bn)->parameters()[0]->value,
                                          (*bn)->parameters()[1]->value, 1e-5f);
  EXPECT_LT(MaxAbsDiff(y, want), 1e-4f);
  GradientCheckOptions go;
  go.step = 1e-3f;
  ExpectGradientsMatch(**bn, x, go);
}

TEST(BatchNorm2dTest, RunningStatisticsDriveEvaluation) {
  BatchNormOptions o;
  o.momentum = 1.0f;  // running stats = the last batch's
  auto bn = BatchNorm2d::Create("bn", {2, 2, 1}, o);
  ASSERT_TRUE(bn.ok());
  Tensor x = Tensor::FromVector({2, 2, 2, 1}, {1, 2, 3, 4, 5, 6, 7, 8});
  (*bn)->Forward(x, true);
  auto state = (*bn)->state_buffers();
  EXPECT_FLOAT_EQ(state[0]->value.data()[0], 4.5f);    // mean
  EXPECT_NEAR(state[1]->value.data()[0], 6.0f, 1e-5);  // unbiased variance 42/7
  Tensor y = (*bn)->Forward(Tensor::FromVector({1, 2, 2, 1}, {4.5f, 4.5f, 4.5f, 4.5f}), false);
  EXPECT_NEAR(y.data()[0], 0.0f, 1e-6);
}

TEST(LinearTest, ForwardMatchesReferenceAndGradientsMatch) {
  auto fc = Linear::Create("fc", {13}, 7);
  ASSERT_TRUE(fc.ok());
  InitRandom(**fc, 12);
  Tensor x = RandomTensor({5, 13}, 13);
  Tensor y = (*fc)->Forward(x, false);
  Tensor want = reference::Linear(x, (*fc)->parameters()[0]->value, (*fc)->parameters()[1]->value);
  EXPECT_LT(MaxAbsDiff(y, want), 1e-5f);
  ExpectGradientsMatch(**fc, x);
}

// Gradients accumulated over two batches equal the gradient of the two
// batches as one (the rows' gradients sum); turned off, Backward
// overwrites again.
TEST(LinearTest, AccumulatedGradientsOfTwoBatchesAreTheGradientOfBoth) {
  auto fc = Linear::Create("fc", {13}, 7);
  ASSERT_TRUE(fc.ok());
  InitRandom(**fc, 12);
  Linear& layer = **fc;
  Tensor x = RandomTensor({9, 13}, 13);
  Tensor dy = RandomTensor({9, 7}, 14);
  layer.Forward(x, true);
  layer.Backward(dy, false);
  std::vector<std::vector<float>> whole;
  for (Parameter* p : layer.parameters()) whole.push_back(p->grad.ToVector());

  layer.Forward(x.Slice(0, 4), true);
  layer.Backward(dy.Slice(0, 4), false);
  ASSERT_TRUE(layer.SetAccumulateGradients(true));
  layer.Forward(x.Slice(4, 9), true);
  layer.Backward(dy.Slice(4, 9), false);
  for (size_t j = 0; j < whole.size(); ++j) {
    const std::vector<float> summed = layer.parameters()[j]->grad.ToVector();
    for (size_t i = 0; i < summed.size(); ++i) EXPECT_NEAR(summed[i], whole[j][i], 1e-5f) << j;
  }
  ASSERT_TRUE(layer.SetAccumulateGradients(false));
  layer.Forward(x, true);
  layer.Backward(dy, false);
  for (size_t j = 0; j < whole.size(); ++j) {
    const std::vector<float> again = layer.parameters()[j]->grad.ToVector();
    for (size_t i = 0; i < again.size(); ++i) EXPECT_NEAR(again[i], whole[j][i], 1e-5f) << j;
  }
}

TEST(LayerTest, OnlyLayersThatCanAddToTheirGradientsAgreeToAccumulate) {
  auto conv = Conv2d::Create("conv", {6, 6, 2}, Conv2dOptions{3, 3, 1, 1});
  ASSERT_TRUE(conv.ok()) << conv.status();
  EXPECT_FALSE((*conv)->SetAccumulateGradients(true));
  EXPECT_TRUE((*conv)->SetAccumulateGradients(false));
  Relu relu("relu", {8});  // no parameters: nothing to overwrite
  EXPECT_TRUE(relu.SetAccumulateGradients(true));
}

TEST(LinearTest, RejectsImageInput) {
  auto fc = Linear::Create("fc", {7, 7, 64}, 10);
  EXPECT_EQ(fc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fc.status().message().find("put a flatten layer before it"), std::string::npos);
}

TEST(ReluTest, ForwardAndGradients) {
  Relu relu("relu", {8});
  Tensor x = Tensor::FromVector({1, 8}, {-2, -1, -0.5f, 0.25f, 0.5f, 1, 2, -3});
  Tensor y = relu.Forward(x, true);
  EXPECT_EQ(y.ToVector(), std::vector<float>({0, 0, 0, 0.25f, 0.5f, 1, 2, 0}));
  GradientCheckOptions go;
  go.step = 1e-3f;  // keep perturbed inputs on the same side of zero
  ExpectGradientsMatch(relu, RandomTensor({3, 8}, 3), go);
}

TEST(FlattenTest, IsAFreeReshape) {
  Flatten flatten("flatten", {2, 3, 4});
  EXPECT_EQ(flatten.output_shape(), Shape({24}));
  Tensor x = RandomTensor({2, 2, 3, 4}, 1);
  Tensor y = flatten.Forward(x, true);
  EXPECT_EQ(y.shape(), Shape({2, 24}));
  EXPECT_TRUE(y.SharesBufferWith(x));
  ExpectGradientsMatch(flatten, x);
}

TEST(DropoutTest, ZeroesAboutPAndScalesTheRest) {
  auto dropout = Dropout::Create("drop", {10000}, 0.25f, 42);
  ASSERT_TRUE(dropout.ok());
  Tensor x = Tensor::Full({1, 10000}, 1.0f);
  Tensor y = (*dropout)->Forward(x, true);
  int64_t zeros = 0;
  for (float v : y.ToVector()) {
    if (v == 0.0f) {
      ++zeros;
    } else {
      EXPECT_FLOAT_EQ(v, 1.0f / 0.75f);
    }
  }
  EXPECT_NEAR(static_cast<double>(zeros) / 10000.0, 0.25, 0.02);
  // Backward applies the same mask.
  Tensor g = (*dropout)->Backward(Tensor::Full({1, 10000}, 2.0f), true);
  for (int64_t i = 0; i < 10000; ++i) EXPECT_FLOAT_EQ(g.data()[i], 2.0f * y.data()[i]);
  // Evaluation is the identity.
  EXPECT_TRUE((*dropout)->Forward(x, false).SharesBufferWith(x));
  EXPECT_EQ(Dropout::Create("d", {3}, 1.0f, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SoftmaxCrossEntropyTest, LossAccuracyAndGradient) {
  Tensor logits = Tensor::FromVector({2, 3}, {1, 2, 3, 0, 0, 0});
  std::vector<int32_t> labels = {2, 1};
  auto result = SoftmaxCrossEntropy(logits, labels, true);
  ASSERT_TRUE(result.ok());
  const double l0 = std::log(std::exp(1) + std::exp(2) + std::exp(3)) - 3;
  const double l1 = std::log(3.0);
  EXPECT_NEAR(*result->loss.Get(), (l0 + l1) / 2, 1e-6);
  EXPECT_EQ(*result->correct.Get(), 1);  // row 1 ties: arg-max is class 0
  // Finite differences of the mean loss.
  for (int64_t i = 0; i < 6; ++i) {
    Tensor plus = logits.Clone(), minus = logits.Clone();
    plus.data()[i] += 1e-3f;
    minus.data()[i] -= 1e-3f;
    const double numeric = (*SoftmaxCrossEntropy(plus, labels, false)->loss.Get() -
                            *SoftmaxCrossEntropy(minus, labels, false)->loss.Get()) /
                           2e-3;
    EXPECT_NEAR(result->grad_logits.data()[i], numeric, 1e-3);
  }
}

TEST(SoftmaxCrossEntropyTest, RejectsBadLabels) {
  Tensor logits = Tensor::Zeros({2, 3});
  std::vector<int32_t> out_of_range = {0, 3};
  auto r = SoftmaxCrossEntropy(logits, out_of_range, false);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("label 3 of row 1 is outside [0, 3)"), std::string::npos);
  std::vector<int32_t> too_few = {0};
  EXPECT_EQ(SoftmaxCrossEntropy(logits, too_few, false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata
