#include "core/control/knobs.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"

namespace strata {

KnobCatalog& KnobCatalog::Global() {
  static KnobCatalog* catalog = new KnobCatalog();
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

void KnobCatalog::RegisterIfNew(KnobSpec spec) {
  if (specs_.count(spec.name) == 0) (void)Register(std::move(spec));
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
