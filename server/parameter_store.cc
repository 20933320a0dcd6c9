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
    case Consistency::kBsp:
      return "bsp";
    case Consistency::kSsp:
      return "ssp";
    case Consistency::kAsp:
      return "asp";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<ParameterStore>> ParameterStore::Create(
    const PartitionPlan& plan, int server, const StoreOptions& options) {
  if (server < 0 || server >= plan.servers()) {
    return absl::InvalidArgumentError(
        absl::StrCat("server rank ", server, " outside [0, ", plan.servers(), ")"));
  }
  if (options.conv_workers < 1 || options.fc_workers < 0 || options.staleness < 0) {
    return absl::InvalidArgumentError(
        "the store needs conv_workers >= 1, fc_workers >= 0 and staleness >= 0");
  }
  if (!options.keys.empty() && static_cast<int>(options.keys.size()) != plan.num_keys()) {
    return absl::InvalidArgumentError(absl::StrCat("the store has rules for ", options.keys.size(),
                                                   " keys, the plan has ", plan.num_keys()));
  }
  for (const KeyRule& rule : options.keys) {
    if (rule.owner == KeyOwner::kFcWorkers && options.fc_workers < 1) {
      return absl::InvalidArgumentError("keys pushed by FC workers, but the job has none");
    }
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
      rules_(options_.keys),
      optimizer_(std::move(optimizer)),
      schedule_(options_.schedule, options_.optimizer.lr, options_.total_steps),
      slot_of_chunk_(plan.chunks().size(), -1),
      clocks_(options_.conv_workers, 0) {
  if (rules_.empty()) rules_.assign(plan.num_keys(), KeyRule());
  const int optimizer_slots = optimizer_->state_slots();
  const bool async = options_.consistency != Consistency::kBsp;
  for (const Chunk& c : plan.chunks_of_server(server)) {
    Slot slot;
    slot.chunk = c;
    slot.rule = rules_[c.key];
    const auto n = static_cast<int64_t>(c.length);
    const int pushers = this->pushers(c.key);
    slot.value = Tensor::Zeros({n});
    if (slot.rule.kind == KeyKind::kParameter && optimizer_slots > 0) {
      slot.state = Tensor::Zeros({optimizer_slots, n});
    }
    if (slot.rule.kind == KeyKind::kState && async) slot.latest = Tensor::Zeros({pushers, n});
    slot.pushed.assign(pushers, false);
    slot.clock.assign(pushers, 0);
    slot_of_chunk_[c.index] = static_cast<int>(slots_.size());
    slots_.push_back(std::move(slot));
  }
}

int ParameterStore::pushers(uint32_t key) const {
  return rules_[key].owner == KeyOwner::kFcWorkers ? options_.fc_workers : options_.conv_workers;
}

ParameterStore::Slot* ParameterStore::Find(const Chunk& c) {
  if (c.index < 0 || c.index >= static_cast<int>(slot_of_chunk_.size())) return nullptr;
  const int s = slot_of_chunk_[c.index];
  return s < 0 ? nullptr : &slots_[s];
}

const ParameterStore::Slot* ParameterStore::Find(const Chunk& c) const {
  return const_cast<ParameterStore*>(this)->Find(c);
}

std::string ParameterStore::Describe(const Slot& slot) const {
  return absl::StrCat(KeyKindName(slot.rule.kind), " key ", slot.chunk.key, " chunk ",
                      slot.chunk.index);
}

absl::Status ParameterStore::Init(const Chunk& c, const float* values) {
  Slot* slot = Find(c);
  if (slot == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk ", c.index, " is not on server ", server_));
  }
  if (slot->version >= 0) return absl::OkStatus();
  std::memcpy(slot->value.data(), values, c.length * sizeof(float));
  if (slot->latest.defined()) {
    for (int p = 0; p < slot->latest.dim(0); ++p) {
      std::memcpy(slot->latest.data() + p * slot->latest.dim(1), values, c.length * sizeof(float));
    }
  }
  slot->version = 0;
  return absl::OkStatus();
}

bool ParameterStore::initialized(const Chunk& c) const {
  const Slot* slot = Find(c);
  return slot != nullptr && slot->version >= 0;
}

absl::StatusOr<PushOutcome> ParameterStore::Check(int pusher, int64_t iteration,
                                                  const Chunk& c) const {
  const Slot* slot = Find(c);
  if (slot == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk ", c.index, " is not on server ", server_));
  }
  const int pushers = this->pushers(c.key);
  if (pusher < 0 || pusher >= pushers) {
    return absl::InvalidArgumentError(absl::StrCat("push from worker rank ", pusher,
                                                   ", the job has ", pushers, " ",
                                                   KeyOwnerName(slot->rule.owner)));
  }
  if (iteration < 0) {
    return absl::InvalidArgumentError(absl::StrCat("push for iteration ", iteration));
  }
  if (slot->version < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("push to key ", c.key, " before it was initialised"));
  }
  const int64_t clock = slot->clock[pusher];
  if (options_.consistency == Consistency::kBsp) {
    if (iteration < slot->version || (iteration == slot->version && slot->pushed[pusher])) {
      return PushOutcome::kDuplicate;
    }
    if (iteration > slot->version) {
      return absl::FailedPreconditionError(absl::StrCat(
          "BSP push for iteration ", iteration, " of key ", c.key, " while the server is at ",
          slot->version, " (a worker ran ahead without pulling)"));
    }
    return static_cast<int>(std::count(slot->pushed.begin(), slot->pushed.end(), true)) + 1 ==
                   pushers
               ? PushOutcome::kApplied
               : PushOutcome::kAccepted;
  }
  if (iteration < clock) return PushOutcome::kDuplicate;
  if (iteration > clock) {
    return absl::FailedPreconditionError(
        absl::StrCat(ConsistencyName(options_.consistency), " push for iteration ", iteration,
                     " of key ", c.key, " from worker ", pusher, ", whose next iteration there is ",
                     clock, " (iterations are pushed in order)"));
  }
  if (options_.consistency == Consistency::kSsp && iteration - slot->version > options_.staleness) {
    return absl::FailedPreconditionError(
        absl::StrCat("SSP push for iteration ", iteration, " of key ", c.key, " from worker ",
                     pusher, " while the slowest worker there has completed ", slot->version,
                     " iterations: more than the staleness bound ", options_.staleness, " ahead"));
  }
  return PushOutcome::kApplied;
}

void ParameterStore::PrepareWrite(Slot& slot) {
  // Copy on write: a pull reply still being sent holds the current buffer.
  if (slot.value.use_count() > 1) slot.value = slot.value.Clone();
}

void ParameterStore::ApplyGradient(Slot& slot, const float* gradient, float scale,
                                   int64_t iteration) {
  PrepareWrite(slot);
  slot.updates++;
  optimizer_->Update(
      slot.value.data(), gradient, slot.state.defined() ? slot.state.data() : nullptr,
      static_cast<int64_t>(slot.chunk.length), schedule_.At(iteration), slot.updates, scale);
}

void ParameterStore::ApplyPushAsync(Slot& slot, int pusher, int64_t iteration,
                                    const float* values) {
  const int64_t n = static_cast<int64_t>(slot.chunk.length);
  const int pushers = static_cast<int>(slot.clock.size());
  if (slot.rule.kind == KeyKind::kParameter) {
    ApplyGradient(slot, values, 1.0f / static_cast<float>(pushers), iteration);
  } else {
    // The mean of every pusher's latest values (initial values for those
    // that have not pushed yet).
    std::memcpy(slot.latest.data() + pusher * n, values, n * sizeof(float));
    PrepareWrite(slot);
    float* mean = slot.value.data();
    const float* rows = slot.latest.data();
    const float inv = 1.0f / static_cast<float>(pushers);
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0;
      for (int p = 0; p < pushers; ++p) sum += rows[p * n + i];
      mean[i] = sum * inv;
    }
  }
  slot.clock[pusher] = iteration + 1;
  slot.version = *std::min_element(slot.clock.begin(), slot.clock.end());
}

PushOutcome ParameterStore::ApplyPushBsp(Slot& slot, int pusher, int64_t iteration,
                                         const float* values) {
  const int64_t n = static_cast<int64_t>(slot.chunk.length);
  const int pushers = static_cast<int>(slot.clock.size());
  const int arrived = static_cast<int>(std::count(slot.pushed.begin(), slot.pushed.end(), true));
  slot.clock[pusher] = iteration + 1;
  const float* combined = values;  // one pusher: apply straight from the message
  if (pushers > 1) {
    if (arrived == 0) {
      if (!slot.pending.defined()) slot.pending = Tensor::Empty({n});
      std::memcpy(slot.pending.data(), values, n * sizeof(float));
    } else {
      float* acc = slot.pending.data();
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) acc[i] += values[i];
    }
    slot.pushed[pusher] = true;
    if (arrived + 1 < pushers) return PushOutcome::kAccepted;
    combined = slot.pending.data();
  }
  const float inv = 1.0f / static_cast<float>(pushers);
  if (slot.rule.kind == KeyKind::kParameter) {
    ApplyGradient(slot, combined, inv, iteration);
  } else {
    PrepareWrite(slot);
    float* mean = slot.value.data();
    for (int64_t i = 0; i < n; ++i) mean[i] = combined[i] * inv;
  }
  slot.pushed.assign(pushers, false);
  slot.version = iteration + 1;
  return PushOutcome::kApplied;
}

absl::StatusOr<PushOutcome> ParameterStore::Push(int pusher, int64_t iteration, const Chunk& c,
                                                 const float* values) {
  STRATA_ASSIGN_OR_RETURN(const PushOutcome outcome, Check(pusher, iteration, c));
  if (outcome == PushOutcome::kDuplicate) return outcome;
  Slot& slot = *Find(c);
  if (slot.rule.owner == KeyOwner::kConvWorkers) {
    clocks_[pusher] = std::max(clocks_[pusher], iteration + 1);
  }
  if (options_.consistency == Consistency::kBsp)
    return ApplyPushBsp(slot, pusher, iteration, values);
  ApplyPushAsync(slot, pusher, iteration, values);
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
      return iteration - slot->version <= options_.staleness;
    case Consistency::kAsp:
      return true;
  }
  return false;
}

void ParameterStore::NoteServed(const Chunk& c, int64_t iteration) {
  const Slot* slot = Find(c);
  if (slot == nullptr || iteration < 0) return;
  max_served_lead_ = std::max(max_served_lead_, iteration - slot->version);
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

int64_t ParameterStore::min_version(const std::vector<Chunk>& chunks) const {
  int64_t lowest = -1;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const int64_t v = version(chunks[i]);
    lowest = i == 0 ? v : std::min(lowest, v);
  }
  return lowest;
}

Checkpoint ParameterStore::Capture() const {
  Checkpoint checkpoint;
  nlohmann::json meta = {{"server", server_}, {"clocks", clocks_}};
  nlohmann::json chunks = nlohmann::json::array();
  for (const Slot& slot : slots_) {
    chunks.push_back({{"index", slot.chunk.index},
                      {"version", slot.version},
                      {"updates", slot.updates},
                      {"clock", slot.clock}});
    const std::string name = absl::StrCat("chunk", slot.chunk.index);
    checkpoint.tensors.push_back({name, slot.value.Clone()});
    if (slot.state.defined()) checkpoint.tensors.push_back({name + ".state", slot.state.Clone()});
    if (slot.latest.defined()) {
      checkpoint.tensors.push_back({name + ".latest", slot.latest.Clone()});
    }
  }
  meta["chunks"] = chunks;
  checkpoint.metadata_json = meta.dump();
  return checkpoint;
}

absl::Status ParameterStore::Restore(const Checkpoint& checkpoint) {
  nlohmann::json meta = nlohmann::json::parse(checkpoint.metadata_json, nullptr, false);
  if (!meta.is_object() || !meta.contains("server") || !meta.contains("chunks") ||
      !meta.contains("clocks") || !meta["chunks"].is_array() || !meta["clocks"].is_array()) {
    return absl::DataLossError("server checkpoint metadata lacks server/chunks/clocks");
  }
  if (meta["server"] != server_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint belongs to server ", meta["server"].dump(), ", this is server ", server_));
  }
  // Under BSP every pusher stands at its chunk's version in a checkpoint,
  // so a job may come back with another number of conv workers (one it
  // lost, or more); every other difference is another job.
  const bool bsp = options_.consistency == Consistency::kBsp;
  if (meta["chunks"].size() != slots_.size() ||
      (!bsp && meta["clocks"].size() != clocks_.size())) {
    return absl::InvalidArgumentError(
        "checkpoint was written for another model, cluster shape or server count");
  }
  // How many pushers a key's chunks were written with: the conv workers'
  // count may differ (above), the FC workers' may not.
  const auto clock_fits = [&](const Slot& slot, size_t written) {
    return written == slot.clock.size() ||
           (bsp && slot.rule.owner == KeyOwner::kConvWorkers && written >= 1 &&
            written == meta["clocks"].size());
  };
  std::map<std::string, const Tensor*> tensors;
  for (const auto& t : checkpoint.tensors) tensors[t.name] = &t.value;
  auto find = [&](const std::string& name, const Tensor& like) -> const Tensor* {
    auto it = tensors.find(name);
    return it == tensors.end() || it->second->numel() != like.numel() ? nullptr : it->second;
  };
  // Everything is checked before anything changes.
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = slots_[i];
    const auto& entry = meta["chunks"][i];
    auto integer = [&entry](const char* field) {
      return entry.contains(field) && entry[field].is_number_integer();
    };
    bool described = entry.is_object() && integer("index") && integer("version") &&
                     integer("updates") && entry.contains("clock") && entry["clock"].is_array() &&
                     clock_fits(slot, entry["clock"].size()) &&
                     entry["index"].get<int64_t>() == slot.chunk.index;
    for (size_t p = 0; described && p < entry["clock"].size(); ++p) {
      described = entry["clock"][p].is_number_integer() && entry["clock"][p].get<int64_t>() >= 0;
    }
    if (!described) {
      return absl::DataLossError(absl::StrCat("checkpoint entry ", i, " does not describe chunk ",
                                              slot.chunk.index, " of this plan"));
    }
    if (options_.consistency != Consistency::kBsp) {
      const auto clock = entry["clock"].get<std::vector<int64_t>>();
      if (entry["version"].get<int64_t>() != *std::min_element(clock.begin(), clock.end())) {
        return absl::DataLossError(absl::StrCat("checkpoint entry ", i,
                                                ": the version is not the slowest pusher's clock"));
      }
    }
    const std::string name = absl::StrCat("chunk", slot.chunk.index);
    if (find(name, slot.value) == nullptr ||
        (slot.state.defined() && find(name + ".state", slot.state) == nullptr) ||
        (slot.latest.defined() && find(name + ".latest", slot.latest) == nullptr)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint lacks ", name, " (or its optimizer or pusher state) or its size differs"));
    }
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    const auto& entry = meta["chunks"][i];
    const std::string name = absl::StrCat("chunk", slot.chunk.index);
    slot.value.CopyFrom(*tensors[name]);
    if (slot.state.defined()) slot.state.CopyFrom(*tensors[name + ".state"]);
    if (slot.latest.defined()) slot.latest.CopyFrom(*tensors[name + ".latest"]);
    slot.version = entry["version"].get<int64_t>();
    slot.updates = entry["updates"].get<int64_t>();
    // BSP: the pushes of the iteration in progress were not saved; every
    // pusher (of however many there are now) sends them again.
    if (bsp) {
      slot.pushed.assign(slot.clock.size(), false);
      slot.clock.assign(slot.clock.size(), slot.version);
    } else {
      slot.clock = entry["clock"].get<std::vector<int64_t>>();
    }
  }
  int64_t slowest = -1;
  for (const nlohmann::json& c : meta["clocks"]) {
    const int64_t clock = c.is_number_integer() ? c.get<int64_t>() : 0;
    slowest = slowest < 0 ? clock : std::min(slowest, clock);
  }
  for (size_t w = 0; w < clocks_.size(); ++w) {
    clocks_[w] = bsp || w >= meta["clocks"].size() || !meta["clocks"][w].is_number_integer()
                     ? std::max<int64_t>(slowest, 0)
                     : meta["clocks"][w].get<int64_t>();
  }
  return absl::OkStatus();
}

}  // namespace strata
