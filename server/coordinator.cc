#include "server/coordinator.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/net/knob_messages.h"
#include "core/net/membership.h"
#include "core/status.h"
#include "core/train/lost_nodes.h"
#include "core/util/clock.h"
#include "core/util/log.h"

namespace strata {

Coordinator::Coordinator(MessageEndpoint* endpoint, Admission* admission,
                         const CoordinatorOptions& options, std::string self_address,
                         std::string self_lane_address)
    : endpoint_(endpoint),
      admission_(admission),
      options_(options),
      knobs_(&KnobCatalog::Global(), options.knob_lead) {
  Node self{wire::Role::SERVER,           0,  std::move(self_address),
            std::move(self_lane_address), "", MonotonicNow()};
  servers_[0] = self;
}

std::string Coordinator::Describe(const Node& node) { return DescribePeer(node.role, node.rank); }

std::map<int, Coordinator::Node>& Coordinator::TableFor(wire::Role role) {
  if (role == wire::Role::SERVER) return servers_;
  if (role == wire::Role::FC_WORKER) return fc_workers_;
  return workers_;
}

int Coordinator::LimitFor(wire::Role role) const {
  if (role == wire::Role::SERVER) return options_.servers;
  if (role == wire::Role::FC_WORKER) return options_.fc_workers;
  return options_.workers;
}

int64_t Coordinator::AgreedCheckpoint(int64_t own) const {
  if (static_cast<int>(servers_.size()) != options_.servers ||
      static_cast<int>(fc_workers_.size()) != options_.fc_workers) {
    return -1;
  }
  int64_t agreed = own;
  for (const auto* table : {&servers_, &fc_workers_}) {
    for (const auto& [rank, node] : *table) {
      if (node.role == wire::Role::SERVER && rank == 0) continue;  // ourselves: `own`
      agreed = std::min(agreed, node.checkpointed);
    }
  }
  return agreed;
}

std::vector<std::string> Coordinator::ServersYetToSayLast() const {
  std::vector<std::string> unheard;
  for (int rank = 1; rank < options_.servers; ++rank) {
    auto it = servers_.find(rank);
    if (it != servers_.end() && (it->second.said_last || it->second.dead)) continue;
    unheard.push_back(DescribePeer(wire::Role::SERVER, rank));
  }
  return unheard;
}

std::vector<std::string> Coordinator::NodesYetToReport(int64_t iteration) const {
  std::vector<std::string> short_of;
  for (const auto& [role, table, count] :
       {std::make_tuple(wire::Role::SERVER, &servers_, options_.servers),
        std::make_tuple(wire::Role::FC_WORKER, &fc_workers_, options_.fc_workers)}) {
    for (int rank = role == wire::Role::SERVER ? 1 : 0; rank < count; ++rank) {
      auto it = table->find(rank);
      const std::string who = DescribePeer(role, rank);
      if ((it == table->end() || it->second.checkpointed < iteration) &&
          checkpoint_failures_.count({iteration, who}) == 0) {
        short_of.push_back(who);
      }
    }
  }
  return short_of;
}

void Coordinator::RecordCheckpointed(const Peer& peer, int64_t iteration) {
  auto& table = TableFor(peer.role);
  auto it = table.find(peer.rank);
  if (it != table.end()) it->second.checkpointed = std::max(it->second.checkpointed, iteration);
}

void Coordinator::RecordCheckpointFailure(const std::string& who, int64_t iteration,
                                          const std::string& why) {
  if (!checkpoint_failures_.emplace(std::make_pair(iteration, who), why).second) return;
  LogError("coordinator: checkpoint epoch %lld will not be complete: %s could not write its "
           "part: %s",
           static_cast<long long>(iteration), who.c_str(), why.c_str());
}

std::vector<std::string> Coordinator::CheckpointFailures(int64_t only) const {
  std::vector<std::string> failures;
  for (const auto& [key, why] : checkpoint_failures_) {
    if (only >= 0 && key.first != only) continue;
    failures.push_back(absl::StrCat("epoch ", key.first, ": ", key.second, ": ", why));
  }
  return failures;
}

std::string Coordinator::Registered() const {
  return absl::StrFormat("%d/%d servers, %d/%d workers, %d/%d fc workers",
                         static_cast<int>(servers_.size()), options_.servers,
                         static_cast<int>(workers_.size()), options_.workers,
                         static_cast<int>(fc_workers_.size()), options_.fc_workers);
}

bool Coordinator::all_registered() const {
  return static_cast<int>(servers_.size()) == options_.servers &&
         static_cast<int>(workers_.size()) == options_.workers &&
         static_cast<int>(fc_workers_.size()) == options_.fc_workers;
}

absl::Status Coordinator::HandleKnobs(const IncomingMessage& message, const Peer& peer) {
  const auto h = message.header();
  const bool worker = peer.role == wire::Role::CONV_WORKER || peer.role == wire::Role::FC_WORKER;
  switch (TypeOf(h).code()) {
    case CodeOf(wire::knob::Kind::KNOB_LEASE): {
      if (!worker) {
        return absl::PermissionDeniedError(absl::StrCat("knob-lease from the ",
                                                        DescribePeer(peer.role, peer.rank),
                                                        "; only workers take leases"));
      }
      STRATA_ASSIGN_OR_RETURN(KnobBoard::Lease lease,
                              knobs_.RenewLease(peer, h.getIteration(), DeclaredKnobsOf(h)));
      reports_.Add(peer, IterationReportsOf(h));
      if (BodyOf<wire::knob::Body>(h).getWantsReports()) reports_.Want(peer);
      OutgoingMessage reply(wire::knob::Kind::KNOB_LEASE_REPLY);
      reply.header().setRequestId(h.getRequestId());
      reply.header().setIteration(lease.until);
      SetKnobChanges(reply.header(), lease.changes);
      BodyOf<wire::knob::Body>(reply.header()).setWantsReports(reports_.wanted());
      SetIterationReports(reply.header(), reports_.TakeFor(peer));
      return endpoint_->Send(message.identity(), reply).status();
    }
    case CodeOf(wire::knob::Kind::KNOB_SET): {
      // From outside the job, an admin; from inside, the job's controller,
      // which runs on conv worker 0 (runtime/controller_choice.h).
      const bool tool = peer.role == wire::Role::TOOL || peer.role == wire::Role::LAUNCHER;
      if (tool && !peer.admin) return NeedsAdmin(peer, "the coordinator", "knob-set");
      if (!tool && !(peer.role == wire::Role::CONV_WORKER && peer.rank == 0)) {
        return absl::PermissionDeniedError(
            absl::StrCat("knob-set from the ", DescribePeer(peer.role, peer.rank),
                         "; knobs are changed by a tool with the admin token, or by the job's "
                         "controller on worker 0"));
      }
      STRATA_ASSIGN_OR_RETURN(std::vector<KnobChange> scheduled,
                              knobs_.Set(KnobProposalsOf(h), h.getIteration()));
      for (const KnobChange& c : scheduled) {
        LogInfo("coordinator: knob %s=%s from iteration %lld (asked by the %s)", c.name.c_str(),
                c.value.c_str(), static_cast<long long>(c.from_iteration),
                DescribePeer(peer.role, peer.rank).c_str());
      }
      OutgoingMessage reply(wire::knob::Kind::KNOB_SET_REPLY);
      reply.header().setRequestId(h.getRequestId());
      SetKnobChanges(reply.header(), scheduled);
      return endpoint_->Send(message.identity(), reply).status();
    }
    default: {
      OutgoingMessage reply(wire::knob::Kind::KNOB_GET_REPLY);
      reply.header().setRequestId(h.getRequestId());
      SetKnobStates(reply.header(), knobs_.Get());
      return endpoint_->Send(message.identity(), reply).status();
    }
  }
}

absl::Status Coordinator::Handle(const IncomingMessage& message, const Peer& peer) {
  const auto h = message.header();
  if (peer.role != wire::Role::SERVER && peer.role != wire::Role::CONV_WORKER &&
      peer.role != wire::Role::FC_WORKER) {
    return absl::PermissionDeniedError(
        absl::StrCat(KindName(TypeOf(h)), " from the ", DescribePeer(peer.role, peer.rank),
                     "; only servers and workers are members of a job"));
  }
  switch (TypeOf(h).code()) {
    case CodeOf(wire::Kind::REGISTER):
      return Register(message, peer);
    case CodeOf(wire::Kind::BARRIER):
      return Barrier(message);
    case CodeOf(wire::Kind::HEARTBEAT): {
      const int rank = h.getSenderRank();
      auto& table = TableFor(h.getSenderRole());
      auto it = table.find(rank);
      if (it != table.end()) {
        it->second.last_seen = MonotonicNow();
        const CheckpointReport report = CheckpointReportOf(h);
        it->second.checkpointed = std::max(it->second.checkpointed, report.written);
        if (report.failed >= 0) {
          RecordCheckpointFailure(Describe(it->second), report.failed, report.why);
        }
        // Death is final: the servers have failed what waited for the node
        // and refuse it from then on.
        if (it->second.dead && !it->second.late_heartbeat_logged) {
          LogInfo(
              "coordinator: %s sends heartbeats again after it was declared dead; it stays out of "
              "the job",
              Describe(it->second).c_str());
          it->second.late_heartbeat_logged = true;
        }
      }
      if (h.getRequestId() != 0) {  // a last report: its sender waits to be heard
        if (it != table.end()) it->second.said_last = true;
        OutgoingMessage heard(wire::Kind::HEARTBEAT);
        heard.header().setJobId(options_.job_id);
        heard.header().setSenderRole(wire::Role::SERVER);
        heard.header().setSenderRank(0);
        heard.header().setRequestId(h.getRequestId());
        return endpoint_->Send(message.identity(), heard).status();
      }
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("the coordinator does not handle ", KindName(TypeOf(h))));
  }
}

absl::Status Coordinator::Register(const IncomingMessage& message, const Peer& peer) {
  const auto h = message.header();
  if (h.getNodes().size() != 1) {
    return absl::InvalidArgumentError("register must describe exactly one node");
  }
  const auto info = h.getNodes()[0];
  const bool asking_again = info.getRole() == wire::Role::CONV_WORKER && info.getRank() == -1;
  if (info.getRole() != peer.role ||
      (peer.rank >= 0 && info.getRank() != peer.rank && !asking_again)) {
    return absl::PermissionDeniedError(
        absl::StrCat("register of ", DescribePeer(info.getRole(), info.getRank()),
                     " on the connection of ", DescribePeer(peer.role, peer.rank)));
  }
  Node node{info.getRole(),           info.getRank(),
            info.getAddress().cStr(), info.getPeerAddress().cStr(),
            message.identity(),       MonotonicNow()};
  const bool is_server = node.role == wire::Role::SERVER;
  auto& table = TableFor(node.role);
  const int limit = LimitFor(node.role);
  if (node.role == wire::Role::CONV_WORKER && node.rank < 0) {
    // The rank this connection was given before (a register sent again
    // while the map is pending), else the lowest free one.
    node.rank = -1;
    for (const auto& [rank, known] : table) {
      if (known.identity == node.identity) node.rank = rank;
    }
    if (node.rank < 0) {
      node.rank = 0;
      while (table.count(node.rank) != 0) node.rank++;
    }
  }
  if (node.rank < 0 || node.rank >= limit) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(node), " is outside [0, ", limit, ") for this job"));
  }
  if (is_server && node.rank == 0) {
    return absl::InvalidArgumentError("rank 0 is the coordinator itself");
  }
  const bool again = table.count(node.rank) != 0;
  table[node.rank] = node;
  admission_->AssignRank(message.identity(), node.rank);
  LogInfo("coordinator: %s %s (%s)", Describe(node).c_str(),
          again ? "registered again" : "registered", Registered().c_str());
  if (map_sent_) {
    SendMap(node);
  } else if (all_registered()) {
    map_sent_ = true;
    for (const auto& [rank, n] : servers_) {
      if (rank != 0) SendMap(n);
    }
    for (const auto& [rank, n] : workers_) SendMap(n);
    for (const auto& [rank, n] : fc_workers_) SendMap(n);
  }
  return absl::OkStatus();
}

void Coordinator::Abandon(const absl::Status& why) {
  for (const auto* table : {&servers_, &workers_, &fc_workers_}) {
    for (const auto& [rank, node] : *table) {
      OutgoingMessage error(wire::Kind::ERROR);
      error.header().setJobId(options_.job_id);
      error.header().setSenderRole(wire::Role::SERVER);
      error.header().setSenderRank(0);
      FillError(error.header(), why);
      (void)endpoint_->Send(node.identity, error);
    }
  }
}

void Coordinator::SendMap(const Node& node) {
  OutgoingMessage reply(wire::Kind::CLUSTER_MAP);
  auto h = reply.header();
  h.setJobId(options_.job_id);
  h.setSenderRole(wire::Role::SERVER);
  h.setSenderRank(node.rank);  // the recipient's rank
  auto nodes = h.initNodes(static_cast<unsigned>(servers_.size() + fc_workers_.size()));
  unsigned i = 0;
  for (const auto* table : {&servers_, &fc_workers_}) {
    for (const auto& [rank, n] : *table) {
      nodes[i].setRole(n.role);
      nodes[i].setRank(rank);
      nodes[i].setAddress(n.address);
      nodes[i].setPeerAddress(n.peer_address);
      ++i;
    }
  }
  h.setCheckpointEpoch(options_.checkpoint_epoch);
  auto expected = h.initExpectedNodes(3);
  expected.set(0, static_cast<uint32_t>(options_.servers));
  expected.set(1, static_cast<uint32_t>(options_.workers));
  expected.set(2, static_cast<uint32_t>(options_.fc_workers));
  absl::Status s = endpoint_->Send(node.identity, reply).status();
  if (!s.ok()) {
    LogWarning("coordinator: cannot send the cluster map to %s: %s", Describe(node).c_str(),
               std::string(s.message()).c_str());
  }
}

absl::Status Coordinator::Barrier(const IncomingMessage& message) {
  const auto h = message.header();
  const std::string name = absl::StrCat(h.getBarrierName().cStr(), "#", h.getIteration());
  auto& waiting = barriers_[name];
  waiting.emplace_back(message.identity(), h.getRequestId());
  if (static_cast<int>(waiting.size()) < options_.workers) return absl::OkStatus();
  for (const auto& [identity, request] : waiting) {
    OutgoingMessage release(wire::Kind::BARRIER_RELEASE);
    release.header().setJobId(options_.job_id);
    release.header().setRequestId(request);
    (void)endpoint_->Send(identity, release).status();
  }
  barriers_.erase(name);
  return absl::OkStatus();
}

void Coordinator::RecordLoss(const Node& node, const std::string& why) const {
  if (options_.lost_nodes_out.empty()) return;
  const char* role = node.role == wire::Role::SERVER        ? "server"
                     : node.role == wire::Role::FC_WORKER ? "fc_worker"
                                                          : "conv_worker";
  const absl::Status recorded =
      RecordLostNode(options_.lost_nodes_out, {options_.job_id, role, node.rank, why});
  if (!recorded.ok()) {
    LogWarning("coordinator: cannot record the loss of %s: %s", Describe(node).c_str(),
               std::string(recorded.message()).c_str());
  }
}

std::vector<Peer> Coordinator::CheckLiveness(absl::Time now) {
  std::vector<Peer> newly_dead;
  for (auto* table : {&servers_, &workers_, &fc_workers_}) {
    for (auto& [rank, node] : *table) {
      if (node.identity.empty() || node.dead) continue;  // self, or already reported
      if (now - node.last_seen > options_.dead_after) {
        node.dead = true;
        LogInfo("coordinator: %s sent no heartbeat for %s: marking it dead", Describe(node).c_str(),
                absl::FormatDuration(absl::Trunc(now - node.last_seen, absl::Milliseconds(100)))
                    .c_str());
        newly_dead.push_back({node.role, rank});
        RecordLoss(node, absl::StrCat("stopped sending heartbeats for ",
                                      absl::FormatDuration(options_.dead_after)));
      }
    }
  }
  // Every other server holds pulls that may wait for a dead worker.
  for (const Peer& dead : newly_dead) {
    for (const auto& [rank, server] : servers_) {
      if (rank == 0 || server.dead || (dead.role == wire::Role::SERVER && dead.rank == rank)) {
        continue;
      }
      OutgoingMessage notice(wire::Kind::NODE_DEAD);
      notice.header().setJobId(options_.job_id);
      notice.header().setSenderRole(wire::Role::SERVER);
      notice.header().setSenderRank(0);
      auto nodes = notice.header().initNodes(1);
      nodes[0].setRole(dead.role);
      nodes[0].setRank(dead.rank);
      (void)endpoint_->Send(server.identity, notice).status();
    }
  }
  return newly_dead;
}

}  // namespace strata
