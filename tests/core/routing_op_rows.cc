#include "tests/core/routing_op_rows.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "tests/core/gradient_check.h"

namespace strata::testing {
namespace {

// Odd sizes, and a capacity below the experts' average need (T * k / E), so
// that choices are dropped.
constexpr int64_t kTokens = 37, kDim = 19;
constexpr int kExperts = 6, kK = 2;
constexpr int64_t kCapacity = 9;

using Values = std::vector<std::vector<double>>;

// Logits spread over [-3, 3).
Tensor GateLogits(uint64_t seed) {
  Tensor logits = RandomTensor({kTokens, kExperts}, seed);
  for (int64_t i = 0; i < logits.numel(); ++i) logits.data()[i] *= 3.0f;
  return logits;
}

std::vector<double> SoftmaxRow(const float* z) {
  std::vector<double> p(z, z + kExperts);
  const double peak = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (double& v : p) sum += (v = std::exp(v - peak));
  for (double& v : p) v /= sum;
  return p;
}

// The k most probable experts of a row of probabilities, ties to the lower index.
std::vector<int> TopK(const std::vector<double>& p, int k) {
  std::vector<int> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&p](int a, int b) { return p[a] > p[b]; });
  order.resize(k);
  return order;
}

// The gate of `logits`, written from its definition: {probs, expert, gate}.
Values GateReference(const Tensor& logits, int k, bool normalize) {
  Values out(3);
  for (int64_t t = 0; t < kTokens; ++t) {
    const std::vector<double> p = SoftmaxRow(logits.data() + t * kExperts);
    const std::vector<int> chosen = TopK(p, k);
    double sum = 0;
    for (int e : chosen) sum += p[e];
    out[0].insert(out[0].end(), p.begin(), p.end());
    for (int e : chosen) {
      out[1].push_back(e);
      out[2].push_back(normalize ? p[e] / sum : p[e]);
    }
  }
  return out;
}

Tensor Int32s(const Shape& shape, const std::vector<int32_t>& values) {
  Tensor t = Tensor::Empty(shape, DType::kI32);
  std::copy(values.begin(), values.end(), t.i32_data());
  return t;
}

Tensor Floats(const Shape& shape, const std::vector<double>& values) {
  Tensor t = Tensor::Empty(shape);
  for (size_t i = 0; i < values.size(); ++i) t.data()[i] = static_cast<float>(values[i]);
  return t;
}

// Two distinct experts per token, spread unevenly.
Tensor Choices() {
  std::vector<int32_t> expert;
  for (int64_t t = 0; t < kTokens; ++t) {
    const int first = static_cast<int>((t * 5 + t / 7) % kExperts);
    expert.push_back(first);
    expert.push_back(static_cast<int>((first + 1 + t % (kExperts - 1)) % kExperts));
  }
  return Int32s({kTokens, kK}, expert);
}

// Ranks of a valid routing of Choices(): first choices, then second ones,
// tokens in order.
Tensor QueueRanks(const Tensor& expert) {
  std::vector<int32_t> rank(kTokens * kK), next(kExperts, 0);
  for (int i = 0; i < kK; ++i) {
    for (int64_t t = 0; t < kTokens; ++t) {
      rank[t * kK + i] = next[expert.i32_data()[t * kK + i]]++;
    }
  }
  return Int32s({kTokens, kK}, rank);
}

OpRow GateRow(int k, bool normalize) {
  OpRow row;
  row.name = "topk_gate k=" + std::to_string(k) + (normalize ? " normalised" : "");
  row.inputs = [=] {
    return Tensors{GateLogits(41), Tensor::Empty({kTokens, kExperts}),
                   Tensor::Empty({kTokens, k}, DType::kI32), Tensor::Empty({kTokens, k})};
  };
  row.run = [=](const Backend& b, const Tensors& in) {
    return OnDevice(b, in, {1, 2, 3}, [&](const Tensors& d) {
      return b.TopKGate(d[0], normalize, d[1], d[2], d[3]);
    });
  };
  row.reference = [=](const Tensors& in) { return GateReference(in[0], k, normalize); };
  return row;
}

// The gradient of L(z) = sum_i gg_i * gate_i(z) + sum_e pg_e * p_e(z) for
// each token's logits z, the chosen experts held fixed: central differences
// in double.
OpRow GateBackwardRow(bool normalize) {
  OpRow row;
  row.name = std::string("topk_gate_backward") + (normalize ? " normalised" : "");
  row.inputs = [=] {
    const Tensor logits = GateLogits(42);
    const Values gate = GateReference(logits, kK, normalize);
    std::vector<int32_t> expert(gate[1].begin(), gate[1].end());
    return Tensors{logits,
                   Floats({kTokens, kExperts}, gate[0]),
                   Int32s({kTokens, kK}, expert),
                   Floats({kTokens, kK}, gate[2]),
                   RandomTensor({kTokens, kK}, 43),
                   RandomTensor({kExperts}, 44),
                   Tensor::Empty({kTokens, kExperts})};
  };
  row.run = [=](const Backend& b, const Tensors& in) {
    return OnDevice(b, in, {6}, [&](const Tensors& d) {
      return b.TopKGateBackward(d[1], d[2], d[3], d[4], d[5], normalize, d[6]);
    });
  };
  row.reference = [=](const Tensors& in) {
    std::vector<double> grad;
    for (int64_t t = 0; t < kTokens; ++t) {
      const int32_t* chosen = in[2].i32_data() + t * kK;
      auto loss = [&](const std::vector<double>& z) {
        std::vector<double> p(kExperts);
        const double peak = *std::max_element(z.begin(), z.end());
        double sum = 0;
        for (int e = 0; e < kExperts; ++e) sum += (p[e] = std::exp(z[e] - peak));
        for (double& v : p) v /= sum;
        double chosen_sum = 0;
        for (int i = 0; i < kK; ++i) chosen_sum += p[chosen[i]];
        double l = 0;
        for (int i = 0; i < kK; ++i) {
          const double w = normalize ? p[chosen[i]] / chosen_sum : p[chosen[i]];
          l += in[4].data()[t * kK + i] * w;
        }
        for (int e = 0; e < kExperts; ++e) l += in[5].data()[e] * p[e];
        return l;
      };
      std::vector<double> z(in[0].data() + t * kExperts, in[0].data() + (t + 1) * kExperts);
      for (int e = 0; e < kExperts; ++e) {
        constexpr double kStep = 1e-5;
        std::vector<double> plus = z, minus = z;
        plus[e] += kStep;
        minus[e] -= kStep;
        grad.push_back((loss(plus) - loss(minus)) / (2 * kStep));
      }
    }
    return Values{grad};
  };
  return row;
}

// Probabilities whose first choices tie between some tokens, so that the
// prioritised order's tie rule shows.
Tensors RankInputs() {
  Tensor probs = RandomTensor({kTokens, kExperts}, 45);
  for (int64_t i = 0; i < probs.numel(); ++i) probs.data()[i] = std::fabs(probs.data()[i]);
  const Tensor expert = Choices();
  auto top1 = [&](int64_t t) -> float& {
    return probs.data()[t * kExperts + expert.i32_data()[t * kK]];
  };
  top1(9) = top1(5) = top1(2);
  top1(30) = top1(12);
  return {probs, expert, Tensor::Empty({kTokens, kK}, DType::kI32),
          Tensor::Empty({kExperts}, DType::kI32)};
}

// rank[c] = the choices to the same expert ahead of c: every choice of a
// lower rank i, and those of rank i whose token comes first (by
// confidence, then index, when prioritised).
OpRow RankRow(bool prioritize) {
  OpRow row;
  row.name = std::string("rank_choices") + (prioritize ? " batch-prioritised" : "");
  row.inputs = RankInputs;
  row.run = [=](const Backend& b, const Tensors& in) {
    return OnDevice(b, in, {2, 3}, [&](const Tensors& d) {
      return b.RankChoices(d[0], d[1], prioritize, d[2], d[3]);
    });
  };
  row.reference = [=](const Tensors& in) {
    const int32_t* expert = in[1].i32_data();
    auto confidence = [&](int64_t t) { return in[0].data()[t * kExperts + expert[t * kK]]; };
    auto token_first = [&](int64_t a, int64_t b) {
      if (!prioritize) return a < b;
      return confidence(a) > confidence(b) || (confidence(a) == confidence(b) && a < b);
    };
    Values out(2);
    out[1].assign(kExperts, 0.0);
    for (int64_t c = 0; c < kTokens * kK; ++c) {
      int64_t ahead = 0;
      for (int64_t other = 0; other < kTokens * kK; ++other) {
        if (other == c || expert[other] != expert[c]) continue;
        const int64_t i = c % kK, j = other % kK;
        ahead += j < i || (j == i && token_first(other / kK, c / kK));
      }
      out[0].push_back(static_cast<double>(ahead));
      out[1][expert[c]] += 1;
    }
    return out;
  };
  return row;
}

OpRow GateLoadRow() {
  OpRow row;
  row.name = "gate_load";
  row.inputs = [] {
    const Tensors rank = RankInputs();
    return Tensors{rank[0], rank[1], Tensor::Empty({2, kExperts})};
  };
  row.run = [](const Backend& b, const Tensors& in) {
    return OnDevice(b, in, {2}, [&](const Tensors& d) { return b.GateLoad(d[0], d[1], d[2]); });
  };
  row.reference = [](const Tensors& in) {
    std::vector<double> load(2 * kExperts, 0.0);
    for (int64_t t = 0; t < kTokens; ++t) {
      for (int e = 0; e < kExperts; ++e) load[e] += in[0].data()[t * kExperts + e] / kTokens;
      load[kExperts + in[1].i32_data()[t * kK]] += 1.0 / kTokens;
    }
    return Values{load};
  };
  return row;
}

// The slot row of choice c under a routing, or -1 when it is dropped.
int64_t SlotRow(const Tensors& in, int64_t c) {
  const int32_t rank = in[1].i32_data()[c];
  return rank < kCapacity ? in[0].i32_data()[c] * kCapacity + rank : -1;
}

const Shape kSlots{kExperts, kCapacity, kDim};

OpRow DispatchRow() {
  OpRow row;
  row.name = "dispatch_tokens";
  row.inputs = [] {
    const Tensor expert = Choices();
    return Tensors{expert, QueueRanks(expert), RandomTensor({kTokens, kDim}, 46),
                   RandomTensor(kSlots, 47)};
  };
  row.run = [](const Backend& b, const Tensors& in) {
    return OnDevice(b, in, {3},
                    [&](const Tensors& d) { return b.DispatchTokens(d[0], d[1], d[2], d[3]); });
  };
  row.reference = [](const Tensors& in) {
    std::vector<double> slots = Doubles(in[3]);  // rows no choice reaches keep their values
    for (int64_t c = 0; c < kTokens * kK; ++c) {
      const int64_t at = SlotRow(in, c);
      if (at < 0) continue;
      for (int64_t d = 0; d < kDim; ++d) {
        slots[at * kDim + d] = in[2].data()[(c / kK) * kDim + d];
      }
    }
    return Values{slots};
  };
  return row;
}

OpRow CombineRow(bool weighted) {
  OpRow row;
  row.name = std::string("combine_tokens") + (weighted ? "" : " unweighted");
  row.inputs = [=] {
    const Tensor expert = Choices();
    return Tensors{expert, QueueRanks(expert),
                   weighted ? RandomTensor({kTokens, kK}, 48) : Tensor(), RandomTensor(kSlots, 49),
                   Tensor::Full({kTokens, kDim}, std::nanf(""))};
  };
  row.run = [](const Backend& b, const Tensors& in) {
    return OnDevice(b, in, {4}, [&](const Tensors& d) {
      return b.CombineTokens(d[0], d[1], d[2], d[3], d[4]);
    });
  };
  row.reference = [=](const Tensors& in) {
    std::vector<double> y(kTokens * kDim, 0.0);
    for (int64_t c = 0; c < kTokens * kK; ++c) {
      const int64_t at = SlotRow(in, c);
      if (at < 0) continue;
      const double g = weighted ? in[2].data()[c] : 1.0;
      for (int64_t d = 0; d < kDim; ++d) {
        y[(c / kK) * kDim + d] += g * in[3].data()[at * kDim + d];
      }
    }
    return Values{y};
  };
  return row;
}

OpRow CombineBackwardRow() {
  OpRow row;
  row.name = "combine_tokens_backward";
  row.inputs = [] {
    const Tensor expert = Choices();
    return Tensors{expert,
                   QueueRanks(expert),
                   RandomTensor({kTokens, kK}, 50),
                   RandomTensor({kTokens, kDim}, 51),
                   RandomTensor(kSlots, 52),
                   RandomTensor(kSlots, 53),
                   Tensor::Full({kTokens, kK}, std::nanf(""))};
  };
  row.run = [](const Backend& b, const Tensors& in) {
    return OnDevice(b, in, {5, 6}, [&](const Tensors& d) {
      return b.CombineTokensBackward(d[0], d[1], d[2], d[3], d[4], d[5], d[6]);
    });
  };
  row.reference = [](const Tensors& in) {
    std::vector<double> grad_rows = Doubles(in[5]), grad_gate(kTokens * kK, 0.0);
    for (int64_t c = 0; c < kTokens * kK; ++c) {
      const int64_t at = SlotRow(in, c);
      if (at < 0) continue;
      const float* dy = in[3].data() + (c / kK) * kDim;
      for (int64_t d = 0; d < kDim; ++d) {
        grad_rows[at * kDim + d] = in[2].data()[c] * dy[d];
        grad_gate[c] += dy[d] * in[4].data()[at * kDim + d];
      }
    }
    return Values{grad_rows, grad_gate};
  };
  return row;
}

}  // namespace

std::vector<OpRow> RoutingRows() {
  return {GateRow(2, /*normalize=*/true),
          GateRow(3, /*normalize=*/false),
          GateBackwardRow(/*normalize=*/true),
          GateBackwardRow(/*normalize=*/false),
          RankRow(/*prioritize=*/false),
          RankRow(/*prioritize=*/true),
          GateLoadRow(),
          DispatchRow(),
          CombineRow(/*weighted=*/true),
          CombineRow(/*weighted=*/false),
          CombineBackwardRow()};
}

}  // namespace strata::testing
