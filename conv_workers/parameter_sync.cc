#include "conv_workers/parameter_sync.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"

#include "core/status.h"

namespace strata {

ParameterSync::ParameterSync(PsClient& client, Model& model, int begin, int end,
                             uint32_t key_offset)
    : ParameterSync(client, model, model.parameters(begin, end), key_offset) {}

ParameterSync::ParameterSync(PsClient& client, Model& model, std::vector<Parameter*> params,
                             uint32_t key_offset)
    : client_(client), model_(model), params_(std::move(params)), key_offset_(key_offset) {
  for (size_t k = 0; k < params_.size(); ++k) {
    key_of_[params_[k]] = key_offset_ + static_cast<uint32_t>(k);
  }
}

std::vector<int64_t> ParameterSync::sizes() const {
  std::vector<int64_t> out;
  for (const Parameter* p : params_) out.push_back(p->value.numel());
  return out;
}

absl::StatusOr<int64_t> ParameterSync::PullCurrent() {
  std::vector<Ticket> pulls;
  for (size_t k = 0; k < params_.size(); ++k) {
    pulls.push_back(client_.Pull(-1, key_offset_ + static_cast<uint32_t>(k), params_[k]->value));
  }
  STRATA_RETURN_IF_ERROR_CTX(client_.WaitAll(pulls), "pulling the current parameters");
  int64_t version = pulls.front()->version();
  for (const Ticket& t : pulls) version = std::min(version, t->version());
  return version;
}

absl::StatusOr<int64_t> ParameterSync::Join(bool initialise) {
  if (initialise) {
    std::vector<Ticket> inits;
    for (size_t k = 0; k < params_.size(); ++k) {
      inits.push_back(client_.Init(key_offset_ + static_cast<uint32_t>(k), params_[k]->value));
    }
    STRATA_RETURN_IF_ERROR_CTX(client_.WaitAll(inits), "initialising the servers");
  }
  return PullCurrent();
}

absl::StatusOr<int64_t> ParameterSync::Rejoin() {
  client_.CancelAll();
  tickets_.clear();
  return PullCurrent();
}

std::function<void(int)> ParameterSync::AfterLayer(int64_t iteration) {
  tickets_.clear();
  return [this, iteration](int layer) {
    for (Parameter* p : model_.layer(layer).parameters()) {
      auto it = key_of_.find(p);
      if (it == key_of_.end()) continue;  // not a parameter this object syncs
      tickets_.push_back(client_.Push(iteration, it->second, p->grad));
      tickets_.push_back(client_.Pull(iteration + 1, it->second, p->value));
    }
  };
}

absl::Status ParameterSync::Finish() { return client_.WaitAll(tickets_); }

absl::StatusOr<bool> ParameterSync::CompleteOrRewind(int64_t* iteration,
                                                     const std::string& log_prefix) {
  absl::Status exchanged = Finish();
  if (!absl::IsAborted(exchanged)) {
    STRATA_RETURN_IF_ERROR_CTX(exchanged, absl::StrCat("iteration ", *iteration));
    return true;
  }
  // A server came back from a checkpoint: drop what is in flight and continue
  // from the servers' iteration (the data order follows the iteration).
  std::fprintf(stderr, "%s%s\n", log_prefix.c_str(), std::string(exchanged.message()).c_str());
  STRATA_ASSIGN_OR_RETURN(*iteration, Rejoin());
  std::fprintf(stderr, "%srewound to iteration %lld\n", log_prefix.c_str(),
               static_cast<long long>(*iteration));
  return false;
}

}  // namespace strata
