#include "scheduler/secbad/actor_critic.h"

#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/layers/activation.h"
#include "core/layers/linear.h"
#include "core/status.h"
#include "core/train/checkpoint.h"

namespace strata::secbad {

namespace {

constexpr char kPolicyKind[] = "strata secbad policy";

// inputs -> hidden -> hidden -> outputs, ReLU between, named "<prefix>.fc1" ...
absl::StatusOr<LayerChain> Perceptron(const std::string& prefix, int inputs, int hidden,
                                      int outputs) {
  LayerChain chain;
  Shape shape{inputs};
  const int widths[] = {hidden, hidden, outputs};
  for (int i = 0; i < 3; ++i) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Linear> fc,
                            Linear::Create(absl::StrCat(prefix, ".fc", i + 1), shape, widths[i]));
    shape = fc->output_shape();
    chain.push_back(std::move(fc));
    if (i < 2) chain.push_back(std::make_unique<Relu>(absl::StrCat(prefix, ".relu", i + 1), shape));
  }
  return chain;
}

Tensor ForwardChain(LayerChain& chain, Tensor x, bool training) {
  for (auto& layer : chain) x = layer->Forward(x, training);
  return x;
}

void BackwardChain(LayerChain& chain, Tensor grad) {
  for (size_t i = chain.size(); i-- > 0;) grad = chain[i]->Backward(grad, i > 0);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ActorCritic>> ActorCritic::Create(const ActorCriticShape& shape,
                                                                  uint64_t seed) {
  if (shape.inputs < 1 || shape.actions < 2 || shape.hidden < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "actor-critic with ", shape.inputs, " inputs, ", shape.actions, " actions and ",
        shape.hidden, " hidden units: it needs at least 1, 2 and 1"));
  }
  std::unique_ptr<ActorCritic> net(new ActorCritic(shape));
  STRATA_ASSIGN_OR_RETURN(net->policy_,
                          Perceptron("policy", shape.inputs, shape.hidden, shape.actions));
  STRATA_ASSIGN_OR_RETURN(net->value_, Perceptron("value", shape.inputs, shape.hidden, 1));
  Rng rng(seed);
  for (auto* chain : {&net->policy_, &net->value_}) {
    for (auto& layer : *chain) layer->InitParameters(rng);
  }
  // Small last-layer weights: the first policy is near uniform.
  for (Parameter* p : net->policy_.back()->parameters()) {
    float* v = p->value.data();
    for (int64_t i = 0; i < p->value.numel(); ++i) v[i] *= 0.01f;
  }
  return net;
}

ActorCritic::Output ActorCritic::Forward(const Tensor& states, bool training) {
  return {ForwardChain(policy_, states, training), ForwardChain(value_, states, training)};
}

void ActorCritic::Backward(const Tensor& dlogits, const Tensor& dvalues) {
  BackwardChain(policy_, dlogits);
  BackwardChain(value_, dvalues);
}

std::vector<Parameter*> ActorCritic::parameters() {
  std::vector<Parameter*> all;
  for (auto* chain : {&policy_, &value_}) {
    for (auto& layer : *chain) {
      for (Parameter* p : layer->parameters()) all.push_back(p);
    }
  }
  return all;
}

absl::Status ActorCritic::Save(const std::string& path, const std::string& contender,
                               const nlohmann::json& about) const {
  Checkpoint checkpoint;
  checkpoint.metadata_json = nlohmann::json{{"kind", kPolicyKind},
                                            {"contender", contender},
                                            {"inputs", shape_.inputs},
                                            {"actions", shape_.actions},
                                            {"hidden", shape_.hidden},
                                            {"about", about}}
                                 .dump();
  for (Parameter* p : const_cast<ActorCritic*>(this)->parameters()) {
    checkpoint.tensors.push_back({p->name, p->value.Clone()});
  }
  return WithContext(WriteCheckpoint(path, checkpoint), absl::StrCat("--policy-file ", path));
}

namespace {

// A policy file's checkpoint and its metadata; InvalidArgument for a
// checkpoint of another kind, the reader's error (with the path) else.
struct PolicyFile {
  Checkpoint checkpoint;
  nlohmann::json meta;
};
absl::StatusOr<PolicyFile> ReadPolicyFile(const std::string& path) {
  const std::string where = absl::StrCat("--policy-file ", path);
  absl::StatusOr<Checkpoint> checkpoint = ReadCheckpoint(path);
  STRATA_RETURN_IF_ERROR_CTX(checkpoint.status(), where);
  nlohmann::json meta = nlohmann::json::parse(checkpoint->metadata_json, nullptr, false);
  if (!meta.is_object() || meta.value("kind", "") != kPolicyKind) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": not a SeCBAD policy file (a Strata checkpoint of another kind)"));
  }
  if (!meta.contains("about") || !meta["about"].is_object()) meta["about"] = nlohmann::json::object();
  return PolicyFile{std::move(*checkpoint), std::move(meta)};
}

}  // namespace

absl::StatusOr<nlohmann::json> ActorCritic::ReadAbout(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(PolicyFile file, ReadPolicyFile(path));
  return file.meta["about"];
}

absl::StatusOr<std::unique_ptr<ActorCritic>> ActorCritic::Load(const std::string& path,
                                                               const ActorCriticShape& shape,
                                                               const std::string& contender,
                                                               const nlohmann::json& about) {
  const std::string where = absl::StrCat("--policy-file ", path);
  STRATA_ASSIGN_OR_RETURN(PolicyFile file, ReadPolicyFile(path));
  const nlohmann::json& meta = file.meta;
  const Checkpoint* checkpoint = &file.checkpoint;
  const std::string trained_as = meta.value("contender", "");
  if (!contender.empty() && trained_as != contender) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": trained as \"", trained_as,
                                                   "\", not as \"", contender, "\""));
  }
  const nlohmann::json& written_about = meta.at("about");
  // What the policy is for, the knob first (the clearest difference).
  std::vector<std::string> keys;
  for (const auto& [key, wanted] : about.items()) keys.push_back(key);
  std::stable_partition(keys.begin(), keys.end(), [](const std::string& k) { return k == "knob"; });
  for (const std::string& key : keys) {
    const nlohmann::json& wanted = about[key];
    const nlohmann::json got = written_about.contains(key) ? written_about[key] : nlohmann::json();
    if (got != wanted) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": trained for ", key, " ",
                                                     got.is_null() ? "(not said)" : got.dump(),
                                                     "; this job's is ", wanted.dump()));
    }
  }
  const ActorCriticShape written{meta.value("inputs", 0), meta.value("actions", 0),
                                 meta.value("hidden", 0)};
  if (written.inputs != shape.inputs || written.actions != shape.actions ||
      written.hidden != shape.hidden) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": made for ", written.inputs, " inputs, ", written.actions, " actions and ",
        written.hidden, " hidden units; this one has ", shape.inputs, ", ", shape.actions,
        " and ", shape.hidden));
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ActorCritic> net, Create(shape, 0));
  std::vector<Parameter*> params = net->parameters();
  if (checkpoint->tensors.size() != params.size()) {
    return absl::DataLossError(absl::StrCat(where, ": holds ", checkpoint->tensors.size(),
                                            " tensors, the networks have ", params.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const NamedTensor& t = checkpoint->tensors[i];
    if (t.name != params[i]->name || t.value.numel() != params[i]->value.numel()) {
      return absl::DataLossError(absl::StrCat(where, ": tensor ", i, " is \"", t.name, "\" of ",
                                              t.value.numel(), " values, expected \"",
                                              params[i]->name, "\" of ",
                                              params[i]->value.numel()));
    }
    params[i]->value.CopyFrom(t.value);
  }
  return net;
}

}  // namespace strata::secbad
