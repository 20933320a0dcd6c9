#include "tests/core/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace strata::reference {

Tensor Conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
              int64_t padding) {
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  const int64_t o = weight.dim(0), k = weight.dim(2);
  const int64_t ho = (h + 2 * padding - k) / stride + 1, wo = (w + 2 * padding - k) / stride + 1;
  Tensor y = Tensor::Empty({n, ho, wo, o});
  const float* px = x.data();
  const float* pw = weight.data();
  float* py = y.data();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j)
        for (int64_t oc = 0; oc < o; ++oc) {
          double acc = bias.data()[oc];
          for (int64_t ki = 0; ki < k; ++ki)
            for (int64_t kj = 0; kj < k; ++kj) {
              const int64_t yi = i * stride + ki - padding, xj = j * stride + kj - padding;
              if (yi < 0 || yi >= h || xj < 0 || xj >= w) continue;
              for (int64_t ic = 0; ic < c; ++ic) {
                acc += static_cast<double>(px[((b * h + yi) * w + xj) * c + ic]) *
                       pw[((oc * c + ic) * k + ki) * k + kj];
              }
            }
          py[((b * ho + i) * wo + j) * o + oc] = static_cast<float>(acc);
        }
  return y;
}

Tensor Pool2d(const Tensor& x, bool max, int64_t kernel, int64_t stride, int64_t padding) {
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  const int64_t ho = (h + 2 * padding - kernel) / stride + 1;
  const int64_t wo = (w + 2 * padding - kernel) / stride + 1;
  Tensor y = Tensor::Empty({n, ho, wo, c});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j)
        for (int64_t ch = 0; ch < c; ++ch) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          int64_t count = 0;
          for (int64_t ki = 0; ki < kernel; ++ki)
            for (int64_t kj = 0; kj < kernel; ++kj) {
              const int64_t yi = i * stride + ki - padding, xj = j * stride + kj - padding;
              if (yi < 0 || yi >= h || xj < 0 || xj >= w) continue;
              const double v = x.data()[((b * h + yi) * w + xj) * c + ch];
              best = std::max(best, v);
              sum += v;
              ++count;
            }
          y.data()[((b * ho + i) * wo + j) * c + ch] =
              static_cast<float>(max ? best : sum / static_cast<double>(count));
        }
  return y;
}

Tensor BatchNormTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta, float epsilon) {
  const int64_t c = x.dim(3);
  const int64_t rows = x.numel() / c;
  std::vector<double> mean(c, 0.0), var(c, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ch = 0; ch < c; ++ch) mean[ch] += x.data()[r * c + ch];
  for (auto& m : mean) m /= static_cast<double>(rows);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ch = 0; ch < c; ++ch) {
      const double d = x.data()[r * c + ch] - mean[ch];
      var[ch] += d * d;
    }
  for (auto& v : var) v /= static_cast<double>(rows);
  Tensor y = Tensor::Empty(x.shape());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ch = 0; ch < c; ++ch) {
      y.data()[r * c + ch] = static_cast<float>(
          (x.data()[r * c + ch] - mean[ch]) / std::sqrt(var[ch] + epsilon) * gamma.data()[ch] +
          beta.data()[ch]);
    }
  return y;
}

Tensor Linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const int64_t n = x.dim(0), f = x.dim(1), o = weight.dim(0);
  Tensor y = Tensor::Empty({n, o});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t j = 0; j < o; ++j) {
      double acc = bias.data()[j];
      for (int64_t i = 0; i < f; ++i) {
        acc += static_cast<double>(x.data()[b * f + i]) * weight.data()[j * f + i];
      }
      y.data()[b * o + j] = static_cast<float>(acc);
    }
  return y;
}

}  // namespace strata::reference
