#include "fc_workers/head_expert_group.h"

#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "moe/moe_layer_type.h"

namespace strata {

absl::StatusOr<ServingAddress> ExpertExchangeAddress(const ServingAddress& fc_worker) {
  STRATA_ASSIGN_OR_RETURN(BindTarget bind, ParseBindAddress(fc_worker.bind));
  ServingAddress exchange = fc_worker;
  if (bind.scheme == "ipc") {
    if (bind.host != "*") exchange.bind = fc_worker.bind + ".experts";  // ipc://*: a fresh path
    return exchange;
  }
  if (bind.first_port != 0 && bind.first_port == bind.last_port) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the FC worker binds ", fc_worker.bind, ", a single port, and its MoE expert exchange "
        "needs a second: give a port range (tcp://HOST:", bind.first_port, "-",
        bind.first_port + 1, ") or port 0"));
  }
  return exchange;
}

absl::StatusOr<std::unique_ptr<HeadExpertGroup>> HeadExpertGroup::Bind(
    Model& model, int split, const ServingAddress& fc_worker,
    const ExpertExchangeOptions& options) {
  std::vector<moe::MoeLayer*> layers;
  for (int i = split; i < model.num_layers(); ++i) {
    if (auto* m = dynamic_cast<moe::MoeLayer*>(&model.layer(i))) layers.push_back(m);
  }
  if (layers.empty()) return nullptr;
  STRATA_ASSIGN_OR_RETURN(ServingAddress address, ExpertExchangeAddress(fc_worker));
  STRATA_ASSIGN_OR_RETURN(auto exchange, ZmqExpertExchange::Bind(address, options));
  return std::unique_ptr<HeadExpertGroup>(
      new HeadExpertGroup(std::move(layers), std::move(exchange)));
}

absl::Status HeadExpertGroup::Join(const std::vector<std::string>& peer_addresses) {
  STRATA_RETURN_IF_ERROR_CTX(exchange_->Connect(peer_addresses), "connecting the FC workers");
  for (size_t i = 0; i < layers_.size(); ++i) {
    STRATA_RETURN_IF_ERROR(layers_[i]->JoinExpertGroup(exchange_.get(), static_cast<int>(i)));
    const std::vector<Parameter*> experts = layers_[i]->expert_parameters();
    owned_.insert(owned_.end(), experts.begin(), experts.end());
  }
  return absl::OkStatus();
}

void HeadExpertGroup::DeclareKnobs(JobKnobs& knobs) {
  settings_ = layers_.front()->options().parallel;
  const std::map<std::string, std::string> initial = {
      {moe::kPipelineChunksKnob, std::to_string(settings_.chunks)},
      {moe::kParallelismKnob, moe::ParallelismName(settings_.parallelism)}};
  for (const auto& [name, value] : initial) {
    knobs.Declare(name, value, [this, knob = name](const std::string& v) -> absl::Status {
      moe::ParallelSettings next = settings_;
      STRATA_RETURN_IF_ERROR(moe::ApplyMoeKnob(knob, v, &next));
      for (moe::MoeLayer* layer : layers_)
        STRATA_RETURN_IF_ERROR(layer->set_parallel_settings(next));
      settings_ = next;
      return absl::OkStatus();
    });
  }
}

absl::Status HeadExpertGroup::status() const {
  for (const moe::MoeLayer* layer : layers_) STRATA_RETURN_IF_ERROR(layer->status());
  return absl::OkStatus();
}

absl::Status HeadExpertGroup::GatherForEvaluation() {
  for (moe::MoeLayer* layer : layers_) STRATA_RETURN_IF_ERROR(layer->GatherExperts());
  return absl::OkStatus();
}

absl::Status HeadExpertGroup::Leave() {
  for (moe::MoeLayer* layer : layers_) STRATA_RETURN_IF_ERROR(layer->LeaveExpertGroup());
  owned_.clear();
  return absl::OkStatus();
}

}  // namespace strata
