#include "scheduler/secbad/ppo.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/optim/lr_schedule.h"
#include "core/optim/optimizer.h"
#include "core/status.h"

namespace strata::secbad {

namespace {

// Softmax of `logits` (n values) into `p`; returns log-sum-exp.
double Softmax(const float* logits, int n, double* p) {
  double top = logits[0];
  for (int i = 1; i < n; ++i) top = std::max(top, static_cast<double>(logits[i]));
  double total = 0;
  for (int i = 0; i < n; ++i) total += p[i] = std::exp(logits[i] - top);
  for (int i = 0; i < n; ++i) p[i] /= total;
  return top + std::log(total);
}

}  // namespace

RolloutBuffer::RolloutBuffer(int envs, int steps, int inputs)
    : envs_(envs), steps_(steps), inputs_(inputs) {
  const size_t n = static_cast<size_t>(envs) * steps;
  states_.assign(n * inputs, 0.0f);
  log_probs_.assign(n, 0.0f);
  values_.assign(n, 0.0f);
  rewards_.assign(n, 0.0f);
  actions_.assign(n, 0);
  dones_.assign(n, 0);
  bootstrap_.assign(envs, 0.0f);
}

Tensor RolloutBuffer::states(int t) const {
  Tensor out = Tensor::Empty({envs_, inputs_});
  std::copy_n(states_.data() + At(t, 0) * inputs_, static_cast<size_t>(envs_) * inputs_, out.data());
  return out;
}

void RolloutBuffer::Record(int t, int e, int action, float log_prob, float value, float reward,
                           bool done) {
  const size_t i = At(t, e);
  actions_[i] = action;
  log_probs_[i] = log_prob;
  values_[i] = value;
  rewards_[i] = reward;
  dones_[i] = done ? 1 : 0;
}

Ppo::Ppo(ActorCritic& net, const PpoOptions& options, uint64_t seed)
    : net_(net), options_(options), rng_(seed) {
  OptimizerConfig adam;
  adam.type = "adam";
  adam.lr = options.learning_rate;
  adam.epsilon = 1e-5f;
  std::unique_ptr<Optimizer> optimizer = *Optimizer::Create(adam);
  optimizer_ = std::make_unique<ParameterOptimizer>(
      std::move(optimizer), LrSchedule(LrScheduleConfig{}, options.learning_rate, 1),
      net.parameters());
}

Ppo::Actions Ppo::Act(const Tensor& states, bool greedy) {
  const ActorCritic::Output out = net_.Forward(states, /*training=*/false);
  const int n = static_cast<int>(states.dim(0));
  const int a = net_.shape().actions;
  Actions acts;
  std::vector<double> p(a);
  for (int i = 0; i < n; ++i) {
    const float* logits = out.logits.data() + static_cast<size_t>(i) * a;
    Softmax(logits, a, p.data());
    int chosen = 0;
    if (greedy) {
      chosen = static_cast<int>(std::max_element(p.begin(), p.end()) - p.begin());
    } else {
      double u = rng_.Uniform(), cumulative = 0;
      chosen = a - 1;
      for (int j = 0; j < a; ++j) {
        cumulative += p[j];
        if (u < cumulative) {
          chosen = j;
          break;
        }
      }
    }
    acts.action.push_back(chosen);
    acts.log_prob.push_back(static_cast<float>(std::log(std::max(p[chosen], 1e-30))));
    acts.value.push_back(out.values.data()[i]);
  }
  return acts;
}

Ppo::Stats Ppo::Update(const RolloutBuffer& r) {
  const int envs = r.envs(), steps = r.steps(), inputs = r.inputs();
  const int actions = net_.shape().actions;
  const size_t n = static_cast<size_t>(envs) * steps;
  // GAE(lambda), each env backwards in time.
  std::vector<float> advantages(n), returns(n);
  for (int e = 0; e < envs; ++e) {
    double next_value = r.bootstrap_[e], running = 0;
    for (int t = steps - 1; t >= 0; --t) {
      const size_t i = r.At(t, e);
      const double alive = r.dones_[i] ? 0.0 : 1.0;
      const double delta = r.rewards_[i] + options_.gamma * next_value * alive - r.values_[i];
      running = delta + options_.gamma * options_.gae_lambda * alive * running;
      advantages[i] = static_cast<float>(running);
      returns[i] = static_cast<float>(running + r.values_[i]);
      next_value = r.values_[i];
    }
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  const size_t batch = std::min<size_t>(n, static_cast<size_t>(std::max(1, options_.minibatch)));
  Stats stats;
  int updates = 0;
  std::vector<double> p(actions);
  for (int epoch = 0; epoch < options_.epochs; ++epoch) {
    for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng_.Below(i)]);
    for (size_t start = 0; start + batch <= n; start += batch) {
      const int m = static_cast<int>(batch);
      Tensor states = Tensor::Empty({m, inputs});
      double mean = 0, square = 0;
      for (int k = 0; k < m; ++k) {
        const size_t i = order[start + k];
        std::copy_n(r.states_.data() + i * inputs, inputs, states.data() + static_cast<size_t>(k) * inputs);
        mean += advantages[i];
        square += static_cast<double>(advantages[i]) * advantages[i];
      }
      mean /= m;
      const double deviation = std::sqrt(std::max(0.0, square / m - mean * mean)) + 1e-8;
      const ActorCritic::Output out = net_.Forward(states, /*training=*/true);
      Tensor dlogits = Tensor::Zeros({m, actions});
      Tensor dvalues = Tensor::Zeros({m, 1});
      for (int k = 0; k < m; ++k) {
        const size_t i = order[start + k];
        const float* logits = out.logits.data() + static_cast<size_t>(k) * actions;
        float* grad = dlogits.data() + static_cast<size_t>(k) * actions;
        Softmax(logits, actions, p.data());
        const int chosen = r.actions_[i];
        const double log_p = std::log(std::max(p[chosen], 1e-30));
        const double ratio = std::exp(log_p - r.log_probs_[i]);
        const double advantage = (advantages[i] - mean) / deviation;
        const double clipped = std::clamp(ratio, 1.0 - options_.clip, 1.0 + options_.clip);
        // The surrogate min(ratio A, clip(ratio) A) moves with log p only
        // where the unclipped term is the smaller or the clip is inactive.
        const bool moves = ratio * advantage <= clipped * advantage || ratio == clipped;
        const double d_log_p = moves ? -ratio * advantage / m : 0.0;
        double entropy = 0;
        for (int j = 0; j < actions; ++j) entropy -= p[j] * std::log(std::max(p[j], 1e-30));
        for (int j = 0; j < actions; ++j) {
          const double log_pj = std::log(std::max(p[j], 1e-30));
          // d(-c H)/dlogit_j = c p_j (log p_j + H).
          grad[j] = static_cast<float>(d_log_p * ((j == chosen ? 1.0 : 0.0) - p[j]) +
                                       options_.entropy_coef * p[j] * (log_pj + entropy) / m);
        }
        const double value_error = out.values.data()[k] - returns[i];
        dvalues.data()[k] = static_cast<float>(options_.value_coef * value_error / m);
        stats.policy_loss += -std::min(ratio * advantage, clipped * advantage) / m;
        stats.value_loss += 0.5 * value_error * value_error / m;
        stats.entropy += entropy / m;
        stats.approx_kl += (r.log_probs_[i] - log_p) / m;
        stats.clip_fraction += (std::abs(ratio - 1.0) > options_.clip ? 1.0 : 0.0) / m;
      }
      net_.Backward(dlogits, dvalues);
      // Clip the gradient's global norm.
      double norm = 0;
      for (Parameter* param : net_.parameters()) {
        const float* g = param->grad.data();
        for (int64_t j = 0; j < param->grad.numel(); ++j) norm += static_cast<double>(g[j]) * g[j];
      }
      norm = std::sqrt(norm);
      if (norm > options_.max_grad_norm) {
        const float scale = static_cast<float>(options_.max_grad_norm / norm);
        for (Parameter* param : net_.parameters()) {
          float* g = param->grad.data();
          for (int64_t j = 0; j < param->grad.numel(); ++j) g[j] *= scale;
        }
      }
      optimizer_->Step();
      ++updates;
    }
  }
  if (updates > 0) {
    for (double* v : {&stats.policy_loss, &stats.value_loss, &stats.entropy, &stats.approx_kl,
                      &stats.clip_fraction}) {
      *v /= updates;
    }
  }
  return stats;
}

}  // namespace strata::secbad
