// ActorCritic: the two networks SeCBAD's PPO trains (scheduler/secbad/ppo.h),
// each a multi-layer perceptron on core's layers: inputs -> hidden (ReLU)
// -> hidden (ReLU) -> outputs. The policy's outputs are the logits of a
// categorical distribution over the actions, the value's one number, the
// expected return from the state.
//
//   auto net = ActorCritic::Create({.inputs = 29, .actions = 5}, seed);
//   ActorCritic::Output out = (*net)->Forward(states, /*training=*/true);  // {N, 29}
//   (*net)->Backward(dlogits, dvalues);  // fills every parameter's grad
//   (*net)->Save("p.bin", "secbad");
//   auto again = ActorCritic::Load("p.bin", shape, "secbad");
//
// A policy file is a Strata checkpoint (core/train/checkpoint.h) whose
// metadata names the networks' shape, what they were trained as, and what
// the trainer says they are for (`about`: the knob and its values, the
// context, ...); Load refuses a file of another shape, contender or
// purpose, or a corrupt one, naming the file and what differs. Not
// thread-safe.
#ifndef STRATA_SCHEDULER_SECBAD_ACTOR_CRITIC_H_
#define STRATA_SCHEDULER_SECBAD_ACTOR_CRITIC_H_

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "core/layers/layer.h"

namespace strata::secbad {

struct ActorCriticShape {
  int inputs = 1;
  int actions = 2;
  int hidden = 64;
};

class ActorCritic {
 public:
  // InvalidArgument for fewer than 1 input, 2 actions or 1 hidden unit.
  static absl::StatusOr<std::unique_ptr<ActorCritic>> Create(const ActorCriticShape& shape,
                                                             uint64_t seed);
  // Reads a policy file written by Save; `contender` is what the caller
  // means to run it as ("secbad"; "" takes any); every field of `about`
  // must be in the file's with the same value.
  static absl::StatusOr<std::unique_ptr<ActorCritic>> Load(
      const std::string& path, const ActorCriticShape& shape, const std::string& contender,
      const nlohmann::json& about = nlohmann::json::object());
  absl::Status Save(const std::string& path, const std::string& contender,
                    const nlohmann::json& about = nlohmann::json::object()) const;

  // What the policy file at `path` says it is for (Save's `about`).
  // NotFound for a file that cannot be read; InvalidArgument for one that
  // is not a policy file.
  static absl::StatusOr<nlohmann::json> ReadAbout(const std::string& path);

  struct Output {
    Tensor logits;  // {N, actions}
    Tensor values;  // {N, 1}
  };
  // For states {N, inputs}. Training keeps what Backward needs.
  Output Forward(const Tensor& states, bool training);
  // The loss's gradients with respect to the last training Forward's
  // logits {N, actions} and values {N, 1}: overwrites every parameter's grad.
  void Backward(const Tensor& dlogits, const Tensor& dvalues);

  std::vector<Parameter*> parameters();
  const ActorCriticShape& shape() const { return shape_; }

 private:
  explicit ActorCritic(const ActorCriticShape& shape) : shape_(shape) {}
  ActorCriticShape shape_;
  LayerChain policy_, value_;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_ACTOR_CRITIC_H_
