// Every layer kernel (core/ops/layer_kernels.h: convolution, pooling,
// BatchNorm) on every backend present: against the host's kernel on the
// same inputs (the host's are checked against plain loops in layers_test),
// and each backward against central differences of the backend's own
// forward. The checking device runs every case; CUDA joins where it is
// built and a GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/ops/backend.h"
#include "core/status.h"
#include "core/util/rng.h"
#include "tests/core/backend_test_support.h"
#include "tests/core/gradient_check.h"

namespace strata {
namespace {

using testing::DownloadAll;
using testing::RandomTensor;
using testing::Tensors;
using testing::UploadAll;

Shape Nhwc(int64_t n, int64_t h, int64_t w, int64_t c) { return Shape{n, h, w, c}; }

// Values -1 + 0.05 k for a shuffled k: no two closer than 0.05, so a max
// pooling's winner never changes under finite differences of 0.01.
Tensor DistinctValues(const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::Empty(shape);
  std::vector<int64_t> order(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) order[i] = i;
  Rng rng(seed);
  for (int64_t i = t.numel() - 1; i > 0; --i) {
    std::swap(order[i], order[static_cast<int64_t>(rng.NextU64() % (i + 1))]);
  }
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = -1.0f + 0.05f * order[i];
  return t;
}

// A kernel's forward (in[0] is the input) and its backward from the
// upstream gradient `dy`: the host tensors it produces, forward outputs
// first. The kernel is made on `b` for each call.
struct KernelCase {
  std::string name;
  Tensors inputs;  // host
  Shape output_shape;
  std::function<absl::StatusOr<Tensor>(const Backend& b, const Tensors& in)> forward;
  // Gradients: the input's first, then the parameters'.
  std::function<absl::StatusOr<Tensors>(const Backend& b, const Tensors& in, const Tensor& dy)>
      backward;
  double tolerance = 1e-4;  // of the largest value of each output
  // How many leading forward elements the backward differentiates (0: all;
  // BatchNorm's running statistics that follow its output carry none).
  int64_t differentiated = 0;
  // False where the forward has kinks finite differences would straddle
  // (a fused ReLU: any input moves every output of its channel); such a
  // backward is compared with the host's only (fusion_test checks the
  // host's fused gradient against the unfused one).
  bool smooth = true;
};

KernelCase Convolution(const std::string& name, const ConvolutionShape& s, uint64_t seed) {
  KernelCase c;
  c.name = name;
  c.inputs = {RandomTensor(Nhwc(s.batch, s.height, s.width, s.in_channels), seed),
              RandomTensor({s.out_channels, s.in_channels, s.kernel, s.kernel}, seed + 1),
              s.bias ? RandomTensor({s.out_channels}, seed + 2) : Tensor()};
  c.output_shape = Nhwc(s.batch, s.out_height(), s.out_width(), s.out_channels);
  const Shape out = c.output_shape;
  c.forward = [s, out](const Backend& b, const Tensors& in) -> absl::StatusOr<Tensor> {
    STRATA_ASSIGN_OR_RETURN(Tensors d, UploadAll(b, in));
    STRATA_ASSIGN_OR_RETURN(auto kernel, b.MakeConvolution(s));
    Tensor y = b.Empty(out);
    STRATA_RETURN_IF_ERROR(kernel->Forward(d[0], d[1], d[2], y, /*training=*/false));
    return b.Download(y);
  };
  c.backward = [s, out](const Backend& b, const Tensors& in,
                        const Tensor& dy) -> absl::StatusOr<Tensors> {
    STRATA_ASSIGN_OR_RETURN(Tensors d, UploadAll(b, {in[0], in[1], in[2], dy}));
    STRATA_ASSIGN_OR_RETURN(auto kernel, b.MakeConvolution(s));
    Tensor y = b.Empty(out);
    STRATA_RETURN_IF_ERROR(kernel->Forward(d[0], d[1], d[2], y, /*training=*/true));
    Tensor dx = b.Empty(d[0].shape()), dw = b.Empty(d[1].shape());
    Tensor db = s.bias ? b.Empty({s.out_channels}) : Tensor();
    STRATA_RETURN_IF_ERROR(kernel->Backward(d[0], d[1], d[3], dw, db, dx));
    return DownloadAll(b, {dx, dw, db});
  };
  return c;
}

KernelCase Pooling(const std::string& name, const PoolingShape& s, uint64_t seed) {
  KernelCase c;
  c.name = name;
  c.inputs = {DistinctValues(Nhwc(s.batch, s.height, s.width, s.channels), seed)};
  c.output_shape = Nhwc(s.batch, s.out_height(), s.out_width(), s.channels);
  const Shape out = c.output_shape;
  c.forward = [s, out](const Backend& b, const Tensors& in) -> absl::StatusOr<Tensor> {
    STRATA_ASSIGN_OR_RETURN(Tensors d, UploadAll(b, in));
    STRATA_ASSIGN_OR_RETURN(auto kernel, b.MakePooling(s));
    Tensor y = b.Empty(out);
    STRATA_RETURN_IF_ERROR(kernel->Forward(d[0], y, /*training=*/false));
    return b.Download(y);
  };
  c.backward = [s, out](const Backend& b, const Tensors& in,
                        const Tensor& dy) -> absl::StatusOr<Tensors> {
    STRATA_ASSIGN_OR_RETURN(Tensors d, UploadAll(b, {in[0], dy}));
    STRATA_ASSIGN_OR_RETURN(auto kernel, b.MakePooling(s));
    Tensor y = b.Empty(out), dx = b.Empty(d[0].shape());
    STRATA_RETURN_IF_ERROR(kernel->Forward(d[0], y, /*training=*/true));
    STRATA_RETURN_IF_ERROR(kernel->Backward(d[1], dx));
    return DownloadAll(b, {dx});
  };
  return c;
}

// Training BatchNorm: the output, then the running statistics it moved
// (as extra forward outputs, flattened after the output).
KernelCase BatchNorm(const std::string& name, const BatchNormShape& s, uint64_t seed) {
  KernelCase c;
  c.name = name;
  const Shape x_shape = Nhwc(s.batch, s.height, s.width, s.channels);
  Tensor gamma = RandomTensor({s.channels}, seed + 1);
  for (int64_t i = 0; i < s.channels; ++i) gamma.data()[i] += 1.5f;  // away from 0
  c.inputs = {RandomTensor(x_shape, seed), gamma, RandomTensor({s.channels}, seed + 2)};
  c.output_shape = Shape{x_shape.numel() + 2 * s.channels};
  c.differentiated = x_shape.numel();
  c.smooth = !s.fused_relu;
  c.forward = [s, x_shape](const Backend& b, const Tensors& in) -> absl::StatusOr<Tensor> {
    Tensor running_var = Tensor::Full({s.channels}, 1.0f);
    STRATA_ASSIGN_OR_RETURN(
        Tensors d, UploadAll(b, {in[0], in[1], in[2], Tensor::Zeros({s.channels}), running_var}));
    STRATA_ASSIGN_OR_RETURN(auto kernel, b.MakeBatchNorm(s));
    Tensor y = b.Empty(x_shape);
    STRATA_RETURN_IF_ERROR(kernel->Forward(d[0], d[1], d[2], d[3], d[4], y, /*training=*/true));
    STRATA_ASSIGN_OR_RETURN(Tensors h, DownloadAll(b, {y, d[3], d[4]}));
    std::vector<float> all = h[0].ToVector();
    for (int i = 1; i < 3; ++i) {
      const std::vector<float> v = h[i].ToVector();
      all.insert(all.end(), v.begin(), v.end());
    }
    return Tensor::FromVector({static_cast<int64_t>(all.size())}, all);
  };
  c.backward = [s, x_shape](const Backend& b, const Tensors& in,
                            const Tensor& dy) -> absl::StatusOr<Tensors> {
    // Only the output depends on the upstream gradient of the output part.
    Tensor dy_output =
        Tensor::FromVector(x_shape, std::vector<float>(dy.data(), dy.data() + x_shape.numel()));
    STRATA_ASSIGN_OR_RETURN(Tensors d,
                            UploadAll(b, {in[0], in[1], in[2], Tensor::Zeros({s.channels}),
                                          Tensor::Full({s.channels}, 1.0f), dy_output}));
    STRATA_ASSIGN_OR_RETURN(auto kernel, b.MakeBatchNorm(s));
    Tensor y = b.Empty(x_shape);
    STRATA_RETURN_IF_ERROR(kernel->Forward(d[0], d[1], d[2], d[3], d[4], y, /*training=*/true));
    Tensor dx = b.Empty(x_shape), dgamma = b.Empty({s.channels}), dbeta = b.Empty({s.channels});
    STRATA_RETURN_IF_ERROR(
        kernel->Backward(d[0], s.fused_relu ? y : Tensor(), d[1], d[2], d[5], dgamma, dbeta, dx));
    return DownloadAll(b, {dx, dgamma, dbeta});
  };
  return c;
}

// BatchNorm in evaluation: normalised with given running statistics.
KernelCase BatchNormInference(const BatchNormShape& s, uint64_t seed) {
  KernelCase c;
  c.name = "batchnorm inference";
  const Shape x_shape = Nhwc(s.batch, s.height, s.width, s.channels);
  Tensor var = RandomTensor({s.channels}, seed + 4);
  for (int64_t i = 0; i < s.channels; ++i) var.data()[i] = std::fabs(var.data()[i]) + 0.5f;
  c.inputs = {RandomTensor(x_shape, seed), RandomTensor({s.channels}, seed + 1),
              RandomTensor({s.channels}, seed + 2), RandomTensor({s.channels}, seed + 3), var};
  c.output_shape = x_shape;
  c.forward = [s, x_shape](const Backend& b, const Tensors& in) -> absl::StatusOr<Tensor> {
    STRATA_ASSIGN_OR_RETURN(Tensors d, UploadAll(b, in));
    STRATA_ASSIGN_OR_RETURN(auto kernel, b.MakeBatchNorm(s));
    Tensor y = b.Empty(x_shape);
    STRATA_RETURN_IF_ERROR(kernel->Forward(d[0], d[1], d[2], d[3], d[4], y, /*training=*/false));
    return b.Download(y);
  };
  return c;  // no backward: evaluation only
}

std::vector<KernelCase> Cases() {
  ConvolutionShape padded{3, 9, 7, 5, 6, 3, 1, 1, true};
  ConvolutionShape strided{2, 8, 8, 4, 3, 3, 2, 0, false};
  ConvolutionShape pointwise{2, 5, 5, 16, 8, 1, 1, 0, false};
  PoolingShape max2{3, 8, 6, 5, PoolKind::kMax, 2, 2, 0};
  PoolingShape max3{2, 7, 7, 3, PoolKind::kMax, 3, 2, 1};
  PoolingShape avg3{2, 6, 5, 4, PoolKind::kAverage, 3, 1, 1};
  PoolingShape global{2, 5, 5, 6, PoolKind::kAverage, 5, 1, 0};
  BatchNormShape bn{4, 5, 3, 6, 1e-5f, 0.1f, false};
  BatchNormShape bn_relu = bn;
  bn_relu.fused_relu = true;
  return {Convolution("convolution 3x3 padded, bias", padded, 1),
          Convolution("convolution 3x3 stride 2", strided, 5),
          Convolution("convolution 1x1", pointwise, 9),
          Pooling("max pooling 2x2", max2, 13),
          Pooling("max pooling 3x3 stride 2 padded", max3, 14),
          Pooling("average pooling 3x3 padded", avg3, 15),
          Pooling("global average pooling", global, 16),
          BatchNorm("batchnorm training", bn, 17),
          BatchNorm("batchnorm training, fused relu", bn_relu, 20),
          BatchNormInference(bn, 23)};
}

double MaxAbs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(double{t.data()[i]}));
  return m;
}

class LayerKernelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::JoinCudaBackendWherePresent(); }
};

TEST_F(LayerKernelsTest, EveryKernelOnEveryBackendMatchesTheHost) {
  int compared = 0;
  for (const Backend* b : BackendRegistry::Global().backends()) {
    if (b->name() == "cpu") continue;
    for (const KernelCase& c : Cases()) {
      SCOPED_TRACE(b->name() + " " + c.name);
      absl::StatusOr<Tensor> want = c.forward(HostBackend(), c.inputs);
      ASSERT_TRUE(want.ok()) << want.status();
      absl::StatusOr<Tensor> got = c.forward(*b, c.inputs);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_LE(MaxAbsDiff(*got, *want), c.tolerance * std::max(1.0, MaxAbs(*want)));
      if (c.backward) {
        const Tensor dy = RandomTensor(c.output_shape, 99);
        absl::StatusOr<Tensors> want_grads = c.backward(HostBackend(), c.inputs, dy);
        ASSERT_TRUE(want_grads.ok()) << want_grads.status();
        absl::StatusOr<Tensors> got_grads = c.backward(*b, c.inputs, dy);
        ASSERT_TRUE(got_grads.ok()) << got_grads.status();
        for (size_t i = 0; i < want_grads->size(); ++i) {
          if (!(*want_grads)[i].defined()) continue;
          EXPECT_LE(MaxAbsDiff((*got_grads)[i], (*want_grads)[i]),
                    c.tolerance * std::max(1.0, MaxAbs((*want_grads)[i])))
              << "gradient " << i;
        }
      }
      ++compared;
    }
  }
  EXPECT_GE(compared, static_cast<int>(Cases().size()));  // the checking device ran every case
}

// d/dx of L = sum(R * forward(x)) from the backend's backward, against
// central differences of the backend's forward, for every input the
// backward gives a gradient of (the data and each parameter).
TEST_F(LayerKernelsTest, EveryBackwardMatchesFiniteDifferencesOfItsForward) {
  constexpr float kStep = 1e-2f;
  for (const Backend* b : BackendRegistry::Global().backends()) {
    for (const KernelCase& c : Cases()) {
      if (!c.backward || !c.smooth) continue;
      SCOPED_TRACE(b->name() + " " + c.name);
      Tensor r = RandomTensor(c.output_shape, 98);
      absl::StatusOr<Tensors> grads = c.backward(*b, c.inputs, r);
      ASSERT_TRUE(grads.ok()) << grads.status();
      auto loss = [&](const Tensors& at) {
        absl::StatusOr<Tensor> y = c.forward(*b, at);
        EXPECT_TRUE(y.ok()) << y.status();
        double l = 0;
        const int64_t n = c.differentiated > 0 ? c.differentiated : c.output_shape.numel();
        for (int64_t i = 0; y.ok() && i < n; ++i) {
          l += static_cast<double>(r.data()[i]) * y->data()[i];
        }
        return l;
      };
      for (size_t t = 0; t < grads->size(); ++t) {
        if (!(*grads)[t].defined()) continue;
        const Tensor& param = c.inputs[t];
        for (int64_t i = 0; i < param.numel(); i += 7) {
          Tensors plus = c.inputs, minus = c.inputs;
          plus[t] = param.Clone();
          minus[t] = param.Clone();
          plus[t].data()[i] += kStep;
          minus[t].data()[i] -= kStep;
          const double numeric = (loss(plus) - loss(minus)) / (2.0 * kStep);
          EXPECT_NEAR((*grads)[t].data()[i], numeric, 3e-3 * std::max(1.0, std::fabs(numeric)))
              << "input " << t << " element " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata
