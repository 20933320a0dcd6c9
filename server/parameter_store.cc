#include "server/parameter_store.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace strata {

absl::StatusOr<Consistency> ParseConsistency(const std::string& name) {
  if (name == "bsp") return Consistency::kBsp;
  if (name == "ssp") return Consistency::kSsp;
  if (name == "asp") return Consistency::kAsp;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown consistency \"", name, "\" (use bsp, ssp or asp)"));
}

const char* ConsistencyName(Consistency c) {
  switch (c) {
    case Consistency::kBsp: return "bsp";
    case Consistency::kSsp: return "ssp";
    case Consistency::kAsp: return "asp";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<ParameterStore>> ParameterStore::Create(
    const PartitionPlan& plan, int server, const StoreOptions& options) {
  if (server < 0 || server >= plan.servers()) {
    return absl::InvalidArgumentError(
        absl::StrCat("server rank ", server, " outside [0, ", plan.servers(), ")"));
  }
  if (options.workers < 1 || options.staleness < 0) {
    return absl::InvalidArgumentError("the store needs workers >= 1 and staleness >= 0");
  }
  STRATA_ASSIGN_OR_RETURN(auto optimizer, Optimizer::Create(options.optimizer));
  return std::unique_ptr<ParameterStore>(
      new ParameterStore(plan, server, options, std::move(optimizer)));
}

ParameterStore::ParameterStore(const PartitionPlan& plan, int server, StoreOptions options,
                               std::unique_ptr<Optimizer> optimizer)
    : plan_(plan),
      server_(server),
      options_(std::move(options)),
      optimizer_(std::move(optimizer)),
      schedule_(options_.schedule, options_.optimizer.lr, options_.total_steps),
      slot_of_chunk_(plan.chunks().size(), -1),
      clocks_(options_.workers, 0) {
  const int slots = optimizer_->state_slots();
  for (const Chunk& c : plan.chunks_of_server(server)) {
    Slot slot;
    slot.chunk = c;
    const auto n = static_cast<int64_t>(c.length);
    slot.value = Tensor::Zeros({n});
    if (slots > 0) slot.state = Tensor::Zeros({slots, n});
    slot.last_push.assign(pushers(c.key), -1);
    slot_of_chunk_[c.index] = static_cast<int>(slots_.size());
    slots_.push_back(std::move(slot));
  }
}

int ParameterStore::pushers(uint32_t key) const {
  const bool head = options_.head_first_key >= 0 && key >= static_cast<uint32_t>(options_.head_first_key);
  return head ? options_.head_workers : options_.workers;
}

ParameterStore::Slot* ParameterStore::Find(const Chunk& c) {
  if (c.index < 0 || c.index >= static_cast<int>(slot_of_chunk_.size())) return nullptr;
  const int s = slot_of_chunk_[c.index];
  return s < 0 ? nullptr : &slots_[s];
}

const ParameterStore::Slot* ParameterStore::Find(const Chunk& c) const {
  return const_cast<ParameterStore*>(this)->Find(c);
}

absl::Status ParameterStore::Init(const Chunk& c, const float* values) {
  Slot* slot = Find(c);
  if (slot == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("chunk ", c.index, " is not on server ", server_));
  }
  if (slot->version >= 0) return absl::OkStatus();
  std::memcpy(slot->value.data(), values, c.length * sizeof(float));
  slot->version = 0;
  return absl::OkStatus();
}

bool ParameterStore::initialized(const Chunk& c) const {
  const Slot* slot = Find(c);
  return slot != nullptr && slot->version >= 0;
}

void ParameterStore::Apply(Slot& slot, const float* gradient, float scale, int64_t iteration) {
  const int64_t n = static_cast<int64_t>(slot.chunk.length);
  // Copy on write: a pull reply still being sent holds the current buffer.
  if (slot.value.use_count() > 1) slot.value = slot.value.Clone();
  slot.updates++;
  optimizer_->Update(slot.value.data(), gradient,
                     slot.state.defined() ? slot.state.data() : nullptr, n,
                     schedule_.At(iteration), slot.updates, scale);
}

absl::StatusOr<PushOutcome> ParameterStore::Push(int worker, int64_t iteration, const Chunk& c,
                                                 const float* gradient) {
  Slot* slot = Find(c);
  if (slot == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("chunk ", c.index, " is not on server ", server_));
  }
  const int pushers = this->pushers(c.key);
  if (worker < 0 || worker >= pushers) {
    return absl::InvalidArgumentError(absl::StrCat("push from worker rank ", worker,
                                                   ", the job has ", pushers, " workers"));
  }
  if (slot->version < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("push to key ", c.key, " before it was initialised"));
  }
  if (iteration < 0) {
    return absl::InvalidArgumentError(absl::StrCat("push for iteration ", iteration));
  }
  if (pushers == options_.workers &&
      (options_.head_first_key < 0 || c.key < static_cast<uint32_t>(options_.head_first_key))) {
    clocks_[worker] = std::max(clocks_[worker], iteration + 1);
  }
  const int64_t n = static_cast<int64_t>(c.length);
  if (options_.consistency != Consistency::kBsp) {
    if (iteration <= slot->last_push[worker]) return PushOutcome::kDuplicate;
    slot->last_push[worker] = iteration;
    Apply(*slot, gradient, 1.0f / static_cast<float>(pushers), iteration);
    slot->version++;
    return PushOutcome::kApplied;
  }
  if (iteration < slot->version || (iteration == slot->version && slot->pushed.count(worker))) {
    return PushOutcome::kDuplicate;
  }
  if (iteration > slot->version) {
    return absl::FailedPreconditionError(absl::StrCat(
        "BSP push for iteration ", iteration, " of key ", c.key, " while the server is at ",
        slot->version, " (a worker ran ahead without pulling)"));
  }
  if (pushers == 1) {  // nothing to wait for: apply straight from the message
    slot->pushed.clear();
    Apply(*slot, gradient, 1.0f, iteration);
    slot->version = iteration + 1;
    return PushOutcome::kApplied;
  }
  if (slot->pushed.empty()) {
    if (!slot->pending.defined()) slot->pending = Tensor::Empty({n});
    std::memcpy(slot->pending.data(), gradient, n * sizeof(float));
  } else {
    float* acc = slot->pending.data();
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) acc[i] += gradient[i];
  }
  slot->pushed.insert(worker);
  if (static_cast<int>(slot->pushed.size()) < pushers) return PushOutcome::kAccepted;
  Apply(*slot, slot->pending.data(), 1.0f / static_cast<float>(pushers), iteration);
  slot->pushed.clear();
  slot->version = iteration + 1;
  return PushOutcome::kApplied;
}

int64_t ParameterStore::min_clock() const {
  return *std::min_element(clocks_.begin(), clocks_.end());
}

bool ParameterStore::CanServe(const Chunk& c, int64_t iteration) const {
  const Slot* slot = Find(c);
  if (slot == nullptr || slot->version < 0) return false;
  if (iteration < 0) return true;
  switch (options_.consistency) {
    case Consistency::kBsp:
      return slot->version >= iteration;
    case Consistency::kSsp:
      return iteration - min_clock() <= options_.staleness;
    case Consistency::kAsp:
      return true;
  }
  return false;
}

void ParameterStore::NoteServed(int64_t iteration) {
  if (iteration >= 0) max_served_lead_ = std::max(max_served_lead_, iteration - min_clock());
}

const float* ParameterStore::value(const Chunk& c) const {
  const Slot* slot = Find(c);
  return slot == nullptr ? nullptr : slot->value.data();
}

Tensor ParameterStore::value_tensor(const Chunk& c) const {
  const Slot* slot = Find(c);
  return slot == nullptr ? Tensor() : slot->value;
}

int64_t ParameterStore::version(const Chunk& c) const {
  const Slot* slot = Find(c);
  return slot == nullptr ? -1 : slot->version;
}

Checkpoint ParameterStore::Capture() const {
  Checkpoint checkpoint;
  nlohmann::json meta = {{"server", server_}, {"clocks", clocks_}};
  nlohmann::json versions = nlohmann::json::array();
  for (const Slot& slot : slots_) {
    versions.push_back({slot.chunk.index, slot.version, slot.updates});
    const std::string name = absl::StrCat("chunk", slot.chunk.index);
    checkpoint.tensors.push_back({name, slot.value.Clone()});
    if (slot.state.defined()) checkpoint.tensors.push_back({name + ".state", slot.state.Clone()});
  }
  meta["chunks"] = versions;
  checkpoint.metadata_json = meta.dump();
  return checkpoint;
}

absl::Status ParameterStore::Restore(const Checkpoint& checkpoint) {
  nlohmann::json meta = nlohmann::json::parse(checkpoint.metadata_json, nullptr, false);
  if (!meta.is_object() || !meta.contains("server") || !meta.contains("chunks") ||
      !meta.contains("clocks")) {
    return absl::DataLossError("server checkpoint metadata lacks server/chunks/clocks");
  }
  if (meta["server"] != server_) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint belongs to server ",
                                                   meta["server"].dump(), ", this is server ",
                                                   server_));
  }
  if (meta["chunks"].size() != slots_.size() || meta["clocks"].size() != clocks_.size()) {
    return absl::InvalidArgumentError(
        "checkpoint was written for another model, cluster shape or server count");
  }
  std::map<std::string, const Tensor*> tensors;
  for (const auto& t : checkpoint.tensors) tensors[t.name] = &t.value;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    const auto& entry = meta["chunks"][i];
    if (entry[0] != slot.chunk.index) {
      return absl::InvalidArgumentError("checkpoint chunk order differs from this plan");
    }
    const std::string name = absl::StrCat("chunk", slot.chunk.index);
    auto v = tensors.find(name);
    if (v == tensors.end() || v->second->numel() != slot.value.numel()) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint lacks ", name, " or its size differs"));
    }
    if (slot.state.defined()) {
      auto s = tensors.find(name + ".state");
      if (s == tensors.end() || s->second->numel() != slot.state.numel()) {
        return absl::InvalidArgumentError(absl::StrCat("checkpoint lacks ", name, ".state"));
      }
    }
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    const std::string name = absl::StrCat("chunk", slot.chunk.index);
    slot.value.CopyFrom(*tensors[name]);
    if (slot.state.defined()) slot.state.CopyFrom(*tensors[name + ".state"]);
    slot.version = meta["chunks"][i][1].get<int64_t>();
    slot.updates = meta["chunks"][i][2].get<int64_t>();
    slot.pushed.clear();
  }
  for (size_t w = 0; w < clocks_.size(); ++w) clocks_[w] = meta["clocks"][w].get<int64_t>();
  // SSP/ASP de-duplicate by the last iteration each pusher applied; after a
  // restore that is what its clock says (iterations are pushed in order).
  for (Slot& slot : slots_) {
    const int n = pushers(slot.chunk.key);
    slot.last_push.assign(n, -1);
    if (n == options_.workers) {
      for (int w = 0; w < n; ++w) slot.last_push[w] = clocks_[w] - 1;
    }
  }
  return absl::OkStatus();
}

}  // namespace strata
