// Every op on every backend present (core/ops/backend.h), from one table:
// each row runs the op on the backend's device and compares it with a
// double-precision reference on the host; each backward row also compares
// the backend's gradient with central differences of the backend's own
// forward. An op a backend lacks is listed as not run; the CPU backend
// must have them all. Where CUDA is built, its backend joins when a device
// is visible (and is listed as absent otherwise).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/ops/backend.h"
#include "core/ops/shared/counter_random.h"
#include "core/status.h"
#include "tests/core/backend_test_support.h"
#include "tests/core/gradient_check.h"
#include "tests/core/op_table.h"
#include "tests/core/routing_op_rows.h"

namespace strata {
namespace {

using strata::testing::RandomTensor;
using strata::testing::Tensors;
using strata::testing::UploadAll;
using testing::Doubles;
using testing::OnDevice;
using testing::OpRow;

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

// c = alpha op(a) op(b) + beta c for one choice of transposes.
struct GemmCase {
  bool transpose_a, transpose_b;
  float beta;  // 0: c holds NaN, which must not leak into the result
};

std::vector<GemmCase> GemmCases() {
  return {{false, false, 0.5f},
          {false, true, 0.5f},
          {true, false, 0.5f},
          {true, true, 0.5f},
          {false, true, 0.0f}};
}

constexpr int64_t kGemmM = kRows, kGemmK = kCols, kGemmN = 23;

OpRow GemmRow(const GemmCase& g) {
  const Shape a_shape = g.transpose_a ? Shape{kGemmK, kGemmM} : Shape{kGemmM, kGemmK};
  const Shape b_shape = g.transpose_b ? Shape{kGemmN, kGemmK} : Shape{kGemmK, kGemmN};
  OpRow row;
  row.name = std::string("gemm ") + (g.transpose_a ? "T" : "N") + (g.transpose_b ? "T" : "N") +
             (g.beta == 0.0f ? " beta=0" : "");
  row.inputs = [=] {
    Tensor c = g.beta == 0.0f ? Tensor::Full({kGemmM, kGemmN}, std::nanf(""))
                              : RandomTensor({kGemmM, kGemmN}, 19);
    return Tensors{RandomTensor(a_shape, 17), RandomTensor(b_shape, 18), c};
  };
  row.run = [=](const Backend& b, const Tensors& in) {
    return OnDevice(b, in, {2}, [&](const Tensors& d) {
      return b.Gemm(g.transpose_a, g.transpose_b, kAlpha, d[0], d[1], g.beta, d[2]);
    });
  };
  row.reference = [=](const Tensors& in) {
    const float* a = in[0].data();
    const float* bm = in[1].data();
    std::vector<double> c(kGemmM * kGemmN);
    for (int64_t i = 0; i < kGemmM; ++i) {
      for (int64_t j = 0; j < kGemmN; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < kGemmK; ++k) {
          const double av = g.transpose_a ? a[k * kGemmM + i] : a[i * kGemmK + k];
          const double bv = g.transpose_b ? bm[j * kGemmK + k] : bm[k * kGemmN + j];
          sum += av * bv;
        }
        const double old = g.beta == 0.0f ? 0.0 : in[2].data()[i * kGemmN + j];
        c[i * kGemmN + j] = kAlpha * sum + g.beta * old;
      }
    }
    return std::vector<std::vector<double>>{c};
  };
  row.tolerance = 1e-4;  // float sums of kGemmK products
  return row;
}

constexpr int64_t kClasses = 10;
constexpr float kLossScale = 0.5f;

// Logits {kRows, kClasses} spread over [-3, 3), labels cycling through the classes.
Tensors LossInputs() {
  Tensor logits = RandomTensor({kRows, kClasses}, 20);
  for (int64_t i = 0; i < logits.numel(); ++i) logits.data()[i] *= 3.0f;
  Tensor labels = Tensor::Empty({kRows}, DType::kI32);
  for (int64_t i = 0; i < kRows; ++i)
    labels.i32_data()[i] = static_cast<int32_t>((i * 7) % kClasses);
  return {logits, labels, Tensor::Empty({kRows}), Tensor::Empty({kRows}),
          Tensor::Empty({kRows, kClasses})};
}

OpRow LossRow() {
  OpRow row;
  row.name = "softmax_cross_entropy";
  row.inputs = LossInputs;
  row.run = [](const Backend& b, const Tensors& in) {
    return OnDevice(b, in, {2, 3, 4}, [&](const Tensors& d) {
      return b.SoftmaxCrossEntropy(d[0], d[1], kLossScale, d[2], d[3], d[4]);
    });
  };
  row.reference = [](const Tensors& in) {
    std::vector<double> loss(kRows), hit(kRows), grad(kRows * kClasses);
    for (int64_t i = 0; i < kRows; ++i) {
      const float* x = in[0].data() + i * kClasses;
      const int32_t label = in[1].i32_data()[i];
      double sum = 0;
      for (int64_t j = 0; j < kClasses; ++j) sum += std::exp(static_cast<double>(x[j]));
      loss[i] = std::log(sum) - x[label];
      hit[i] = std::max_element(x, x + kClasses) - x == label ? 1.0 : 0.0;
      for (int64_t j = 0; j < kClasses; ++j) {
        grad[i * kClasses + j] =
            (std::exp(static_cast<double>(x[j])) / sum - (j == label ? 1.0 : 0.0)) * kLossScale /
            kRows;
      }
    }
    return std::vector<std::vector<double>>{loss, hit, grad};
  };
  return row;
}

constexpr uint64_t kDropoutSeed = 77;
constexpr uint64_t kDropoutStream = 5;
constexpr float kDropoutP = 0.3f;

// The mask is defined as a function of (seed, stream, index): the reference
// evaluates that function, and DropoutMasksAreFairAndIndependent checks it.
OpRow DropoutMaskRow() {
  const Shape flat({kRows * kCols});
  OpRow row;
  row.name = "dropout_mask";
  row.inputs = [=] { return Tensors{Tensor::Empty(flat)}; };
  row.run = [](const Backend& b, const Tensors& in) {
    return OnDevice(b, in, {0}, [&](const Tensors& d) {
      return b.DropoutMask(kDropoutSeed, kDropoutStream, kDropoutP, d[0]);
    });
  };
  row.reference = [=](const Tensors&) {
    std::vector<double> mask(flat.numel());
    for (int64_t i = 0; i < flat.numel(); ++i) {
      mask[i] = CounterUniform(kDropoutSeed, kDropoutStream, i) < kDropoutP
                    ? 0.0
                    : 1.0 / (1.0 - kDropoutP);
    }
    return std::vector<std::vector<double>>{mask};
  };
  return row;
}

constexpr float kLr = 0.05f, kGradScale = 0.5f, kDecay = 0.01f;
constexpr int64_t kUpdateStep = 3;

UpdateRule RuleOf(UpdateKind kind, float momentum) {
  UpdateRule r;
  r.kind = kind;
  r.momentum = kind == UpdateKind::kSgd ? momentum : 0.0f;
  r.nesterov = kind == UpdateKind::kSgd && momentum > 0.0f;
  r.weight_decay = kDecay;
  return r;
}

// One update at step kUpdateStep from random state (Adam's second moment
// kept positive), written out in double from the optimizers' definitions.
OpRow UpdateRow(UpdateKind kind, float momentum) {
  const UpdateRule rule = RuleOf(kind, momentum);
  const int64_t n = kRows * kCols;
  const int slots = rule.state_slots();
  OpRow row;
  row.name = std::string("apply_update ") + (kind == UpdateKind::kSgd
                                                 ? (momentum > 0 ? "sgd nesterov" : "sgd")
                                                 : (kind == UpdateKind::kAdam ? "adam" : "adamw"));
  row.inputs = [=] {
    Tensors in{RandomTensor({n}, 21), RandomTensor({n}, 22)};
    in.push_back(slots > 0 ? RandomTensor({slots, n}, 23) : Tensor());
    if (kind != UpdateKind::kSgd) {
      for (int64_t i = n; i < 2 * n; ++i) in[2].data()[i] = std::fabs(in[2].data()[i]);
    }
    return in;
  };
  row.run = [=](const Backend& b, const Tensors& in) -> absl::StatusOr<Tensors> {
    STRATA_ASSIGN_OR_RETURN(Tensors d, UploadAll(b, in));  // d[2] undefined without state
    STRATA_RETURN_IF_ERROR(b.ApplyUpdate(rule, d[0], d[1], d[2], kLr, kUpdateStep, kGradScale));
    // The parameter, then the state where the rule keeps one.
    return testing::DownloadAll(b, slots > 0 ? Tensors{d[0], d[2]} : Tensors{d[0]});
  };
  row.reference = [=](const Tensors& in) {
    std::vector<double> p = Doubles(in[0]), g = Doubles(in[1]);
    std::vector<double> state = slots > 0 ? Doubles(in[2]) : std::vector<double>();
    for (int64_t i = 0; i < n; ++i) {
      double d = g[i] * kGradScale;
      if (kind == UpdateKind::kSgd) {
        d += kDecay * p[i];
        if (momentum == 0.0f) {
          p[i] -= kLr * d;
          continue;
        }
        state[i] = momentum * state[i] + d;
        p[i] -= kLr * (d + momentum * state[i]);  // nesterov
        continue;
      }
      if (kind == UpdateKind::kAdamW) {
        p[i] -= kLr * kDecay * p[i];
      } else {
        d += kDecay * p[i];
      }
      double& m = state[i];
      double& v = state[n + i];
      m = rule.beta1 * m + (1 - rule.beta1) * d;
      v = rule.beta2 * v + (1 - rule.beta2) * d * d;
      const double m_hat = m / (1 - std::pow(rule.beta1, kUpdateStep));
      const double v_hat = v / (1 - std::pow(rule.beta2, kUpdateStep));
      p[i] -= kLr * m_hat / (std::sqrt(v_hat) + rule.epsilon);
    }
    std::vector<std::vector<double>> out{p};
    if (slots > 0) out.push_back(state);
    return out;
  };
  return row;
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
                    return OnDevice(b, in, {1}, [&](const Tensors& d) {
                      return b.SumRows(d[0], d[1], /*accumulate=*/false);
                    });
                  },
                  [](const Tensors& in) {
                    std::vector<double> m = Doubles(in[0]), sums(kCols, 0.0);
                    for (int64_t r = 0; r < kRows; ++r)
                      for (int64_t c = 0; c < kCols; ++c) sums[c] += m[r * kCols + c];
                    return std::vector<std::vector<double>>{sums};
                  }});
  rows.push_back({"sum_rows (accumulate)",
                  [=] {
                    return Tensors{RandomTensor(matrix, 14), RandomTensor(row, 15)};
                  },
                  [](const Backend& b, const Tensors& in) {
                    return OnDevice(b, in, {1}, [&](const Tensors& d) {
                      return b.SumRows(d[0], d[1], /*accumulate=*/true);
                    });
                  },
                  [](const Tensors& in) {
                    std::vector<double> m = Doubles(in[0]), sums = Doubles(in[1]);
                    for (int64_t r = 0; r < kRows; ++r)
                      for (int64_t c = 0; c < kCols; ++c) sums[c] += m[r * kCols + c];
                    return std::vector<std::vector<double>>{sums};
                  }});
  rows.push_back(
      {"fill", [=] { return Tensors{Tensor::Empty(flat)}; },
       [](const Backend& b, const Tensors& in) {
         return OnDevice(b, in, {0}, [&](const Tensors& d) { return b.Fill(kAlpha, d[0]); });
       },
       [=](const Tensors&) {
         return std::vector<std::vector<double>>{std::vector<double>(flat.numel(), kAlpha)};
       }});
  rows.push_back(
      {"copy",
       [=] {
         return Tensors{RandomTensor(flat, 16), Tensor::Empty(flat)};
       },
       [](const Backend& b, const Tensors& in) {
         return OnDevice(b, in, {1}, [&](const Tensors& d) { return b.Copy(d[0], d[1]); });
       },
       [](const Tensors& in) { return std::vector<std::vector<double>>{Doubles(in[0])}; }});
  for (const GemmCase& g : GemmCases()) rows.push_back(GemmRow(g));
  rows.push_back(LossRow());
  rows.push_back(DropoutMaskRow());
  for (UpdateKind kind : {UpdateKind::kSgd, UpdateKind::kAdam, UpdateKind::kAdamW}) {
    rows.push_back(UpdateRow(kind, /*momentum=*/0.9f));
  }
  rows.push_back(UpdateRow(UpdateKind::kSgd, /*momentum=*/0.0f));
  for (OpRow& routing : testing::RoutingRows()) rows.push_back(std::move(routing));
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
  const Tensor weights = RandomTensor({kGemmN, kCols}, 24);
  const Tensor inputs = RandomTensor(matrix, 25);
  const Tensor labels = LossInputs()[1];
  return {
      {"gemm / gemm (input)", matrix, Shape{kRows, kGemmN},
       [=](const Backend& b, const Tensor& x) {
         return one(OnDevice(
             b, {x, weights, Tensor::Empty({kRows, kGemmN})}, {2},
             [&](const Tensors& d) { return b.Gemm(false, true, 1.0f, d[0], d[1], 0.0f, d[2]); }));
       },
       [=](const Backend& b, const Tensor&, const Tensor&, const Tensor& r) {
         return one(OnDevice(b, {r, weights, Tensor::Empty(matrix)}, {2}, [&](const Tensors& d) {
           return b.Gemm(false, false, 1.0f, d[0], d[1], 0.0f, d[2]);
         }));
       }},
      {"gemm / gemm (weights)", Shape{kGemmN, kCols}, Shape{kRows, kGemmN},
       [=](const Backend& b, const Tensor& w) {
         return one(OnDevice(
             b, {inputs, w, Tensor::Empty({kRows, kGemmN})}, {2},
             [&](const Tensors& d) { return b.Gemm(false, true, 1.0f, d[0], d[1], 0.0f, d[2]); }));
       },
       [=](const Backend& b, const Tensor&, const Tensor&, const Tensor& r) {
         return one(OnDevice(
             b, {r, inputs, Tensor::Empty({kGemmN, kCols})}, {2},
             [&](const Tensors& d) { return b.Gemm(true, false, 1.0f, d[0], d[1], 0.0f, d[2]); }));
       }},
      // The op's gradient is that of the mean loss; weighting row i by
      // r_i needs r_i * N on the host.
      {"softmax_cross_entropy (row losses / gradient)", Shape{kRows, kClasses}, Shape{kRows},
       [=](const Backend& b, const Tensor& x) {
         return one(OnDevice(b, {x, labels, Tensor::Empty({kRows}), Tensor::Empty({kRows})}, {2},
                             [&](const Tensors& d) {
                               return b.SoftmaxCrossEntropy(d[0], d[1], 1.0f, d[2], d[3], Tensor());
                             }));
       },
       [=](const Backend& b, const Tensor& x, const Tensor&,
           const Tensor& r) -> absl::StatusOr<Tensor> {
         const Tensor grad_shape = Tensor::Empty({kRows, kClasses});
         STRATA_ASSIGN_OR_RETURN(
             Tensor dx,
             one(OnDevice(b,
                          {x, labels, Tensor::Empty({kRows}), Tensor::Empty({kRows}), grad_shape},
                          {4}, [&](const Tensors& d) {
                            return b.SoftmaxCrossEntropy(d[0], d[1], 1.0f, d[2], d[3], d[4]);
                          })));
         for (int64_t i = 0; i < kRows; ++i) {
           for (int64_t j = 0; j < kClasses; ++j)
             dx.data()[i * kClasses + j] *= r.data()[i] * kRows;
         }
         return dx;
       }},
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
                             [&](const Tensors& d) { return b.SumRows(d[0], d[1], false); }));
       }},
  };
}

const Backend& CheckingDevice() { return **BackendRegistry::Global().Find("check"); }

class BackendOpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::JoinCudaBackendWherePresent(); }
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
        const std::vector<double> values = Doubles((*got)[o]);
        double worst = 0;
        for (size_t i = 0; i < want[o].size(); ++i) {
          worst = std::max(worst, std::fabs(values[i] - want[o][i]));
        }
        EXPECT_LE(worst, row.tolerance) << "output " << o;
      }
      ++compared;
    }
  }
  // The CPU backend and the checking device ran every row.
  EXPECT_GE(compared, 2 * static_cast<int>(Table().size()));
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

// A later download holds the values of its point in the backend's order:
// ops queued after it (here, overwriting the tensor) do not reach it, and
// an upload's source may change as soon as the upload returns.
TEST_F(BackendOpsTest, TransfersHoldTheValuesOfTheirPointInTheOrder) {
  for (const Backend* b : BackendRegistry::Global().backends()) {
    SCOPED_TRACE(b->name());
    Tensor host = Tensor::FromVector(Shape({3}), {1.0f, 2.0f, 3.0f});
    absl::StatusOr<Tensor> x = b->Upload(host);
    ASSERT_TRUE(x.ok()) << x.status();
    host.data()[0] = 100.0f;  // after Upload returned
    const PendingValue<Tensor> before = b->DownloadLater(*x);
    ASSERT_TRUE(b->Fill(7.0f, *x).ok());
    const PendingValue<Tensor> after = b->DownloadLater(*x);
    ASSERT_TRUE(after.Get().ok()) << after.Get().status();  // read first: out of order
    ASSERT_TRUE(before.Get().ok()) << before.Get().status();
    EXPECT_EQ(before.Get()->ToVector(), (std::vector<float>{1.0f, 2.0f, 3.0f}));
    EXPECT_EQ(after.Get()->ToVector(), (std::vector<float>{7.0f, 7.0f, 7.0f}));
  }
  const PendingValue<Tensor> wrong = CheckingDevice().DownloadLater(Tensor::Empty({2}));
  EXPECT_EQ(wrong.Get().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(BackendOpsTest, MismatchedOperandsAreRefusedByName) {
  const Backend* cpu = *BackendRegistry::Global().Find("cpu");
  const absl::Status s = cpu->Relu(Tensor::Empty({4}), Tensor::Empty({5}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "relu: operands of 4 and 5 elements");
  const absl::Status rows = cpu->SumRows(Tensor::Empty({3, 4}), Tensor::Empty({3}), false);
  EXPECT_EQ(rows.message(), "sum_rows: a matrix of shape [3, 4] and a row of 3 elements");
  EXPECT_EQ(BackendRegistry::Global().Find("tpu").status().code(), absl::StatusCode::kNotFound);
}

TEST(CheckingDeviceTest, TheHostTouchingOneOfItsTensorsCrashes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Backend& check = CheckingDevice();
  absl::StatusOr<Tensor> t = check.Upload(Tensor::Full({4}, 1.0f));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->device(), Device::kCheck);
  EXPECT_DEATH(t->data()[0] = 2.0f, "");
  EXPECT_DEATH(std::printf("%f\n", static_cast<double>(t->data()[3])), "");
  // Its own ops may, and leave it guarded after.
  ASSERT_TRUE(check.Scale(2.0f, *t).ok());
  EXPECT_EQ(check.Download(*t)->ToVector(), std::vector<float>(4, 2.0f));
  EXPECT_DEATH(t->Fill(0.0f), "");
}

TEST(CheckingDeviceTest, HostTensorsAreRefusedByName) {
  const Backend& check = CheckingDevice();
  Tensor host = Tensor::Zeros({4});
  absl::StatusOr<Tensor> device = check.Upload(host);
  ASSERT_TRUE(device.ok());
  const absl::Status s = check.Relu(host, *device);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "relu: an operand is f32 on the cpu device; this backend takes f32 on the check "
            "device");
  EXPECT_EQ(check.Download(host).status().message(),
            "download takes a tensor of the check device, got one on cpu");
  // The host backend likewise refuses the checking device's tensors.
  EXPECT_EQ(HostBackend().Scale(1.0f, *device).message(),
            "scale: an operand is f32 on the check device; this backend takes f32 on the cpu "
            "device");
}

TEST(DropoutMaskTest, MasksAreFairReproducibleAndIndependentPerStream) {
  constexpr int64_t n = 200000;
  constexpr float p = 0.3f;
  auto mask = [&](uint64_t seed, uint64_t stream) {
    Tensor m = Tensor::Empty({n});
    EXPECT_TRUE(HostBackend().DropoutMask(seed, stream, p, m).ok());
    return m.ToVector();
  };
  const std::vector<float> a = mask(1, 0), again = mask(1, 0), next = mask(1, 1),
                           other = mask(2, 0);
  EXPECT_EQ(a, again);
  int64_t dropped = 0, differ_stream = 0, differ_seed = 0;
  for (int64_t i = 0; i < n; ++i) {
    dropped += a[i] == 0.0f;
    differ_stream += a[i] != next[i];
    differ_seed += a[i] != other[i];
    ASSERT_TRUE(a[i] == 0.0f || a[i] == 1.0f / (1.0f - p)) << a[i];
  }
  // Binomial(n, p): the standard deviation of the fraction is about 0.001.
  EXPECT_NEAR(static_cast<double>(dropped) / n, p, 0.005);
  // Independent masks differ where exactly one drops: 2p(1-p) = 0.42.
  EXPECT_NEAR(static_cast<double>(differ_stream) / n, 2 * p * (1 - p), 0.01);
  EXPECT_NEAR(static_cast<double>(differ_seed) / n, 2 * p * (1 - p), 0.01);
}

}  // namespace
}  // namespace strata
