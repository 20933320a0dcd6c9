#include "runtime/parameter_sync.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/util/log.h"

namespace strata {

ParameterSync::ParameterSync(KvClient& client, Model& model, std::vector<ServerKey> keys,
                             KeyOwner owner)
    : client_(client), model_(model), keys_(std::move(keys)), owner_(owner) {
  for (size_t k = 0; k < keys_.size(); ++k) {
    if (keys_[k].owner == owner_)
      keys_of_layer_[keys_[k].layer].push_back(static_cast<uint32_t>(k));
  }
}

std::vector<uint32_t> ParameterSync::KeysOf(KeyOwner owner, KeyKind kind) const {
  std::vector<uint32_t> out;
  for (size_t k = 0; k < keys_.size(); ++k) {
    if (keys_[k].owner == owner && keys_[k].kind == kind) out.push_back(static_cast<uint32_t>(k));
  }
  return out;
}

Tensor ParameterSync::PullTarget(uint32_t k) {
  const Tensor& value = keys_[k].value();
  if (value.device() == Device::kCpu) return value;
  Tensor& buffer = pulled_values_[k];
  if (!buffer.defined()) buffer = Tensor::Empty(value.shape());
  in_flight_pulls_.push_back(k);
  return buffer;
}

absl::Status ParameterSync::Completed(const absl::Status& waited) {
  std::vector<uint32_t> pulled;
  pulled.swap(in_flight_pulls_);
  STRATA_RETURN_IF_ERROR(waited);  // what did arrive is not copied up
  for (uint32_t k : pulled) {
    STRATA_RETURN_IF_ERROR_CTX(CopyFromHost(pulled_values_[k], keys_[k].value()),
                               absl::StrCat("copying ", keys_[k].name, " to the device"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ParameterSync::Pull(const std::vector<uint32_t>& keys, int64_t iteration) {
  std::vector<Ticket> pulls;
  for (uint32_t k : keys) pulls.push_back(client_.Pull(iteration, k, PullTarget(k)));
  STRATA_RETURN_IF_ERROR(Completed(client_.WaitAll(pulls)));
  int64_t version = -1;
  for (const Ticket& t : pulls)
    version = version < 0 ? t->version() : std::min(version, t->version());
  return version;
}

absl::StatusOr<int64_t> ParameterSync::PullCurrent() {
  std::vector<uint32_t> ours = KeysOf(owner_, KeyKind::kParameter);
  const std::vector<uint32_t> state = KeysOf(owner_, KeyKind::kState);
  ours.insert(ours.end(), state.begin(), state.end());
  if (ours.empty()) return int64_t{0};
  absl::StatusOr<int64_t> version = Pull(ours, -1);
  STRATA_RETURN_IF_ERROR_CTX(version.status(), "pulling the current parameters");
  return *version;
}

absl::StatusOr<int64_t> ParameterSync::Join(bool initialise) {
  if (initialise) {
    std::vector<Ticket> inits;
    for (size_t k = 0; k < keys_.size(); ++k) {
      if (keys_[k].owner != owner_) continue;
      STRATA_ASSIGN_OR_RETURN(const Tensor value, ToHost(keys_[k].value()));
      inits.push_back(client_.Init(static_cast<uint32_t>(k), value));
    }
    STRATA_RETURN_IF_ERROR_CTX(client_.WaitAll(inits), "initialising the servers");
  }
  return PullCurrent();
}

absl::StatusOr<int64_t> ParameterSync::Rejoin() {
  client_.CancelAll();
  tickets_.clear();
  in_flight_pulls_.clear();
  copy_error_ = absl::OkStatus();
  return PullCurrent();
}

std::function<void(int)> ParameterSync::AfterLayer(int64_t iteration) {
  tickets_.clear();
  return [this, iteration](int layer) {
    auto it = keys_of_layer_.find(layer);
    if (it == keys_of_layer_.end()) return;  // no key of ours in this layer
    for (uint32_t k : it->second) {
      const ServerKey& key = keys_[k];
      // What the wire sends: on a device, a host copy (the push keeps it).
      absl::StatusOr<Tensor> sent =
          ToHost(key.kind == KeyKind::kState ? key.state->value : key.parameter->grad);
      if (!sent.ok()) {
        if (copy_error_.ok()) {
          copy_error_ =
              WithContext(sent.status(), absl::StrCat("copying ", key.name, " to the host"));
        }
        continue;
      }
      if (key.kind == KeyKind::kState) {
        tickets_.push_back(client_.Push(iteration, k, *sent));
        continue;
      }
      KvClient::Exchange e = client_.PushThenPull(iteration, k, *sent, PullTarget(k));
      tickets_.push_back(e.push);
      tickets_.push_back(e.pull);
    }
  };
}

absl::Status ParameterSync::Finish() {
  const absl::Status copied = std::exchange(copy_error_, absl::OkStatus());
  STRATA_RETURN_IF_ERROR(Completed(client_.WaitAll(tickets_)));
  return copied;
}

absl::StatusOr<bool> ParameterSync::CompleteOrRewind(int64_t* iteration) {
  absl::Status exchanged = Finish();
  if (!absl::IsAborted(exchanged)) {
    STRATA_RETURN_IF_ERROR_CTX(exchanged, absl::StrCat("iteration ", *iteration));
    return true;
  }
  // A server came back from a checkpoint: drop what is in flight and continue
  // from the servers' iteration (the data order follows the iteration).
  LogWarning("%s", std::string(exchanged.message()).c_str());
  STRATA_ASSIGN_OR_RETURN(*iteration, Rejoin());
  LogInfo("rewound to iteration %lld", static_cast<long long>(*iteration));
  return false;
}

absl::Status ParameterSync::PullInto(KeyOwner owner, KeyKind kind, int64_t iteration) {
  const std::vector<uint32_t> keys = KeysOf(owner, kind);
  if (keys.empty()) return absl::OkStatus();
  return Pull(keys, iteration).status();
}

absl::StatusOr<StateSnapshot> StateSnapshot::Take(Model& model) {
  StateSnapshot snapshot(model);
  for (StateBuffer* b : model.state_buffers()) {
    STRATA_ASSIGN_OR_RETURN(Tensor copy, HostCopy(b->value));
    snapshot.values_.push_back(std::move(copy));
  }
  return snapshot;
}

absl::Status StateSnapshot::Restore() {
  const std::vector<StateBuffer*> buffers = model_.state_buffers();
  for (size_t i = 0; i < buffers.size(); ++i) {
    STRATA_RETURN_IF_ERROR(CopyFromHost(values_[i], buffers[i]->value));
  }
  return absl::OkStatus();
}

}  // namespace strata
