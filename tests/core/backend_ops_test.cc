// Every op on every backend present (core/ops/backend.h), from one table:
// each row runs the op on the backend's device and compares it with a
// double-precision reference on the host; each backward row also compares
// the backend's gradient with central differences of the backend's own
// forward. An op a backend lacks is listed as not run; the CPU backend
// must have them all. Where CUDA is built, its backend joins when a device
// is visible (and is listed as absent otherwise).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/ops/backend.h"
#include "tests/core/gradient_check.h"
#ifdef STRATA_HAVE_CUDA
#include "core/ops/cuda/cuda_backend.h"
#endif

namespace strata {
namespace {

using Tensors = std::vector<Tensor>;
using strata::testing::RandomTensor;

constexpr int64_t kRows = 37, kCols = 129;  // odd sizes: no kernel gets a round shape
constexpr float kAlpha = -0.75f;

// Values in [-1, 1) kept at least 0.05 from 0 (ReLU's kink), so finite
// differences never straddle it.
Tensor AwayFromZero(const Shape& shape, uint64_t seed) {
  Tensor t = RandomTensor(shape, seed);
  float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (std::fabs(p[i]) < 0.05f) p[i] = p[i] < 0 ? -0.05f - p[i] : 0.05f + p[i];
  }
  return t;
}

struct OpRow {
  std::string name;
  std::function<Tensors()> inputs;  // host tensors
  // The op on `b` over device copies of the inputs; returns its output(s) on the host.
  std::function<absl::StatusOr<Tensors>(const Backend& b, const Tensors& in)> run;
  std::function<std::vector<std::vector<double>>(const Tensors& in)> reference;
};

absl::StatusOr<Tensors> Upload(const Backend& b, const Tensors& host) {
  Tensors out;
  for (const Tensor& t : host) {
    absl::StatusOr<Tensor> d = b.Upload(t);
    if (!d.ok()) return d.status();
    out.push_back(*std::move(d));
  }
  return out;
}

// Runs `op` on device copies of `in` and downloads the tensors named by `outputs`.
absl::StatusOr<Tensors> OnDevice(const Backend& b, const Tensors& in, std::vector<int> outputs,
                                 const std::function<absl::Status(const Tensors&)>& op) {
  absl::StatusOr<Tensors> d = Upload(b, in);
  if (!d.ok()) return d.status();
  if (absl::Status s = op(*d); !s.ok()) return s;
  Tensors out;
  for (int i : outputs) {
    absl::StatusOr<Tensor> h = b.Download((*d)[i]);
    if (!h.ok()) return h.status();
    out.push_back(*std::move(h));
  }
  return out;
}

std::vector<double> Doubles(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.data()[i];
  return v;
}

std::vector<OpRow> Table() {
  const Shape flat({kRows * kCols});
  const Shape matrix({kRows, kCols});
  const Shape row({kCols});
  std::vector<OpRow> rows;
  rows.push_back({"relu",
                  [=] {
                    return Tensors{AwayFromZero(flat, 1), Tensor::Empty(flat)};
                  },
                  [](const Backend& b, const Tensors& in) {
                    return OnDevice(b, in, {1},
                                    [&](const Tensors& d) { return b.Relu(d[0], d[1]); });
                  },
                  [](const Tensors& in) {
                    std::vector<double> y = Doubles(in[0]);
                    for (double& v : y) v = v > 0 ? v : 0;
                    return std::vector<std::vector<double>>{y};
                  }});
  rows.push_back(
      {"relu_backward",
       [=] {
         return Tensors{AwayFromZero(flat, 2), RandomTensor(flat, 3), Tensor::Empty(flat)};
       },
       [](const Backend& b, const Tensors& in) {
         return OnDevice(b, in, {2},
                         [&](const Tensors& d) { return b.ReluBackward(d[0], d[1], d[2]); });
       },
       [](const Tensors& in) {
         std::vector<double> y = Doubles(in[0]), dy = Doubles(in[1]), dx(y.size());
         for (size_t i = 0; i < y.size(); ++i) dx[i] = y[i] > 0 ? dy[i] : 0;
         return std::vector<std::vector<double>>{dx};
       }});
  rows.push_back(
      {"multiply",
       [=] {
         return Tensors{RandomTensor(flat, 4), RandomTensor(flat, 5), Tensor::Empty(flat)};
       },
       [](const Backend& b, const Tensors& in) {
         return OnDevice(b, in, {2},
                         [&](const Tensors& d) { return b.Multiply(d[0], d[1], d[2]); });
       },
       [](const Tensors& in) {
         std::vector<double> x = Doubles(in[0]), m = Doubles(in[1]);
         for (size_t i = 0; i < x.size(); ++i) x[i] *= m[i];
         return std::vector<std::vector<double>>{x};
       }});
  rows.push_back(
      {"add",
       [=] {
         return Tensors{RandomTensor(flat, 12), RandomTensor(flat, 13), Tensor::Empty(flat)};
       },
       [](const Backend& b, const Tensors& in) {
         return OnDevice(b, in, {2}, [&](const Tensors& d) { return b.Add(d[0], d[1], d[2]); });
       },
       [](const Tensors& in) {
         std::vector<double> a = Doubles(in[0]), c = Doubles(in[1]);
         for (size_t i = 0; i < a.size(); ++i) a[i] += c[i];
         return std::vector<std::vector<double>>{a};
       }});
  rows.push_back({"axpy",
                  [=] {
                    return Tensors{RandomTensor(flat, 6), RandomTensor(flat, 7)};
                  },
                  [](const Backend& b, const Tensors& in) {
                    return OnDevice(b, in, {1},
                                    [&](const Tensors& d) { return b.Axpy(kAlpha, d[0], d[1]); });
                  },
                  [](const Tensors& in) {
                    std::vector<double> x = Doubles(in[0]), y = Doubles(in[1]);
                    for (size_t i = 0; i < x.size(); ++i) y[i] += kAlpha * x[i];
                    return std::vector<std::vector<double>>{y};
                  }});
  rows.push_back({"scale", [=] { return Tensors{RandomTensor(flat, 8)}; },
                  [](const Backend& b, const Tensors& in) {
                    return OnDevice(b, in, {0},
                                    [&](const Tensors& d) { return b.Scale(kAlpha, d[0]); });
                  },
                  [](const Tensors& in) {
                    std::vector<double> x = Doubles(in[0]);
                    for (double& v : x) v *= kAlpha;
                    return std::vector<std::vector<double>>{x};
                  }});
  rows.push_back({"broadcast_rows",
                  [=] {
                    return Tensors{RandomTensor(row, 9), Tensor::Empty(matrix)};
                  },
                  [](const Backend& b, const Tensors& in) {
                    return OnDevice(b, in, {1},
                                    [&](const Tensors& d) { return b.BroadcastRows(d[0], d[1]); });
                  },
                  [](const Tensors& in) {
                    std::vector<double> bias = Doubles(in[0]), out;
                    for (int64_t r = 0; r < kRows; ++r)
                      out.insert(out.end(), bias.begin(), bias.end());
                    return std::vector<std::vector<double>>{out};
                  }});
  rows.push_back({"sum_rows",
                  [=] {
                    return Tensors{RandomTensor(matrix, 10), Tensor::Empty(row)};
                  },
                  [](const Backend& b, const Tensors& in) {
                    return OnDevice(b, in, {1},
                                    [&](const Tensors& d) { return b.SumRows(d[0], d[1]); });
                  },
                  [](const Tensors& in) {
                    std::vector<double> m = Doubles(in[0]), sums(kCols, 0.0);
                    for (int64_t r = 0; r < kRows; ++r)
                      for (int64_t c = 0; c < kCols; ++c) sums[c] += m[r * kCols + c];
                    return std::vector<std::vector<double>>{sums};
                  }});
  return rows;
}

// A backward row: the gradient of L(x) = sum(R * forward(x)) with respect
// to x, from the backend's backward op, against central differences of L
// computed with the backend's forward op.
struct GradientRow {
  std::string name;  // "forward / backward"
  Shape x_shape, y_shape;
  // y = forward(x) on the backend (host tensors in and out).
  std::function<absl::StatusOr<Tensor>(const Backend& b, const Tensor& x)> forward;
  // dx from x, y = forward(x) and R = dL/dy.
  std::function<absl::StatusOr<Tensor>(const Backend& b, const Tensor& x, const Tensor& y,
                                       const Tensor& r)>
      backward;
};

std::vector<GradientRow> GradientTable() {
  const Shape flat({kRows * kCols}), matrix({kRows, kCols}), row({kCols});
  const Tensor mask = RandomTensor(flat, 11);
  auto one = [](absl::StatusOr<Tensors> t) -> absl::StatusOr<Tensor> {
    if (!t.ok()) return t.status();
    return (*t)[0];
  };
  return {
      {"relu / relu_backward", flat, flat,
       [=](const Backend& b, const Tensor& x) {
         return one(OnDevice(b, {x, Tensor::Empty(flat)}, {1},
                             [&](const Tensors& d) { return b.Relu(d[0], d[1]); }));
       },
       [=](const Backend& b, const Tensor&, const Tensor& y, const Tensor& r) {
         return one(OnDevice(b, {y, r, Tensor::Empty(flat)}, {2},
                             [&](const Tensors& d) { return b.ReluBackward(d[0], d[1], d[2]); }));
       }},
      {"multiply / multiply", flat, flat,
       [=](const Backend& b, const Tensor& x) {
         return one(OnDevice(b, {x, mask, Tensor::Empty(flat)}, {2},
                             [&](const Tensors& d) { return b.Multiply(d[0], d[1], d[2]); }));
       },
       [=](const Backend& b, const Tensor&, const Tensor&, const Tensor& r) {
         return one(OnDevice(b, {r, mask, Tensor::Empty(flat)}, {2},
                             [&](const Tensors& d) { return b.Multiply(d[0], d[1], d[2]); }));
       }},
      {"scale / scale", flat, flat,
       [=](const Backend& b, const Tensor& x) {
         return one(OnDevice(b, {x}, {0}, [&](const Tensors& d) { return b.Scale(kAlpha, d[0]); }));
       },
       [=](const Backend& b, const Tensor&, const Tensor&, const Tensor& r) {
         return one(OnDevice(b, {r}, {0}, [&](const Tensors& d) { return b.Scale(kAlpha, d[0]); }));
       }},
      {"broadcast_rows / sum_rows", row, matrix,
       [=](const Backend& b, const Tensor& x) {
         return one(OnDevice(b, {x, Tensor::Empty(matrix)}, {1},
                             [&](const Tensors& d) { return b.BroadcastRows(d[0], d[1]); }));
       },
       [=](const Backend& b, const Tensor&, const Tensor&, const Tensor& r) {
         return one(OnDevice(b, {r, Tensor::Empty(row)}, {1},
                             [&](const Tensors& d) { return b.SumRows(d[0], d[1]); }));
       }},
  };
}

class BackendOpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
#ifdef STRATA_HAVE_CUDA
    const absl::Status cuda = RegisterCudaBackend();
    if (!cuda.ok())
      std::printf("[ backends ] cuda: absent (%s)\n", std::string(cuda.message()).c_str());
#else
    std::printf("[ backends ] cuda: not built (no nvcc at configure time)\n");
#endif
  }
};

TEST_F(BackendOpsTest, EveryOpOnEveryBackendMatchesTheReference) {
  int compared = 0;
  for (const Backend* b : BackendRegistry::Global().backends()) {
    for (const OpRow& row : Table()) {
      SCOPED_TRACE(b->name() + " " + row.name);
      const Tensors in = row.inputs();
      absl::StatusOr<Tensors> got = row.run(*b, in);
      if (absl::IsUnimplemented(got.status()) && b->name() != "cpu") {
        std::printf("[ backends ] %s: %s not run (%s)\n", b->name().c_str(), row.name.c_str(),
                    std::string(got.status().message()).c_str());
        continue;
      }
      ASSERT_TRUE(got.ok()) << got.status();
      const auto want = row.reference(in);
      ASSERT_EQ(got->size(), want.size());
      for (size_t o = 0; o < want.size(); ++o) {
        ASSERT_EQ((*got)[o].numel(), static_cast<int64_t>(want[o].size()));
        double worst = 0;
        for (size_t i = 0; i < want[o].size(); ++i) {
          worst = std::max(worst, std::fabs((*got)[o].data()[i] - want[o][i]));
        }
        // float32 sums of up to kRows terms of |x| < 1.
        EXPECT_LE(worst, 1e-5) << "output " << o;
      }
      ++compared;
    }
  }
  EXPECT_GE(compared, static_cast<int>(Table().size()));  // the CPU backend ran every row
}

TEST_F(BackendOpsTest, EveryBackwardMatchesFiniteDifferencesOfItsForward) {
  constexpr float kStep = 1e-2f;
  for (const Backend* b : BackendRegistry::Global().backends()) {
    for (const GradientRow& row : GradientTable()) {
      SCOPED_TRACE(b->name() + " " + row.name);
      const Tensor x = AwayFromZero(row.x_shape, 12);
      const Tensor r = RandomTensor(row.y_shape, 13);
      absl::StatusOr<Tensor> y = row.forward(*b, x);
      if (absl::IsUnimplemented(y.status()) && b->name() != "cpu") continue;
      ASSERT_TRUE(y.ok()) << y.status();
      absl::StatusOr<Tensor> dx = row.backward(*b, x, *y, r);
      if (absl::IsUnimplemented(dx.status()) && b->name() != "cpu") continue;
      ASSERT_TRUE(dx.ok()) << dx.status();
      auto loss = [&](const Tensor& at) {
        absl::StatusOr<Tensor> out = row.forward(*b, at);
        EXPECT_TRUE(out.ok()) << out.status();
        double l = 0;
        for (int64_t i = 0; out.ok() && i < out->numel(); ++i) {
          l += static_cast<double>(r.data()[i]) * out->data()[i];
        }
        return l;
      };
      // A spread of elements (every 97th), each perturbed both ways.
      for (int64_t i = 0; i < x.numel(); i += 97) {
        Tensor plus = x.Clone(), minus = x.Clone();
        plus.data()[i] += kStep;
        minus.data()[i] -= kStep;
        const double numeric = (loss(plus) - loss(minus)) / (2.0 * kStep);
        EXPECT_NEAR(dx->data()[i], numeric, 2e-3 * std::max(1.0, std::fabs(numeric)))
            << "element " << i;
      }
    }
  }
}

TEST_F(BackendOpsTest, MismatchedOperandsAreRefusedByName) {
  const Backend* cpu = *BackendRegistry::Global().Find("cpu");
  const absl::Status s = cpu->Relu(Tensor::Empty({4}), Tensor::Empty({5}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "relu: operands of 4 and 5 elements");
  const absl::Status rows = cpu->SumRows(Tensor::Empty({3, 4}), Tensor::Empty({3}));
  EXPECT_EQ(rows.message(), "sum_rows: a matrix of shape [3, 4] and a row of 3 elements");
  EXPECT_EQ(BackendRegistry::Global().Find("tpu").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace strata
