#include "server/knob_board.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"

namespace strata {

KnobBoard::KnobBoard(const KnobCatalog* catalog, int64_t lead) : catalog_(catalog), lead_(lead) {}

absl::StatusOr<KnobBoard::Lease> KnobBoard::RenewLease(
    const Peer& node, int64_t iteration, const std::map<std::string, std::string>& declared) {
  const std::string who = DescribePeer(node.role, node.rank);
  for (const auto& [name, value] : declared) {
    if (catalog_->Find(name) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(who, " declares knob ", name,
                                                     ", which the coordinator does not know (",
                                                     absl::StrJoin(catalog_->names(), ", "), ")"));
    }
    auto known = declared_.find(name);
    if (known != declared_.end() && known->second != value) {
      return absl::InvalidArgumentError(absl::StrCat(who, " starts knob ", name, " at ", value,
                                                     "; the job started it at ", known->second));
    }
  }
  for (const auto& [name, value] : declared) declared_.emplace(name, value);
  int64_t& until = leases_[{static_cast<int>(node.role), node.rank}];
  until = std::max(until, iteration + lead_);
  largest_lease_ = std::max(largest_lease_, until);
  Lease lease{until, {}};
  for (const auto& [name, value] : declared_) lease.changes.push_back({name, value, kKnobStart});
  lease.changes.insert(lease.changes.end(), changes_.begin(), changes_.end());
  return lease;
}

absl::StatusOr<std::vector<KnobChange>> KnobBoard::Set(const std::vector<KnobProposal>& proposals,
                                                       int64_t from_iteration) {
  if (proposals.empty()) return absl::InvalidArgumentError("a knob change names no knob");
  std::vector<std::string> names;
  for (const auto& [name, value] : declared_) names.push_back(name);
  for (const KnobProposal& p : proposals) {
    STRATA_RETURN_IF_ERROR(catalog_->Validate(p.name, p.value));
    auto declared = declared_.find(p.name);
    if (declared == declared_.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "no process of this job applies knob ", p.name,
          " (the job's knobs: ", names.empty() ? "none yet" : absl::StrJoin(names, ", "), ")"));
    }
    STRATA_RETURN_IF_ERROR(catalog_->ValidateForJob(p.name, declared->second, p.value));
  }
  const int64_t earliest =
      std::max(largest_lease_, changes_.empty() ? int64_t{0} : changes_.back().from_iteration);
  if (from_iteration >= 0 && from_iteration < earliest) {
    return absl::FailedPreconditionError(absl::StrCat(
        "iteration ", from_iteration, " is too early: a process of the job may have started it (",
        "the earliest iteration a change can take effect at is ", earliest, ")"));
  }
  const int64_t from = from_iteration >= 0 ? from_iteration : earliest;
  std::vector<KnobChange> scheduled;
  for (const KnobProposal& p : proposals) scheduled.push_back({p.name, p.value, from});
  changes_.insert(changes_.end(), scheduled.begin(), scheduled.end());
  return scheduled;
}

std::vector<KnobState> KnobBoard::Get() const {
  std::vector<KnobState> out;
  for (const auto& [name, value] : declared_) {
    KnobState s{name, value, kKnobStart, false};
    if (const KnobSpec* spec = catalog_->Find(name); spec != nullptr) {
      s.alters_math = spec->alters_math;
    }
    for (const KnobChange& c : changes_) {
      if (c.name == name) {
        s.value = c.value;
        s.since = c.from_iteration;
      }
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace strata
