// PPO (Schulman et al., 2017) for the actor-critic of
// scheduler/secbad/actor_critic.h: rollouts of several environments,
// advantages by GAE(lambda), then a few epochs of minibatch Adam steps on
// the clipped surrogate, a value loss and an entropy bonus.
//
//   Ppo ppo(*net, PpoOptions{}, seed);
//   RolloutBuffer rollout(envs, steps, inputs);
//   for (int t = 0; t < steps; ++t) {
//     ... write each env's state into rollout.state(t, e) ...
//     Ppo::Actions a = ppo.Act(rollout.states(t), /*greedy=*/false);
//     ... step each env with a.action[e], then rollout.Record(t, e, a, reward, done) ...
//   }
//   rollout.set_bootstrap(values of the states after the last step);
//   Ppo::Stats stats = ppo.Update(rollout);
//
// Deterministic for a seed. Not thread-safe.
#ifndef STRATA_SCHEDULER_SECBAD_PPO_H_
#define STRATA_SCHEDULER_SECBAD_PPO_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "core/optim/parameter_optimizer.h"
#include "core/tensor/tensor.h"
#include "core/util/rng.h"
#include "scheduler/secbad/actor_critic.h"

namespace strata::secbad {

struct PpoOptions {
  float learning_rate = 1e-3f;
  float gamma = 0.99f;
  float gae_lambda = 0.95f;
  float clip = 0.2f;
  float value_coef = 0.5f;
  float entropy_coef = 0.01f;
  int epochs = 4;
  int minibatch = 256;
  float max_grad_norm = 0.5f;  // the gradient's global norm is clipped to this
};

// What `envs` environments did over `steps` steps, time-major.
class RolloutBuffer {
 public:
  RolloutBuffer(int envs, int steps, int inputs);
  int envs() const { return envs_; }
  int steps() const { return steps_; }
  int inputs() const { return inputs_; }
  // The state env `e` acted on at step t (inputs() floats, to be written).
  float* state(int t, int e) { return states_.data() + (static_cast<size_t>(t) * envs_ + e) * inputs_; }
  // The states of step t, {envs, inputs}, sharing nothing with the buffer.
  Tensor states(int t) const;
  void Record(int t, int e, int action, float log_prob, float value, float reward, bool done);
  // V(state after the last step) per env, 0 where the episode ended.
  void set_bootstrap(std::vector<float> values) { bootstrap_ = std::move(values); }

 private:
  friend class Ppo;
  size_t At(int t, int e) const { return static_cast<size_t>(t) * envs_ + e; }
  int envs_, steps_, inputs_;
  std::vector<float> states_, log_probs_, values_, rewards_, bootstrap_;
  std::vector<int> actions_;
  std::vector<uint8_t> dones_;
};

class Ppo {
 public:
  Ppo(ActorCritic& net, const PpoOptions& options, uint64_t seed);

  struct Actions {
    std::vector<int> action;
    std::vector<float> log_prob;
    std::vector<float> value;
  };
  // One action per row of `states` {N, inputs}: drawn from the policy, or
  // its most likely one when `greedy`.
  Actions Act(const Tensor& states, bool greedy);

  struct Stats {
    double policy_loss = 0, value_loss = 0, entropy = 0, approx_kl = 0, clip_fraction = 0;
  };
  // Advantages and returns from `rollout`, then the epochs of updates.
  Stats Update(const RolloutBuffer& rollout);

 private:
  ActorCritic& net_;
  PpoOptions options_;
  Rng rng_;
  std::unique_ptr<ParameterOptimizer> optimizer_;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_PPO_H_
