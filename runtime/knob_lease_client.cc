#include "runtime/knob_lease_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/net/knob_messages.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/log.h"
#include "core/util/wait_observer.h"

namespace strata {

KnobLeaseClient::KnobLeaseClient(MembershipClient& membership) : membership_(membership) {
  membership_.set_coordinator_listener([this](const IncomingMessage& m) { Take(m); });
}

KnobLeaseClient::~KnobLeaseClient() { membership_.set_coordinator_listener(nullptr); }

void KnobLeaseClient::Request(int64_t iteration, const std::map<std::string, std::string>& declared,
                              const std::vector<IterationRecord>& reports, bool wants_reports) {
  auto m = membership_.ToCoordinator(wire::knob::Kind::KNOB_LEASE, kKnobLeaseRequest, iteration);
  SetDeclaredKnobs(m->header(), declared);
  std::vector<IterationReport> own;
  for (const IterationRecord& r : reports)
    own.push_back({membership_.options().role, membership_.rank(), r});
  SetIterationReports(m->header(), own);
  BodyOf<wire::knob::Body>(m->header()).setWantsReports(wants_reports);
  membership_.SendToCoordinator(std::move(m));
}

KnobLease KnobLeaseClient::lease() const {
  absl::MutexLock lock(&mu_);
  return lease_;
}

absl::StatusOr<KnobLease> KnobLeaseClient::Await(
    int64_t iteration, const std::map<std::string, std::string>& declared) {
  const PsClientOptions& options = membership_.options();
  ScopedWait wait(membership_.wait_observer());
  const absl::Time deadline = MonotonicNow() + options.timeout;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      const absl::Time ask_again = std::min(deadline, MonotonicNow() + options.heartbeat_every);
      while (lease_.until <= iteration && lease_.status.ok()) {
        if (answered_.WaitWithTimeout(&mu_, ask_again - MonotonicNow())) break;
      }
      if (lease_.until > iteration || !lease_.status.ok()) {
        STRATA_RETURN_IF_ERROR_CTX(lease_.status, "the coordinator refused a knob lease");
        return lease_;
      }
    }
    if (MonotonicNow() >= deadline) {
      // Named as the other waits name a silent server: the coordinator is
      // server 0, and whichever wait notices first says who fell silent.
      return absl::DeadlineExceededError(absl::StrCat(
          "no knob lease beyond iteration ", iteration, " from server 0 (", options.coordinator,
          ") within ", absl::FormatDuration(options.timeout), "; the coordinator grants them"));
    }
    Request(iteration, declared);  // the last one may have been lost
  }
}

std::vector<IterationRecord> KnobLeaseClient::TakeRelayedReports() {
  absl::MutexLock lock(&mu_);
  std::vector<IterationRecord> out;
  out.swap(relayed_);
  return out;
}

void KnobLeaseClient::Propose(const std::vector<KnobProposal>& proposals) {
  // From the earliest iteration the coordinator can still give.
  auto m = membership_.ToCoordinator(wire::knob::Kind::KNOB_SET, kKnobSetRequest, /*iteration=*/-1);
  SetKnobProposals(m->header(), proposals);
  membership_.SendToCoordinator(std::move(m));
}

void KnobLeaseClient::Take(const IncomingMessage& message) {
  const auto h = message.header();
  switch (TypeOf(h).code()) {
    case CodeOf(wire::knob::Kind::KNOB_LEASE_REPLY): {
      absl::MutexLock lock(&mu_);
      lease_.until = std::max(lease_.until, h.getIteration());
      lease_.changes = KnobChangesOf(h);
      lease_.reports_wanted = BodyOf<wire::knob::Body>(h).getWantsReports();
      for (IterationReport& r : IterationReportsOf(h)) relayed_.push_back(std::move(r.record));
      if (relayed_.size() > kMaxReportsPerMessage) {
        relayed_.erase(relayed_.begin(), relayed_.end() - kMaxReportsPerMessage);
      }
      version_.store(++lease_.version);
      answered_.SignalAll();
      break;
    }
    case CodeOf(wire::knob::Kind::KNOB_SET_REPLY):
      for (const KnobChange& c : KnobChangesOf(h)) {
        LogInfo("knob %s=%s agreed from iteration %lld", c.name.c_str(), c.value.c_str(),
                static_cast<long long>(c.from_iteration));
      }
      break;
    case CodeOf(wire::Kind::ERROR):
      if (h.getRequestId() == kKnobLeaseRequest) {
        absl::MutexLock lock(&mu_);
        lease_.status = ErrorFromHeader(h);
        answered_.SignalAll();
      }
      break;
    default:
      break;
  }
}

}  // namespace strata
