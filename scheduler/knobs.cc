#include "scheduler/knobs.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "core/util/batch_shares.h"
#include "core/util/fc_batching.h"

namespace strata {

KnobCatalog& KnobCatalog::Global() {
  static KnobCatalog* catalog = [] {
    auto* c = new KnobCatalog();
    KnobSpec wire;
    wire.name = kWireFormatKnob;
    wire.description =
        "what pushes, pulls and activations carry on the sockets: fp32, or bf16 (half the bytes)";
    wire.alters_math = true;
    wire.validate = [](const std::string& value) {
      return value == "fp32" || value == "bf16"
                 ? absl::OkStatus()
                 : absl::InvalidArgumentError("the wire formats are fp32 and bf16");
    };
    (void)c->Register(std::move(wire));
    KnobSpec shares;
    shares.name = kBatchSharesKnob;
    shares.description =
        "how each global batch divides over the conv workers: even, or a weight per conv worker "
        "(3:1)";
    // Per-worker batch statistics (BatchNorm) and summation order change.
    shares.alters_math = true;
    shares.validate = [](const std::string& value) { return BatchShares::Parse(value).status(); };
    shares.fits = [](const std::string& start, const std::string& value) -> absl::Status {
      absl::StatusOr<BatchShares> started = BatchShares::Parse(start);
      absl::StatusOr<BatchShares> wanted = BatchShares::Parse(value);
      if (!started.ok() || !wanted.ok() || wanted->even()) return wanted.status();
      if (wanted->weights().size() != started->weights().size()) {
        return absl::InvalidArgumentError(absl::StrCat("the job has ", started->weights().size(),
                                                       " conv workers; give one weight each"));
      }
      return absl::OkStatus();
    };
    (void)c->Register(std::move(shares));
    KnobSpec sharing;
    sharing.name = kDeviceSharingKnob;
    sharing.description =
        "where jobs share a worker under crossover, how this one computes: crossover (in turns, "
        "giving the cores up at every wait) or naive (whenever it likes, contending for them)";
    sharing.validate = [](const std::string& value) {
      return value == "crossover" || value == "naive"
                 ? absl::OkStatus()
                 : absl::InvalidArgumentError("device sharing is crossover or naive");
    };
    (void)c->Register(std::move(sharing));
    KnobSpec fc_batching;
    fc_batching.name = kFcBatchingKnob;
    fc_batching.description =
        "how a stanza FC worker batches its conv workers' activations: gathered (all in one "
        "batch) or arrival (each conv worker's on its own, answered as soon as it is done)";
    // The head's gradients are summed in another order, and a layer whose
    // output depends on its batch (an MoE layer's capacity) sees smaller ones.
    fc_batching.alters_math = true;
    fc_batching.validate = [](const std::string& value) { return ParseFcBatching(value).status(); };
    (void)c->Register(std::move(fc_batching));
    return c;
  }();
  return *catalog;
}

absl::Status KnobCatalog::Register(KnobSpec spec) {
  if (specs_.count(spec.name) != 0) {
    return absl::AlreadyExistsError(absl::StrCat("knob ", spec.name, " is registered twice"));
  }
  std::string name = spec.name;
  specs_.emplace(std::move(name), std::move(spec));
  return absl::OkStatus();
}

const KnobSpec* KnobCatalog::Find(const std::string& name) const {
  auto it = specs_.find(name);
  return it == specs_.end() ? nullptr : &it->second;
}

absl::Status KnobCatalog::Validate(const std::string& name, const std::string& value) const {
  const KnobSpec* spec = Find(name);
  if (spec == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("unknown knob \"", name,
                     "\" (known: ", names().empty() ? "none" : absl::StrJoin(names(), ", "), ")"));
  }
  if (!spec->validate) return absl::OkStatus();
  absl::Status s = spec->validate(value);
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat(name, "=", value, ": ", s.message()));
}

absl::Status KnobCatalog::ValidateForJob(const std::string& name, const std::string& start,
                                         const std::string& value) const {
  STRATA_RETURN_IF_ERROR(Validate(name, value));
  const KnobSpec* spec = Find(name);
  if (!spec->fits) return absl::OkStatus();
  absl::Status s = spec->fits(start, value);
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat(name, "=", value, ": ", s.message()));
}

std::vector<std::string> KnobCatalog::names() const {
  std::vector<std::string> out;
  for (const auto& [name, spec] : specs_) out.push_back(name);
  return out;
}

void JobKnobs::Declare(const std::string& name, std::string initial,
                       std::function<absl::Status(const std::string&)> apply) {
  declared_[name] = initial;
  values_.emplace(name, std::move(initial));
  appliers_[name] = std::move(apply);
}

void JobKnobs::Schedule(const std::vector<KnobChange>& changes) {
  for (const KnobChange& c : changes) {
    if (c.from_iteration == kKnobStart) {
      values_.emplace(c.name, c.value);
      continue;
    }
    const auto key = std::make_pair(c.from_iteration, c.name);
    if (applied_.count(key) != 0) continue;
    pending_[key] = c.value;
  }
}

absl::Status JobKnobs::ApplyUpTo(int64_t iteration) {
  while (!pending_.empty() && pending_.begin()->first.first <= iteration) {
    auto node = pending_.extract(pending_.begin());
    const std::string& name = node.key().second;
    values_[name] = node.mapped();
    auto applier = appliers_.find(name);
    if (applier != appliers_.end() && applier->second) {
      absl::Status s = applier->second(node.mapped());
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("applying ", name, "=", node.mapped(),
                                                   " at iteration ", iteration, ": ", s.message()));
      }
    }
    applied_.insert(std::move(node));
  }
  return absl::OkStatus();
}

}  // namespace strata
