// The MoE layer against a naive dense reference (GShard's explicit one-hot
// dispatch and combine tensors), its gradients by finite differences, the
// dropped-token accounting, and its argument checks.
#include "moe/moe_layer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/ops/backend.h"
#include "tests/core/backend_test_support.h"
#include "tests/core/gradient_check.h"

namespace strata::moe {
namespace {

using strata::testing::ExpectGradientsMatch;
using strata::testing::GradientCheckOptions;
using strata::testing::RandomTensor;

constexpr int64_t kTokens = 24;
constexpr int64_t kDim = 8;
constexpr int64_t kHidden = 16;
constexpr int kExperts = 4;

struct Dense {
  std::vector<double> y;  // {T, D}
  int64_t dropped = 0;
  int64_t capacity = 0;
};

// GShard-style reference in double precision: softmax gate, top-k, the
// capacity rule restated from its definition, dense (T, E, C) dispatch and
// combine tensors, every expert run over all C slots (padding included).
Dense DenseReference(MoeLayer& layer, const Tensor& x) {
  const MoeOptions& o = layer.options();
  const int64_t t_count = x.dim(0), d = kDim, h = o.hidden;
  const int e_count = o.experts, k = o.top_k;
  auto param = [&layer](int i) { return layer.parameters()[i]->value.data(); };
  const float *g = param(0), *w1 = param(1), *b1 = param(2), *w2 = param(3), *b2 = param(4);
  std::vector<std::vector<int>> choice(t_count);
  std::vector<std::vector<double>> weight(t_count);
  for (int64_t t = 0; t < t_count; ++t) {
    std::vector<double> p(e_count);
    for (int e = 0; e < e_count; ++e) {
      for (int64_t j = 0; j < d; ++j) p[e] += double{x.data()[t * d + j]} * g[e * d + j];
    }
    const double peak = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (double& v : p) sum += (v = std::exp(v - peak));
    for (double& v : p) v /= sum;
    std::vector<int> order(e_count);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&p](int a, int b) { return p[a] > p[b]; });
    double chosen = 0;
    for (int i = 0; i < k; ++i) chosen += p[order[i]];
    for (int i = 0; i < k; ++i) {
      choice[t].push_back(order[i]);
      weight[t].push_back(o.normalize_gate ? p[order[i]] / chosen : p[order[i]]);
    }
  }
  std::vector<int64_t> need(e_count, 0);
  for (const auto& c : choice) {
    for (int e : c) need[e]++;
  }
  const int64_t largest = *std::max_element(need.begin(), need.end());
  const int64_t per_expert = (t_count + e_count - 1) / e_count;
  const double f = o.capacity.factor;
  int64_t cap;
  if (f > 0) {
    cap = static_cast<int64_t>(std::ceil(k * f * per_expert));
    cap = (cap + o.capacity.alignment - 1) / o.capacity.alignment * o.capacity.alignment;
  } else if (f < 0) {
    cap = std::min<int64_t>(largest, static_cast<int64_t>(std::ceil(k * -f * per_expert)));
  } else {
    cap = largest;
  }
  Dense out;
  out.capacity = cap;
  // One-hot dispatch (T, E, C) and combine weights, first choices first.
  std::vector<double> dispatch(t_count * e_count * cap, 0.0), combine = dispatch;
  std::vector<int64_t> fill(e_count, 0);
  for (int i = 0; i < k; ++i) {
    for (int64_t t = 0; t < t_count; ++t) {
      const int e = choice[t][i];
      if (fill[e] >= cap) {
        out.dropped++;
        continue;
      }
      const int64_t at = (t * e_count + e) * cap + fill[e]++;
      dispatch[at] = 1.0;
      combine[at] = weight[t][i];
    }
  }
  out.y.assign(t_count * d, 0.0);
  for (int e = 0; e < e_count; ++e) {
    for (int64_t c = 0; c < cap; ++c) {
      std::vector<double> in(d, 0.0), hid(h, 0.0), res(d, 0.0);
      for (int64_t t = 0; t < t_count; ++t) {
        for (int64_t j = 0; j < d; ++j)
          in[j] += dispatch[(t * e_count + e) * cap + c] * x.data()[t * d + j];
      }
      for (int64_t q = 0; q < h; ++q) {
        double acc = b1[e * h + q];
        for (int64_t j = 0; j < d; ++j) acc += in[j] * w1[(e * d + j) * h + q];
        hid[q] = std::max(acc, 0.0);
      }
      for (int64_t j = 0; j < d; ++j) {
        double acc = b2[e * d + j];
        for (int64_t q = 0; q < h; ++q) acc += hid[q] * w2[(e * h + q) * d + j];
        res[j] = acc;
      }
      for (int64_t t = 0; t < t_count; ++t) {
        const double w = combine[(t * e_count + e) * cap + c];
        for (int64_t j = 0; j < d; ++j) out.y[t * d + j] += w * res[j];
      }
    }
  }
  return out;
}

std::unique_ptr<MoeLayer> MakeLayer(int k, double factor, float aux_weight = 0.0f) {
  MoeOptions o;
  o.experts = kExperts;
  o.top_k = k;
  o.hidden = kHidden;
  o.capacity.factor = factor;
  o.aux_loss_weight = aux_weight;
  auto layer = MoeLayer::Create("moe", Shape{kDim}, o);
  EXPECT_TRUE(layer.ok()) << layer.status();
  Rng rng(3);
  (*layer)->InitParameters(rng);
  // A sharper gate than the default init, so top-k choices are far apart.
  for (int64_t i = 0; i < (*layer)->parameters()[0]->value.numel(); ++i) {
    (*layer)->parameters()[0]->value.data()[i] *= 4.0f;
  }
  return *std::move(layer);
}

struct Case {
  int k;
  double factor;
};

class MoeForwardTest : public ::testing::TestWithParam<Case> {};

TEST_P(MoeForwardTest, MatchesTheDenseOneHotReference) {
  const auto [k, factor] = GetParam();
  auto layer = MakeLayer(k, factor);
  const Tensor x = RandomTensor({kTokens, kDim}, 11);
  const Tensor y = layer->Forward(x, /*training=*/false);
  const Dense ref = DenseReference(*layer, x);
  EXPECT_EQ(layer->routing()->capacity, ref.capacity);
  EXPECT_EQ(layer->routing()->dropped, ref.dropped);
  for (int64_t i = 0; i < y.numel(); ++i) {
    ASSERT_NEAR(y.data()[i], ref.y[i], 1e-4) << "element " << i << ", k " << k << ", f " << factor;
  }
}

INSTANTIATE_TEST_SUITE_P(TopKAndCapacity, MoeForwardTest,
                         ::testing::Values(Case{1, 1.25}, Case{2, 1.25}, Case{3, 1.25},
                                           Case{1, -1.0}, Case{2, -0.5}, Case{3, -1.0},
                                           Case{1, 0.0}, Case{2, 0.0}, Case{3, 0.0}, Case{2, 0.5}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const double f = info.param.factor;
                           return "k" + std::to_string(info.param.k) +
                                  (f > 0   ? "_fpos"
                                   : f < 0 ? "_fneg"
                                           : "_f0") +
                                  std::to_string(static_cast<int>(std::abs(f) * 100));
                         });

TEST(MoeLayerTest, ShrinkingCapacityDropsTokensAndCountsThem) {
  auto layer = MakeLayer(2, 0.5);  // C = ceil(2 * 0.5 * 6) = 6 slots for 48 choices over 4 experts
  const Tensor x = RandomTensor({kTokens, kDim}, 11);
  layer->Forward(x, false);
  EXPECT_EQ(layer->routing()->capacity, 6);
  int64_t kept = 0;
  const Routing routing = *layer->routing();
  for (int64_t used : routing.used) {
    EXPECT_LE(used, 6);
    kept += used;
  }
  EXPECT_EQ(routing.dropped, 2 * kTokens - kept);
  EXPECT_GT(routing.dropped, 0);
}

TEST(MoeLayerTest, ATokenWithEveryChoiceDroppedOutputsZeros) {
  MoeOptions o;
  o.experts = kExperts;
  o.top_k = 1;
  o.hidden = kHidden;
  o.capacity.factor = 1.0;  // C = ceil(10 / 4) = 3
  auto layer = *MoeLayer::Create("moe", Shape{kDim}, o);
  Rng rng(5);
  layer->InitParameters(rng);
  // Every token prefers expert 0: its gate row points along the all-ones
  // input direction, the other rows away from it.
  float* gate = layer->parameters()[0]->value.data();
  for (int e = 0; e < kExperts; ++e) {
    for (int64_t j = 0; j < kDim; ++j) gate[e * kDim + j] = e == 0 ? 1.0f : -1.0f;
  }
  Tensor x = Tensor::Empty({10, kDim});
  for (int64_t t = 0; t < 10; ++t) {
    for (int64_t j = 0; j < kDim; ++j) x.data()[t * kDim + j] = 0.1f * static_cast<float>(t + 1);
  }
  Tensor y = layer->Forward(x, false);
  EXPECT_EQ(layer->routing()->capacity, 3);
  EXPECT_EQ(layer->routing()->dropped, 7);
  for (int64_t t = 3; t < 10; ++t) {  // tokens 0-2 took the three slots
    for (int64_t j = 0; j < kDim; ++j) EXPECT_EQ(y.data()[t * kDim + j], 0.0f) << "token " << t;
  }
  // Batch-prioritised routing: the most confident tokens (the largest
  // inputs, 7-9) claim the slots instead.
  o.batch_prioritized = true;
  auto prioritized = *MoeLayer::Create("moe", Shape{kDim}, o);
  for (size_t i = 0; i < layer->parameters().size(); ++i) {
    prioritized->parameters()[i]->value.CopyFrom(layer->parameters()[i]->value);
  }
  prioritized->Forward(x, false);
  const Routing r = *prioritized->routing();
  for (int64_t t = 0; t < 10; ++t) EXPECT_EQ(r.slot[t] >= 0, t >= 7) << "token " << t;
}

class MoeGradientTest : public ::testing::TestWithParam<int> {};

TEST_P(MoeGradientTest, GradientsMatchFiniteDifferences) {
  auto layer = MakeLayer(GetParam(), 0.0);  // dropless: no capacity edge to cross
  GradientCheckOptions o;
  o.step = 1e-3f;
  o.tolerance = 2e-2f;
  ExpectGradientsMatch(*layer, RandomTensor({kTokens, kDim}, 13), o);
}

INSTANTIATE_TEST_SUITE_P(TopK, MoeGradientTest, ::testing::Values(1, 2, 3));

TEST(MoeLayerTest, GradientsWithDroppedTokensMatchFiniteDifferences) {
  auto layer = MakeLayer(2, 0.5);
  GradientCheckOptions o;
  o.step = 1e-3f;
  ExpectGradientsMatch(*layer, RandomTensor({kTokens, kDim}, 13), o);
}

TEST(MoeLayerTest, LoadBalancingLossGradientReachesTheGate) {
  auto layer = MakeLayer(2, 0.0, /*aux_weight=*/1.0f);
  const Tensor x = RandomTensor({kTokens, kDim}, 17);
  layer->Forward(x, true);
  EXPECT_GT(*layer->aux_loss(), 0.0f);
  layer->Backward(Tensor::Zeros({kTokens, kDim}), false);  // only the aux loss remains
  Parameter* gate = layer->parameters()[0];
  const std::vector<float> analytic(gate->grad.data(), gate->grad.data() + gate->grad.numel());
  for (int64_t i = 0; i < gate->value.numel(); i += 3) {
    const float saved = gate->value.data()[i];
    const float h = 1e-3f;
    gate->value.data()[i] = saved + h;
    layer->Forward(x, false);
    const double plus = *layer->aux_loss();
    gate->value.data()[i] = saved - h;
    layer->Forward(x, false);
    const double minus = *layer->aux_loss();
    gate->value.data()[i] = saved;
    EXPECT_NEAR(analytic[i], (plus - minus) / (2 * h), 2e-2) << "gate element " << i;
  }
}

TEST(MoeLayerTest, TheLoadBalancingGradientCarriesTheLossWeight) {
  // A batch whose loss is a quarter of the step's: its load-balancing
  // gradient is a quarter of the unweighted one, like its cross-entropy's.
  auto layer = MakeLayer(2, 0.0, /*aux_weight=*/1.0f);
  const Tensor x = RandomTensor({kTokens, kDim}, 19);
  Parameter* gate = layer->parameters()[0];
  layer->Forward(x, true);
  layer->Backward(Tensor::Zeros({kTokens, kDim}), false);
  const std::vector<float> whole(gate->grad.data(), gate->grad.data() + gate->grad.numel());
  layer->SetLossWeight(0.25f);
  layer->Forward(x, true);
  layer->Backward(Tensor::Zeros({kTokens, kDim}), false);
  float largest = 0;
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_NEAR(gate->grad.data()[i], 0.25f * whole[i], 1e-7f + 1e-5f * std::abs(whole[i]))
        << "gate element " << i;
    largest = std::max(largest, std::abs(whole[i]));
  }
  EXPECT_GT(largest, 1e-3f);  // there was a gradient to weight
}

TEST(MoeLayerTest, TopKCanChangeBetweenCalls) {
  auto layer = MakeLayer(1, 1.25);
  const Tensor x = RandomTensor({kTokens, kDim}, 11);
  for (int k : {1, 3, 2}) {
    ASSERT_TRUE(layer->set_top_k(k).ok());
    const Tensor y = layer->Forward(x, false);
    const Dense ref = DenseReference(*layer, x);
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.data()[i], ref.y[i], 1e-4) << "k " << k;
  }
}

// One training step of the layer on every backend present (the checking
// device: its tensors fault if the host touches them; CUDA where a GPU is)
// against the same layer on the host: outputs, input gradient, every
// parameter's gradient, the routing and the load-balancing loss. A padded
// capacity makes a device compute every slot (the unused ones zeroed);
// f <= 0 sizes it by the need, which the device then reports.
struct DeviceCase {
  double factor;
  bool prioritized;
};

class MoeOnDevicesTest : public ::testing::TestWithParam<DeviceCase> {
 protected:
  static void SetUpTestSuite() { testing::JoinCudaBackendWherePresent(); }
};

std::vector<float> OnHost(const Tensor& t) {
  absl::StatusOr<Tensor> host = ToHost(t);
  EXPECT_TRUE(host.ok()) << host.status();
  return host.ok() ? host->ToVector() : std::vector<float>();
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5f + 1e-4f * std::abs(want[i])) << what << " element " << i;
  }
}

TEST_P(MoeOnDevicesTest, ATrainingStepMatchesTheHost) {
  const auto [factor, prioritized] = GetParam();
  MoeOptions o;
  o.experts = kExperts;
  o.top_k = 2;
  o.hidden = kHidden;
  o.capacity.factor = factor;
  o.aux_loss_weight = 0.5f;
  o.gate_noise = 0.1f;
  o.batch_prioritized = prioritized;
  auto host = MoeLayer::Create("moe", Shape{kDim}, o);
  ASSERT_TRUE(host.ok()) << host.status();
  Rng rng(3);
  (*host)->InitParameters(rng);
  const Tensor x = RandomTensor({kTokens, kDim}, 11);
  const Tensor grad_y = RandomTensor({kTokens, kDim}, 12);
  const Tensor y = (*host)->Forward(x, /*training=*/true);
  const Tensor dx = (*host)->Backward(grad_y, /*need_input_grad=*/true);
  const Routing want = *(*host)->routing();
  int devices = 0;
  for (const Backend* b : BackendRegistry::Global().backends()) {
    if (b->device() == Device::kCpu) continue;
    SCOPED_TRACE(b->name());
    auto layer = MoeLayer::Create("moe", Shape{kDim}, o, *b);
    ASSERT_TRUE(layer.ok()) << layer.status();
    for (size_t i = 0; i < (*host)->parameters().size(); ++i) {
      ASSERT_TRUE(
          CopyFromHost((*host)->parameters()[i]->value, (*layer)->parameters()[i]->value).ok());
    }
    const Tensor device_y = (*layer)->Forward(*b->Upload(x), /*training=*/true);
    const Tensor device_dx = (*layer)->Backward(*b->Upload(grad_y), /*need_input_grad=*/true);
    ASSERT_TRUE((*layer)->status().ok()) << (*layer)->status();
    ExpectClose(OnHost(device_y), y.ToVector(), "output");
    ExpectClose(OnHost(device_dx), dx.ToVector(), "input gradient");
    for (size_t i = 0; i < (*host)->parameters().size(); ++i) {
      const Parameter* p = (*layer)->parameters()[i];
      ExpectClose(OnHost(p->grad), (*host)->parameters()[i]->grad.ToVector(), p->name + ".grad");
    }
    const Routing got = *(*layer)->routing();
    EXPECT_EQ(got.capacity, want.capacity);
    EXPECT_EQ(got.expert, want.expert);
    EXPECT_EQ(got.slot, want.slot);
    EXPECT_EQ(got.used, want.used);
    EXPECT_EQ(got.dropped, want.dropped);
    EXPECT_NEAR(*(*layer)->aux_loss(), *(*host)->aux_loss(), 1e-6f);
    ++devices;
  }
  EXPECT_GE(devices, 1);  // the checking device at least
}

INSTANTIATE_TEST_SUITE_P(Capacities, MoeOnDevicesTest,
                         ::testing::Values(DeviceCase{1.25, false}, DeviceCase{0.5, false},
                                           DeviceCase{0.5, true}, DeviceCase{0.0, false},
                                           DeviceCase{-0.5, true}),
                         [](const ::testing::TestParamInfo<DeviceCase>& info) {
                           const double f = info.param.factor;
                           return std::string(f > 0   ? "padded"
                                              : f < 0 ? "capped"
                                                      : "dropless") +
                                  std::to_string(static_cast<int>(std::abs(f) * 100)) +
                                  (info.param.prioritized ? "_prioritized" : "");
                         });

TEST(MoeLayerTest, AnExpertGroupRefusesALayerOnADevice) {
  MoeOptions o;
  o.experts = kExperts;
  o.hidden = kHidden;
  const Backend& check = **BackendRegistry::Global().Find("check");
  auto layer = MoeLayer::Create("moe", Shape{kDim}, o, check);
  ASSERT_TRUE(layer.ok()) << layer.status();
  const absl::Status joined = (*layer)->JoinExpertGroup(nullptr, 0);
  EXPECT_EQ(joined.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(joined.message(),
            "moe moe: an expert group computes on the host (cpu), this layer on check");
}

TEST(MoeLayerTest, BadArgumentsAreRefusedWithTheirValue) {
  MoeOptions o;
  o.experts = 4;
  o.top_k = 5;
  auto bad_k = MoeLayer::Create("moe", Shape{kDim}, o);
  ASSERT_EQ(bad_k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_k.status().message(), "moe top_k must be in [1, experts = 4], got 5");
  o.top_k = 2;
  auto image = MoeLayer::Create("moe", Shape{7, 7, 64}, o);
  EXPECT_NE(image.status().message().find("moe needs a vector input [D], got [7, 7, 64]"),
            std::string::npos)
      << image.status();
  o.experts = 0;
  EXPECT_EQ(MoeLayer::Create("moe", Shape{kDim}, o).status().message(),
            "moe needs experts >= 1, got 0");
  auto layer = MakeLayer(2, 1.0);
  EXPECT_EQ(layer->set_top_k(0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(layer->top_k(), 2);
  EXPECT_EQ(layer->ValidateInput(Tensor::Zeros({3, kDim + 1})).message(),
            "moe moe: tokens of dimension 8 expected, got [3, 9]");
}

}  // namespace
}  // namespace strata::moe
