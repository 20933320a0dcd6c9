#include "core/net/membership_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/net/admission.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/log.h"

namespace strata {

absl::StatusOr<std::unique_ptr<MembershipClient>> MembershipClient::Join(
    zmq::context_t& context, const PsClientOptions& options) {
  if (options.coordinator.empty()) return absl::InvalidArgumentError("--coordinator is required");
  std::unique_ptr<MembershipClient> client(new MembershipClient(options));
  STRATA_RETURN_IF_ERROR(client->Register(context));
  return client;
}

absl::Status MembershipClient::Register(zmq::context_t& context) {
  STRATA_ASSIGN_OR_RETURN(coordinator_, Socket::Connect(context, SocketKind::kDealer,
                                                        options_.coordinator, options_.limits));
  const absl::Time deadline = MonotonicNow() + options_.timeout;
  while (true) {
    STRATA_RETURN_IF_ERROR(SendRegistration());
    // The map comes once every node has registered; register again every
    // heartbeat period in case the coordinator restarted, or our HELLO or
    // REGISTER was lost, meanwhile (registering twice is harmless).
    const absl::Time retry = std::min(deadline, MonotonicNow() + options_.heartbeat_every);
    while (MonotonicNow() < retry) {
      absl::StatusOr<RawMessage> raw = coordinator_->Receive(retry - MonotonicNow());
      if (absl::IsPermissionDenied(raw.status())) {
        return WithContext(raw.status(), "registering with the coordinator");
      }
      if (!raw.ok()) break;
      STRATA_ASSIGN_OR_RETURN(IncomingMessage reply, Decode(*std::move(raw), options_.limits));
      const auto r = reply.header();
      // Our REGISTER overtook our HELLO (or the HELLO was lost): both go again.
      if (IsNotRegistered(r)) break;
      if (IsRefusal(r)) {
        return WithContext(ErrorFromHeader(r), absl::StrCat("coordinator ", options_.coordinator,
                                                            " refused to register us"));
      }
      // A map without our rank is no answer to us: keep waiting.
      if (TypeOf(r) != wire::Kind::CLUSTER_MAP || r.getSenderRank() < 0) continue;
      ClusterMap map;
      map.rank = r.getSenderRank();
      map.checkpoint_epoch = r.getCheckpointEpoch();
      const auto expected = r.getExpectedNodes();
      map.num_workers = expected.size() >= 2 ? static_cast<int>(expected[1]) : 0;
      map.num_fc_workers = expected.size() >= 3 ? static_cast<int>(expected[2]) : 0;
      for (const auto node : r.getNodes()) {
        if (node.getRole() == wire::Role::FC_WORKER) {
          map.fc_addresses.push_back(node.getAddress().cStr());
          map.fc_peer_addresses.push_back(node.getPeerAddress().cStr());
        } else {
          map.server_addresses.push_back(node.getAddress().cStr());
          map.server_lane_addresses.push_back(node.getPeerAddress().cStr());
        }
      }
      map_ = std::move(map);
      return absl::OkStatus();
    }
    if (MonotonicNow() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("no cluster map from the coordinator ", options_.coordinator, " within ",
                       absl::FormatDuration(options_.timeout),
                       " (is strata_server --rank 0 running there, and have all nodes started?)"));
    }
  }
}

absl::Status MembershipClient::SendRegistration() {
  last_registration_ = MonotonicNow();
  const int rank = map_.rank >= 0 ? map_.rank : options_.rank;
  STRATA_RETURN_IF_ERROR(
      strata::SayHello(*coordinator_, options_.credentials, options_.role, rank));
  NodeDescription self{options_.role, rank, options_.serving_address, options_.peer_address};
  OutgoingMessage m(wire::Kind::REGISTER);
  FillRegister(m.header(), options_.credentials.job_id, self);
  return coordinator_->Send(m);
}

void MembershipClient::ServeOn(ClientIoLoop& loop) {
  loop_ = &loop;
  next_heartbeat_ = MonotonicNow();
  loop.Add(this, {{static_cast<void*>(coordinator_->raw()), 0, ZMQ_POLLIN, 0}});
}

std::unique_ptr<OutgoingMessage> MembershipClient::ToCoordinator(MessageType kind,
                                                                 uint64_t request_id,
                                                                 int64_t iteration) const {
  auto m = std::make_unique<OutgoingMessage>(kind);
  auto h = m->header();
  h.setJobId(options_.credentials.job_id);
  h.setSenderRole(options_.role);
  h.setSenderRank(map_.rank);
  h.setRequestId(request_id);
  h.setIteration(iteration);
  return m;
}

void MembershipClient::SendToCoordinator(std::unique_ptr<OutgoingMessage> message) {
  {
    absl::MutexLock lock(&outbox_mu_);
    outbox_.push_back(std::move(message));
  }
  if (loop_ != nullptr) loop_->Wake();
}

void MembershipClient::set_coordinator_listener(CoordinatorListener listener) {
  absl::MutexLock lock(&listener_mu_);
  listener_ = std::move(listener);
}

void MembershipClient::ReportCheckpointFailure(int64_t iteration, const std::string& why) {
  absl::MutexLock lock(&failure_mu_);
  failure_.failed = iteration;
  failure_.why = why;
}

CheckpointReport MembershipClient::checkpoint_report() const {
  CheckpointReport report;
  {
    absl::MutexLock lock(&failure_mu_);
    report = failure_;
  }
  report.written = checkpointed_.load();
  return report;
}

bool MembershipClient::HandleCoordinatorMessage(RawMessage raw) {
  absl::StatusOr<IncomingMessage> m = Decode(std::move(raw), options_.limits);
  if (!m.ok()) return false;
  const auto h = m->header();
  if (IsNotRegistered(h)) return true;
  if (TypeOf(h) == wire::Kind::ERROR) {
    LogWarning("the coordinator refused a request: %s",
               std::string(ErrorFromHeader(h).message()).c_str());
  }
  absl::MutexLock lock(&listener_mu_);
  if (listener_) listener_(*m);
  return false;
}

void MembershipClient::SendHeartbeat() {
  OutgoingMessage beat(wire::Kind::HEARTBEAT);
  FillHeartbeat(beat.header(), options_.credentials.job_id, options_.role, map_.rank,
                checkpoint_report());
  (void)coordinator_->Send(beat);
}

absl::Duration MembershipClient::BeforePoll(absl::Span<zmq::pollitem_t>) {
  return std::max(absl::ZeroDuration(), next_heartbeat_ - MonotonicNow());
}

void MembershipClient::AfterPoll(absl::Span<const zmq::pollitem_t> items) {
  std::deque<std::unique_ptr<OutgoingMessage>> queued;
  {
    absl::MutexLock lock(&outbox_mu_);
    queued.swap(outbox_);
  }
  for (auto& m : queued) (void)coordinator_->Send(*m);
  if (items[0].revents & ZMQ_POLLIN) {
    bool forgotten = false;
    while (true) {
      absl::StatusOr<RawMessage> raw = coordinator_->ReceiveNow();
      if (!raw.ok()) break;
      forgotten = HandleCoordinatorMessage(*std::move(raw)) || forgotten;
    }
    // A restarted coordinator refuses our heartbeats: register again (at
    // most once a heartbeat period).
    if (forgotten && MonotonicNow() - last_registration_ >= options_.heartbeat_every) {
      LogInfo("registering again with the coordinator %s", options_.coordinator.c_str());
      (void)SendRegistration();
    }
  }
  const absl::Time now = MonotonicNow();
  if (now >= next_heartbeat_) {
    SendHeartbeat();
    next_heartbeat_ = now + options_.heartbeat_every;
  }
}

}  // namespace strata
