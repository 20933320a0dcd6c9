#include "server/job_server.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/data/dataset.h"
#include "core/model/job_identity.h"
#include "core/model/model.h"
#include "core/net/knob_messages.h"
#include "core/net/membership.h"
#include "core/net/ps_wire.h"
#include "core/net/round_trip.h"
#include "core/net/wire_format.h"
#include "core/status.h"
#include "core/train/checkpoint.h"
#include "core/util/clock.h"
#include "core/util/crash_point.h"
#include "core/util/log.h"
#include "server/lane_hub.h"

namespace strata {

absl::StatusOr<size_t> ServingEndpoints::Reply(const std::string& identity,
                                               OutgoingMessage& message) const {
  for (MessageEndpoint* e : all) {
    if (e->Serves(identity)) return e->Send(identity, message);
  }
  return socket->Send(identity, message);
}

absl::StatusOr<JobKeys> KeysOfJob(const JobConfig& config, const std::string& mode,
                                  int fc_workers) {
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, 1));
  STRATA_ASSIGN_OR_RETURN(const KeyLayout layout, KeyLayoutFor(*model, mode, fc_workers));
  const std::vector<ServerKey> keys = ServerKeys(*model, layout);
  JobKeys out;
  out.sizes = KeySizes(keys);
  for (const ServerKey& k : keys) out.rules.push_back({k.kind, k.owner});
  return out;
}

JobServer::JobServer(const ServerOptions& options, const ServingEndpoints* endpoints,
                     zmq::context_t& context)
    : options_(options),
      endpoints_(endpoints),
      context_(context),
      admission_(absl::StrCat("server ", options.rank),
                 JobCredentials{options.job_id, options.job_token,
                                options.kv_sizes.empty() ? JobIdentity(options.config) : "", "",
                                options.admin_token}),
      rejoined_(options.workers, false) {
  for (int w = 0; w < options.workers; ++w) {
    workers_.push_back(WorkerState{Peer{wire::Role::CONV_WORKER, w}, false, false, ""});
  }
  for (int f = 0; f < options.fc_workers; ++f) {
    workers_.push_back(WorkerState{Peer{wire::Role::FC_WORKER, f}, false, false, ""});
  }
}

JobServer::WorkerState* JobServer::FindWorker(const Peer& peer) {
  for (WorkerState& w : workers_) {
    if (w.peer.role == peer.role && w.peer.rank == peer.rank) return &w;
  }
  return nullptr;
}

JobServer::~JobServer() = default;

absl::StatusOr<std::unique_ptr<JobServer>> JobServer::Create(const ServerOptions& options,
                                                             const ServingEndpoints* endpoints,
                                                             zmq::context_t& context) {
  if (options.rank < 0 || options.rank >= options.servers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank ", options.rank, " outside [0, ", options.servers, ")"));
  }
  if (options.coordinator.empty()) return absl::InvalidArgumentError("--coordinator is required");
  std::unique_ptr<JobServer> node(new JobServer(options, endpoints, context));
  JobKeys keys{options.kv_sizes, {}};
  int64_t total_steps = 1;
  if (keys.sizes.empty()) {
    STRATA_ASSIGN_OR_RETURN(keys, KeysOfJob(options.config, options.mode, options.fc_workers));
    total_steps = TotalTrainingSteps(options.config.training, TrainingSetSize(options.config.data));
  }
  node->plan_ = PartitionPlan::Build(keys.sizes, options.servers, options.chunk_elements);
  StoreOptions so;
  so.consistency = options.consistency;
  so.staleness = options.staleness;
  so.conv_workers = options.workers;
  so.fc_workers = options.fc_workers;
  so.keys = std::move(keys.rules);
  so.optimizer = options.config.optimizer;
  so.schedule = options.config.schedule;
  so.total_steps = total_steps;
  STRATA_ASSIGN_OR_RETURN(node->store_, ParameterStore::Create(node->plan_, options.rank, so));
  const std::string& dir = options.checkpoint_dir;
  const std::string own_part = CheckpointPartName("server", options.rank);
  if (options.rank == 0 && !dir.empty()) {
    // This start's generation: a newer start elsewhere makes us a writer of
    // nothing (core/train/checkpoint_epochs.h).
    absl::StatusOr<RunStamp> stamp = BeginGeneration(dir, options.restore);
    STRATA_RETURN_IF_ERROR_CTX(stamp.status(), options.restore ? "--restore" : "--checkpoint-dir");
    node->stamp_ = *stamp;
  }
  if (options.restore && dir.empty()) {
    STRATA_RETURN_IF_ERROR(node->RestoreShard(options.checkpoint_path, -1));
  } else if (options.restore && options.rank == 0) {
    absl::StatusOr<CheckpointEpoch> epoch = ChooseRestoreEpoch(dir);
    STRATA_RETURN_IF_ERROR_CTX(epoch.status(), "--restore");
    node->restore_epoch_ = epoch->iteration;
    node->last_complete_epoch_ = epoch->iteration;
    STRATA_RETURN_IF_ERROR(node->RestoreShard(epoch->PartPath(dir, own_part), epoch->iteration));
  }
  if ((!options.checkpoint_dir.empty() || !options.checkpoint_path.empty()) &&
      options.checkpoint_every > 0) {
    node->checkpoints_ = std::make_unique<CheckpointWriter>();
  }
  const std::string& address = endpoints->socket->address();
  const std::string lane_address = endpoints->lanes != nullptr ? endpoints->lanes->address() : "";
  if (options.rank == 0) {
    CoordinatorOptions co;
    co.servers = options.servers;
    co.workers = options.workers;
    co.fc_workers = options.fc_workers;
    co.job_id = options.job_id;
    co.dead_after = options.dead_after;
    co.knob_lead = options.knob_lead;
    co.lost_nodes_out = options.lost_nodes_out;
    co.checkpoint_epoch = node->restore_epoch_;
    node->coordinator_ = std::make_unique<Coordinator>(endpoints->socket, &node->admission_, co,
                                                       address, lane_address);
  } else {
    // A server restoring an epoch learns which from the coordinator's
    // answer to its hello: one epoch for every process, whatever this one
    // sees of the manifests.
    const bool restores_epoch = options.restore && !dir.empty();
    STRATA_ASSIGN_OR_RETURN(const HelloAnswer answer,
                            node->Register(options.await_registration || restores_epoch));
    if (restores_epoch) {
      if (answer.checkpoint_epoch < 0) {
        return absl::FailedPreconditionError(
            "--restore: the coordinator restores no checkpoint epoch (give --restore to every "
            "server, or to none)");
      }
      STRATA_RETURN_IF_ERROR_CTX(
          node->RestoreShard(EpochPartPath(dir, answer.checkpoint_epoch, own_part),
                             answer.checkpoint_epoch),
          absl::StrCat("restoring checkpoint epoch ", answer.checkpoint_epoch,
                       ", which the coordinator chose"));
    }
  }
  if (node->admission_.open()) {
    LogWarning(
        "no job token (--job-token-file or $%s): any process that reaches %s can join job %llu",
        kJobTokenEnv, address.c_str(), static_cast<unsigned long long>(options.job_id));
  }
  LogInfo("serving %lld parameters in %zu chunks on %s (job %llu, %s)%s%s",
          static_cast<long long>(node->plan_.elements_of_server(options.rank)),
          node->plan_.chunks_of_server(options.rank).size(), address.c_str(),
          static_cast<unsigned long long>(options.job_id), ConsistencyName(options.consistency),
          lane_address.empty() ? "" : "; shared memory lanes at ", lane_address.c_str());
  node->AddServices();
  node->created_ = node->next_heartbeat_ = MonotonicNow();
  return node;
}

absl::Status JobServer::RestoreShard(const std::string& path, int64_t epoch) {
  STRATA_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpoint(path));
  CrashPoint("restore");
  STRATA_RETURN_IF_ERROR_CTX(store_->Restore(checkpoint), absl::StrCat("restoring ", path));
  int64_t version = 0;
  for (const Chunk& c : plan_.chunks_of_server(options_.rank)) {
    version = std::max(version, store_->version(c));
  }
  if (epoch >= 0 && version != epoch) {
    return absl::DataLossError(absl::StrCat(path, " holds iteration ", version, ", not ", epoch));
  }
  last_checkpoint_version_ = version;
  restored_ = true;
  restored_version_ = version;
  LogInfo("restored %s at iteration %lld", path.c_str(), static_cast<long long>(version));
  return absl::OkStatus();
}

absl::StatusOr<HelloAnswer> JobServer::Register(bool wait_for_hello) {
  if (coordinator_link_ == nullptr) {
    STRATA_ASSIGN_OR_RETURN(
        coordinator_link_,
        Socket::Connect(context_, SocketKind::kDealer, options_.coordinator, options_.limits));
  }
  last_registration_ = MonotonicNow();
  // One connection, in order: the hello comes before the register.
  const std::string coordinator = absl::StrCat("the coordinator ", options_.coordinator);
  HelloAnswer answer;
  if (wait_for_hello) {
    STRATA_ASSIGN_OR_RETURN(
        answer, Introduce(*coordinator_link_, admission_.credentials(), wire::Role::SERVER,
                          options_.rank, coordinator, options_.register_timeout));
  } else {
    STRATA_RETURN_IF_ERROR(
        SayHello(*coordinator_link_, admission_.credentials(), wire::Role::SERVER, options_.rank));
  }
  NodeDescription self{wire::Role::SERVER, options_.rank, endpoints_->socket->address(),
                       endpoints_->lanes != nullptr ? endpoints_->lanes->address() : ""};
  OutgoingMessage m(wire::Kind::REGISTER);
  FillRegister(m.header(), options_.job_id, self);
  STRATA_RETURN_IF_ERROR(coordinator_link_->Send(m));
  return answer;
}

absl::Status JobServer::Reply(const std::string& identity, OutgoingMessage& reply) {
  reply.header().setJobId(options_.job_id);
  reply.header().setSenderRole(wire::Role::SERVER);
  reply.header().setSenderRank(options_.rank);
  absl::StatusOr<size_t> sent = endpoints_->Reply(identity, reply);
  if (sent.ok()) {
    traffic_.AddSent(current_peer_, *sent);
    return absl::OkStatus();
  }
  // The reply is lost: a peer that is gone resends over another connection
  // (a lane's worker over its socket) or not at all; one that is not reading
  // its replies ends its wait with its timeout.
  if (replies_dropped_++ == 0) {
    LogWarning("dropped a reply: %s", std::string(sent.status().message()).c_str());
  }
  return absl::IsUnavailable(sent.status()) ? absl::OkStatus() : sent.status();
}

void JobServer::ForgetPeer(const std::string& identity) {
  shared_memory_.Forget(identity);
  admission_.Forget(identity);
  pending_.erase(
      std::remove_if(pending_.begin(), pending_.end(),
                     [&identity](const PendingPull& p) { return p.identity == identity; }),
      pending_.end());
}

void JobServer::SendError(const std::string& identity, uint64_t request_id,
                          const absl::Status& status) {
  ++errors_sent_;
  LogRefusal("refused a request: %s", std::string(status.message()).c_str());
  OutgoingMessage reply(wire::Kind::ERROR);
  reply.header().setRequestId(request_id);
  FillError(reply.header(), status);
  (void)Reply(identity, reply);
}

absl::Status JobServer::HandleHello(const IncomingMessage& message) {
  const bool on_lane = LaneHub::IsLane(message.identity());
  STRATA_RETURN_IF_ERROR(
      admission_
          .Admit(message,
                 [&](const Peer& peer) {
                   auto refuse = [&](const std::string& why) {
                     return absl::InvalidArgumentError(absl::StrCat(
                         DescribePeer(peer.role, peer.rank), " ", why, " (server ", options_.rank,
                         " of a job of ", options_.servers, " servers, ", options_.workers,
                         " conv workers and ", options_.fc_workers, " FC workers)"));
                   };
                   switch (peer.role) {
                     case wire::Role::CONV_WORKER:
                       // A conv worker may ask the coordinator for a rank: on its
                       // coordinator connection only.
                       if (peer.rank == -1 && coordinator_ != nullptr && !on_lane)
                         return absl::OkStatus();
                       if (peer.rank < 0 || peer.rank >= options_.workers)
                         return refuse("is not in this job");
                       return absl::OkStatus();
                     case wire::Role::FC_WORKER:
                       if (peer.rank < 0 || peer.rank >= options_.fc_workers)
                         return refuse("is not in this job");
                       return absl::OkStatus();
                     case wire::Role::SERVER:
                       if (coordinator_ == nullptr || on_lane || peer.rank <= 0 ||
                           peer.rank >= options_.servers) {
                         return refuse("cannot register here");
                       }
                       return absl::OkStatus();
                     case wire::Role::LAUNCHER:
                     case wire::Role::TOOL:
                       return absl::OkStatus();
                   }
                   return refuse("has an unknown role");
                 })
          .status());
  OutgoingMessage ack(wire::Kind::HELLO_ACK);
  ack.header().setRequestId(message.header().getRequestId());
  if (coordinator_ != nullptr) ack.header().setCheckpointEpoch(restore_epoch_);
  return Reply(message.identity(), ack);
}

absl::Status JobServer::CheckAllowed(const Peer& peer, MessageType kind,
                                     const std::string& identity) const {
  const bool worker = peer.role == wire::Role::CONV_WORKER || peer.role == wire::Role::FC_WORKER;
  bool allowed = false;
  switch (kind.code()) {
    case CodeOf(wire::knob::Kind::KNOB_LEASE):
    case CodeOf(wire::knob::Kind::KNOB_SET):
    case CodeOf(wire::knob::Kind::KNOB_GET):
    case CodeOf(wire::Kind::REGISTER):
    case CodeOf(wire::Kind::HEARTBEAT):
    case CodeOf(wire::Kind::BARRIER):
      if (LaneHub::IsLane(identity)) {
        return absl::InvalidArgumentError(
            absl::StrCat(KindName(kind), " over a shared memory lane; the coordinator listens on ",
                         endpoints_->socket->address()));
      }
      if (coordinator_ == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            KindName(kind), " sent to server ", options_.rank, "; only server 0 coordinates"));
      }
      // The coordinator checks the knob kinds' senders itself.
      allowed = worker || peer.role == wire::Role::SERVER || kind == wire::knob::Kind::KNOB_SET ||
                kind == wire::knob::Kind::KNOB_GET;
      break;
    case CodeOf(wire::ps::Kind::INIT):
    case CodeOf(wire::ps::Kind::PUSH):
    case CodeOf(wire::ps::Kind::PULL):
    case CodeOf(wire::ps::Kind::SHM_ATTACH):
    case CodeOf(wire::Kind::DONE):
    case CodeOf(wire::Kind::LEAVE):
      allowed = worker && peer.rank >= 0;
      break;
    case CodeOf(wire::ps::Kind::CLOCK):
      allowed = true;
      break;
    case CodeOf(wire::Kind::SHUTDOWN):
      allowed = peer.role == wire::Role::LAUNCHER || peer.role == wire::Role::TOOL;
      if (allowed && !peer.admin) {
        return NeedsAdmin(peer, absl::StrCat("server ", options_.rank), KindName(kind));
      }
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("a server does not accept ", KindName(kind), " messages"));
  }
  if (allowed) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat(KindName(kind), " from ", DescribePeer(peer.role, peer.rank), "; server ",
                   options_.rank, " takes it only from ",
                   kind == wire::Kind::SHUTDOWN ? "a launcher or tool" : "the job's workers"));
}

absl::StatusOr<JobServer::ResolvedSlices> JobServer::ResolveSlices(const IncomingMessage& message,
                                                                   bool with_frames) const {
  const auto h = message.header();
  const auto body = BodyOf<wire::ps::Body>(h);
  const auto slices = body.getSlices();
  if (slices.size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(KindName(TypeOf(h)), " names no slices"));
  }
  // Slices whose floats lie in shared memory come without frames.
  with_frames = with_frames && body.getShmSlots().size() == 0;
  // Inits, and what shared memory holds, are fp32.
  const wire::DataType type = h.getDataType();
  if (type != wire::DataType::F32 && type != wire::DataType::BF16) {
    return absl::InvalidArgumentError(
        absl::StrCat(KindName(TypeOf(h)), " of unknown data type ", static_cast<int>(type)));
  }
  if (type != wire::DataType::F32 &&
      (TypeOf(h) == wire::ps::Kind::INIT || body.getShmSlots().size() != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(KindName(TypeOf(h)), " in ", WireFormatName(type),
                     (TypeOf(h) == wire::ps::Kind::INIT ? ": initial values travel as fp32"
                                                        : ": shared-memory slots hold fp32")));
  }
  if (with_frames && message.num_frames() != slices.size()) {
    return absl::InvalidArgumentError(absl::StrCat(KindName(TypeOf(h)), " has ", slices.size(),
                                                   " slices but ", message.num_frames(),
                                                   " data frames"));
  }
  std::vector<Chunk> chunks;
  for (unsigned i = 0; i < slices.size(); ++i) {
    const auto s = slices[i];
    if (s.getKey() >= static_cast<uint32_t>(plan_.num_keys())) {
      return absl::InvalidArgumentError(absl::StrCat(KindName(TypeOf(h)), " of unknown key ",
                                                     s.getKey(), " (the model has ",
                                                     plan_.num_keys(), " keys)"));
    }
    const Chunk* c = plan_.Find(s.getKey(), s.getOffset(), s.getLength());
    if (c == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          KindName(TypeOf(h)), " of key ", s.getKey(), " elements [", s.getOffset(), ", ",
          s.getOffset() + s.getLength(), ") does not match a chunk of the partition plan"));
    }
    if (!store_->Owns(*c)) {
      return absl::InvalidArgumentError(
          absl::StrCat(KindName(TypeOf(h)), " of key ", s.getKey(), " chunk ", c->index,
                       " sent to server ", options_.rank, "; it lives on server ", c->server));
    }
    if (with_frames && message.frame_size(i) != c->length * ElementBytes(type)) {
      return absl::InvalidArgumentError(
          absl::StrCat(KindName(TypeOf(h)), " of key ", s.getKey(), ": data frame ", i, " has ",
                       message.frame_size(i), " bytes, expected ", c->length * ElementBytes(type),
                       " (", c->length, " ", WireFormatName(type), " values)"));
    }
    for (const Chunk& earlier : chunks) {
      if (earlier.index == c->index) {
        return absl::InvalidArgumentError(absl::StrCat(KindName(TypeOf(h)), " names chunk ",
                                                       c->index, " of key ", c->key, " twice"));
      }
    }
    chunks.push_back(*c);
  }
  STRATA_ASSIGN_OR_RETURN(SharedMemoryPeers::Placement placement,
                          shared_memory_.Resolve(message, chunks));
  return ResolvedSlices{std::move(chunks), std::move(placement)};
}

absl::Status JobServer::HandleShmAttach(const IncomingMessage& message) {
  const auto h = message.header();
  // A refusal is an answer, not a bad request: the worker then sends its
  // data over the socket (another host or namespace is a normal case).
  const absl::Status attached = shared_memory_.Attach(message);
  OutgoingMessage ack(wire::ps::Kind::SHM_ATTACH_ACK);
  ack.header().setRequestId(h.getRequestId());
  if (attached.ok()) {
    LogInfo("shares memory with %s %d (%u slots of %llu bytes)",
            h.getSenderRole() == wire::Role::FC_WORKER ? "fc worker" : "worker", h.getSenderRank(),
            BodyOf<wire::ps::Body>(h).getShmSlotCount(),
            static_cast<unsigned long long>(BodyOf<wire::ps::Body>(h).getShmSlotBytes()));
  } else {
    FillError(ack.header(), attached);
  }
  return Reply(message.identity(), ack);
}

absl::Status JobServer::CheckRejoined(const wire::Header::Reader& request) {
  const int worker = request.getSenderRank();
  if (!restored_ || request.getSenderRole() != wire::Role::CONV_WORKER || worker < 0 ||
      worker >= options_.workers) {
    return absl::OkStatus();
  }
  if (TypeOf(request) == wire::ps::Kind::PULL && request.getIteration() < 0) {
    rejoined_[worker] = true;  // a pull of the current values
    return absl::OkStatus();
  }
  if (rejoined_[worker]) return absl::OkStatus();
  return absl::AbortedError(
      absl::StrCat("server ", options_.rank, " was restored from a checkpoint at iteration ",
                   restored_version_, "; pull the current parameters and continue from there"));
}

absl::Status JobServer::HandleInit(const IncomingMessage& message) {
  STRATA_ASSIGN_OR_RETURN(ResolvedSlices slices, ResolveSlices(message, true));
  for (size_t i = 0; i < slices.chunks.size(); ++i) {
    STRATA_RETURN_IF_ERROR(store_->Init(slices.chunks[i], slices.placement.SliceData(message, i)));
  }
  OutgoingMessage ack(wire::ps::Kind::INIT_ACK);
  ack.header().setRequestId(message.header().getRequestId());
  (void)Reply(message.identity(), ack);
  ServePending();
  return absl::OkStatus();
}

absl::Status JobServer::HandlePush(const IncomingMessage& message) {
  const auto h = message.header();
  STRATA_ASSIGN_OR_RETURN(ResolvedSlices slices, ResolveSlices(message, true));
  const std::vector<Chunk>& chunks = slices.chunks;
  const int worker = h.getSenderRank();
  const bool from_fc = h.getSenderRole() == wire::Role::FC_WORKER;
  STRATA_RETURN_IF_ERROR(CheckRejoined(h));
  // The whole request is checked before any chunk changes.
  std::vector<PushOutcome> outcomes;
  for (const Chunk& c : chunks) {
    const KeyRule& rule = store_->rule(c.key);
    if ((rule.owner == KeyOwner::kFcWorkers) != from_fc) {
      return absl::InvalidArgumentError(
          absl::StrCat("push of key ", c.key, " from ", from_fc ? "an FC" : "a conv",
                       " worker; key ", c.key, " is pushed by the ", KeyOwnerName(rule.owner)));
    }
    STRATA_ASSIGN_OR_RETURN(const PushOutcome outcome, store_->Check(worker, h.getIteration(), c));
    outcomes.push_back(outcome);
  }
  bool updated = false;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (slices.placement.region != nullptr) {
      traffic_.AddReceived(current_peer_, chunks[i].length * sizeof(float));
    }
    if (outcomes[i] == PushOutcome::kDuplicate) continue;
    STRATA_ASSIGN_OR_RETURN(
        const PushOutcome outcome,
        store_->Push(worker, h.getIteration(), chunks[i], PushedValues(message, slices, i)));
    if (outcome == PushOutcome::kApplied) {
      updated = true;
      // BSP only: one entry per iteration (under ASP, one per push).
      if (options_.consistency == Consistency::kBsp) ++updates_by_iteration_[h.getIteration()];
    }
  }
  OutgoingMessage ack(wire::ps::Kind::PUSH_ACK);
  ack.header().setRequestId(h.getRequestId());
  ack.header().setIteration(h.getIteration());
  (void)Reply(message.identity(), ack);
  // Only an applied update changes what pulls may be served (versions,
  // clocks) or what a checkpoint would hold.
  if (updated) {
    ServePending();
    MaybeCheckpoint();
  }
  return absl::OkStatus();
}

const float* JobServer::PushedValues(const IncomingMessage& message, const ResolvedSlices& slices,
                                     size_t i) {
  if (slices.placement.region != nullptr || message.header().getDataType() == wire::DataType::F32) {
    return slices.placement.SliceData(message, i);
  }
  const int64_t n = static_cast<int64_t>(slices.chunks[i].length);
  widened_.resize(static_cast<size_t>(n));
  DecodeFloats(message, i, message.header().getDataType(), widened_.data(), n);
  return widened_.data();
}

void JobServer::SendPull(const PendingPull& pull) {
  OutgoingMessage reply(wire::ps::Kind::PULL_REPLY);
  auto h = reply.header();
  h.setRequestId(pull.request_id);
  auto body = BodyOf<wire::ps::Body>(h);
  auto slices = body.initSlices(static_cast<unsigned>(pull.chunks.size()));
  const bool shared = pull.placement.region != nullptr;
  if (shared) {
    auto slots = body.initShmSlots(static_cast<unsigned>(pull.chunks.size()));
    for (size_t i = 0; i < pull.chunks.size(); ++i) {
      slots.set(static_cast<unsigned>(i), pull.placement.slots[i]);
    }
  }
  for (size_t i = 0; i < pull.chunks.size(); ++i) {
    const Chunk& c = pull.chunks[i];
    slices[i].setKey(c.key);
    slices[i].setOffset(c.offset);
    slices[i].setLength(c.length);
    if (shared) {
      const size_t bytes = c.length * sizeof(float);
      std::memcpy(pull.placement.region->slot(pull.placement.slots[i]), store_->value(c), bytes);
      traffic_.AddSent(current_peer_, bytes);
    } else {
      // Zero-copy in fp32: the store copies on write while this reply
      // holds the buffer.
      reply.AddFrame(EncodeFloats(store_->value_tensor(c), pull.data_type));
    }
  }
  h.setDataType(shared ? wire::DataType::F32 : pull.data_type);
  h.setIteration(store_->min_version(pull.chunks));
  for (const Chunk& c : pull.chunks) store_->NoteServed(c, pull.iteration);
  (void)Reply(pull.identity, reply);
}

absl::Status JobServer::HandlePull(const IncomingMessage& message) {
  const auto h = message.header();
  STRATA_ASSIGN_OR_RETURN(ResolvedSlices slices, ResolveSlices(message, false));
  STRATA_RETURN_IF_ERROR(CheckRejoined(h));
  // A worker that heard nothing asks again; the pull it repeats is
  // answered when ready, once.
  for (const PendingPull& held : pending_) {
    if (held.request_id == h.getRequestId() && held.identity == message.identity()) {
      return absl::OkStatus();
    }
  }
  PendingPull pull{message.identity(),       h.getRequestId(),  h.getIteration(),
                   std::move(slices.chunks), h.getSenderRank(), std::move(slices.placement),
                   h.getDataType()};
  bool ready = true;
  for (const Chunk& c : pull.chunks) ready = ready && store_->CanServe(c, pull.iteration);
  if (ready) {
    SendPull(pull);
    return absl::OkStatus();
  }
  // Waiting for a dead worker's iterations would be waiting for ever.
  if (const WorkerState* stopped = StoppedPusherOf(pull.chunks); stopped != nullptr) {
    return StoppedPusherError(*stopped);
  }
  pending_.push_back(std::move(pull));
  return absl::OkStatus();
}

void JobServer::ServePending() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    bool ready = true;
    for (const Chunk& c : it->chunks) ready = ready && store_->CanServe(c, it->iteration);
    if (ready) {
      SendPull(*it);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

void JobServer::FailPendingPulls(const absl::Status& status) {
  for (const PendingPull& p : pending_) SendError(p.identity, p.request_id, status);
  pending_.clear();
}

void JobServer::MaybeCheckpoint() {
  if (checkpoints_ == nullptr) return;
  // At a multiple of checkpoint_every, once the last of our chunks gets
  // there: under BSP no chunk moves past an iteration before every chunk
  // has reached it (a worker pushes iteration i only after pulling all of
  // it), so the shard is then whole at that iteration. The capture is a
  // copy; serialising and syncing it to disk happen on the writer's thread.
  const int64_t version = store_->min_version(plan_.chunks_of_server(options_.rank));
  if (version <= last_checkpoint_version_ || version % options_.checkpoint_every != 0) return;
  last_checkpoint_version_ = version;
  const std::string path = options_.checkpoint_dir.empty()
                               ? options_.checkpoint_path
                               : EpochPartPath(options_.checkpoint_dir, version,
                                               CheckpointPartName("server", options_.rank));
  checkpoints_->Write(path, version, store_->Capture());
}

void JobServer::MaybeCompleteEpoch() {
  if (coordinator_ == nullptr || checkpoints_ == nullptr || options_.checkpoint_dir.empty()) {
    return;
  }
  const int64_t agreed = coordinator_->AgreedCheckpoint(checkpoints_->last_written());
  if (agreed <= last_agreed_epoch_ || agreed <= last_complete_epoch_) return;
  last_agreed_epoch_ = agreed;
  CompleteEpochsUpTo(agreed);
}

absl::StatusOr<CheckpointEpoch> JobServer::CompleteOneEpoch(int64_t epoch) {
  // Every process writes its parts in order and says what failed before it
  // says what it wrote after, so a failure is known here by the time a
  // later epoch is agreed.
  if (const std::vector<std::string> failed = coordinator_->CheckpointFailures(epoch);
      !failed.empty()) {
    return absl::DataLossError(absl::StrCat("checkpoint epoch ", epoch,
                                            " is not complete: ", absl::StrJoin(failed, "; ")));
  }
  return CompleteEpoch(options_.checkpoint_dir, epoch, stamp_,
                       epoch_parts_.empty() ? nullptr : &epoch_parts_);
}

bool JobServer::CompleteEpochsUpTo(int64_t last) {
  if (taken_over_) return false;
  const std::string& dir = options_.checkpoint_dir;
  // A newer start of the job owns the directory: write nothing there.
  auto taken_over = [&](const absl::Status& s) {
    if (!absl::IsFailedPrecondition(s)) return false;
    taken_over_ = true;
    LogError("checkpoints: %s; this process writes no manifest and prunes nothing from now on",
             std::string(s.message()).c_str());
    return true;
  };
  absl::StatusOr<CheckpointEpoch> newest = CompleteOneEpoch(last);
  if (!newest.ok()) {
    if (!taken_over(newest.status())) {
      LogWarning("%s", std::string(newest.status().message()).c_str());
    }
    return false;
  }
  // Every owner writes its parts in order, so the epochs between the last
  // complete one and `last` are written too, unless a part failed (its
  // epoch then lacks it and never counts).
  for (const auto& [part, bytes] : newest->part_bytes) epoch_parts_.insert(part);
  const int64_t every = options_.checkpoint_every;
  std::vector<int64_t> completed;
  for (int64_t e = (std::max<int64_t>(last_complete_epoch_, 0) / every + 1) * every; e < last;
       e += every) {
    if (CompleteOneEpoch(e).ok()) completed.push_back(e);
  }
  completed.push_back(last);
  last_complete_epoch_ = last;
  const absl::StatusOr<int> removed = PruneEpochs(dir, options_.keep_checkpoints, stamp_);
  if (!removed.ok() && !taken_over(removed.status())) {
    LogWarning("%s", std::string(removed.status().message()).c_str());
  }
  LogInfo(
      "checkpoint epoch%s %s complete (%zu parts each, in %s)%s", completed.size() > 1 ? "s" : "",
      absl::StrJoin(completed, ", ").c_str(), epoch_parts_.size(), dir.c_str(),
      removed.ok() && *removed > 0 ? absl::StrCat("; removed ", *removed, " older").c_str() : "");
  return true;
}

void JobServer::ReportCheckpointFailures() {
  if (checkpoints_ == nullptr) return;
  for (const auto& [iteration, why] : checkpoints_->TakeFailures()) {
    if (coordinator_ != nullptr) {
      coordinator_->RecordCheckpointFailure(DescribePeer(wire::Role::SERVER, 0), iteration,
                                            std::string(why.message()));
    } else {
      failure_to_report_ = CheckpointReport{-1, iteration, std::string(why.message())};
    }
  }
}

bool JobServer::AllWorkersDone() const {
  return std::all_of(workers_.begin(), workers_.end(), [](const WorkerState& w) { return w.done; });
}

void JobServer::SettleFinalEpoch(absl::Time now) {
  if (final_epoch_.has_value() || !AllWorkersDone()) return;
  if (checkpoints_ == nullptr || options_.checkpoint_dir.empty()) {
    final_epoch_ = absl::OkStatus();  // no checkpoints to settle
    return;
  }
  if (all_done_at_ == absl::InfiniteFuture()) {
    all_done_at_ = now;
    checkpoints_->Flush();  // our own part; the others report theirs
    ReportCheckpointFailures();
  }
  // Every other server says its last word as it exits (SendLastReport) and
  // waits until it is heard: hear them all before exiting, so that none
  // waits for a coordinator that has gone. A server that is not heard
  // within dead_after is dead or cut off.
  const bool waited_out = now - all_done_at_ >= options_.dead_after;
  if (!coordinator_->ServersYetToSayLast().empty() && !waited_out) return;
  const int64_t every = options_.checkpoint_every;
  const int64_t last = store_->min_version(plan_.chunks_of_server(options_.rank));
  if (every <= 0 || last <= 0 || last % every != 0 || last <= last_complete_epoch_) {
    final_epoch_ = absl::OkStatus();  // no final epoch to wait for
    return;
  }
  // Every server reports its part in its last report, an FC worker in its
  // DONE (each after writing it, or with why it could not): wait for every
  // word, then complete what they allow.
  const std::vector<std::string> silent = coordinator_->NodesYetToReport(last);
  if (!silent.empty() && !waited_out) return;
  MaybeCompleteEpoch();
  const std::vector<std::string> failed = coordinator_->CheckpointFailures(last);
  if (!failed.empty()) {
    final_epoch_ = absl::DataLossError(
        absl::StrCat("the final checkpoint epoch cannot be complete: ", absl::StrJoin(failed, "; "),
                     "; a --restore resumes from epoch ", last_complete_epoch_));
  } else if (!silent.empty()) {
    final_epoch_ = absl::DataLossError(absl::StrCat(
        "the final checkpoint epoch ", last, " is not complete after ",
        absl::FormatDuration(options_.dead_after), ": no part reported by ",
        absl::StrJoin(silent, ", "), "; a --restore resumes from epoch ", last_complete_epoch_));
  } else if (last_complete_epoch_ == last || CompleteEpochsUpTo(last)) {
    final_epoch_ = absl::OkStatus();
  } else {
    final_epoch_ = absl::DataLossError(absl::StrCat("the final checkpoint epoch ", last,
                                                    " could not be completed (the log says why); a "
                                                    "--restore resumes from epoch ",
                                                    last_complete_epoch_));
  }
}

absl::Status JobServer::ForgetAndAcknowledge(const IncomingMessage& message) {
  shared_memory_.Forget(message.identity());
  admission_.Forget(message.identity());
  OutgoingMessage ack(wire::Kind::SHUTDOWN_ACK);
  ack.header().setRequestId(message.header().getRequestId());
  return Reply(message.identity(), ack);
}

absl::Status JobServer::Handle(const IncomingMessage& message) {
  const auto h = message.header();
  if (TypeOf(h) == wire::Kind::HELLO) return HandleHello(message);
  STRATA_ASSIGN_OR_RETURN(const Peer peer, admission_.Check(message));
  STRATA_RETURN_IF_ERROR(CheckAllowed(peer, TypeOf(h), message.identity()));
  if (const WorkerState* w = FindWorker(peer); w != nullptr && w->stopped) {
    return absl::FailedPreconditionError(absl::StrCat(
        DescribePeer(peer.role, peer.rank), " ", w->why_stopped, "; the job goes on without it"));
  }
  return services_.Route(message, peer);
}

void JobServer::AddServices() {
  // Each service's handler is its module's; registering one twice is a
  // programming error, caught by the tests that start a server.
  auto add = [this](uint16_t service, ServiceRouter<const Peer&>::Handler handler) {
    const absl::Status added = services_.Add(service, std::move(handler));
    if (!added.ok()) LogError("%s", std::string(added.message()).c_str());
  };
  add(kControlService,
      [this](const IncomingMessage& m, const Peer& p) { return HandleControl(m, p); });
  add(wire::ps::SERVICE,
      [this](const IncomingMessage& m, const Peer&) { return HandleParameters(m); });
  if (coordinator_ != nullptr) {
    add(wire::knob::SERVICE, [this](const IncomingMessage& m, const Peer& p) {
      return coordinator_->HandleKnobs(m, p);
    });
  }
}

absl::Status JobServer::HandleControl(const IncomingMessage& message, const Peer& peer) {
  const auto h = message.header();
  switch (TypeOf(h).code()) {
    case CodeOf(wire::Kind::REGISTER):
    case CodeOf(wire::Kind::HEARTBEAT):
    case CodeOf(wire::Kind::BARRIER):
      return coordinator_->Handle(message, peer);
    case CodeOf(wire::Kind::DONE): {
      WorkerState* worker = FindWorker(peer);
      if (worker == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("done from ", DescribePeer(peer.role, peer.rank), ", not in this job"));
      }
      worker->done = true;
      // Its last word on its checkpoint parts: the final epoch may wait for it.
      if (coordinator_ != nullptr) {
        coordinator_->RecordCheckpointed(peer, h.getIteration());
        if (h.getFailedCheckpoint() >= 0) {
          coordinator_->RecordCheckpointFailure(DescribePeer(peer.role, peer.rank),
                                                h.getFailedCheckpoint(),
                                                h.getErrorMessage().cStr());
        }
      }
      return ForgetAndAcknowledge(message);
    }
    case CodeOf(wire::Kind::LEAVE):
      OnWorkerStopped(peer, absl::StrCat("stopped: ", h.getErrorMessage().cStr()));
      return ForgetAndAcknowledge(message);
    case CodeOf(wire::Kind::SHUTDOWN): {
      shutdown_ = true;
      OutgoingMessage ack(wire::Kind::SHUTDOWN_ACK);
      ack.header().setRequestId(h.getRequestId());
      return Reply(message.identity(), ack);
    }
    default:
      return NotAccepted(message);
  }
}

absl::Status JobServer::HandleParameters(const IncomingMessage& message) {
  const auto h = message.header();
  switch (TypeOf(h).code()) {
    case CodeOf(wire::ps::Kind::INIT):
      return HandleInit(message);
    case CodeOf(wire::ps::Kind::PUSH):
      return HandlePush(message);
    case CodeOf(wire::ps::Kind::PULL):
      return HandlePull(message);
    case CodeOf(wire::ps::Kind::SHM_ATTACH):
      return HandleShmAttach(message);
    case CodeOf(wire::ps::Kind::CLOCK): {
      OutgoingMessage reply(wire::ps::Kind::CLOCK_REPLY);
      reply.header().setRequestId(h.getRequestId());
      reply.header().setIteration(store_->max_served_lead());
      const std::vector<int64_t>& clocks = store_->clocks();
      auto list =
          BodyOf<wire::ps::Body>(reply.header()).initClocks(static_cast<unsigned>(clocks.size()));
      for (size_t i = 0; i < clocks.size(); ++i) list.set(static_cast<unsigned>(i), clocks[i]);
      return Reply(message.identity(), reply);
    }
    default:
      return NotAccepted(message);
  }
}

absl::Status JobServer::NotAccepted(const IncomingMessage& message) {
  return absl::InvalidArgumentError(
      absl::StrCat("a server does not accept ", KindName(TypeOf(message.header())), " messages"));
}

void JobServer::HandleRequest(const IncomingMessage& message, uint64_t bytes) {
  current_peer_ = PeerKindOf(message.header().getSenderRole());
  traffic_.AddReceived(current_peer_, bytes);
  absl::Status s = Handle(message);
  if (!s.ok()) SendError(message.identity(), message.header().getRequestId(), s);
}

void JobServer::Refuse(const std::string& identity, uint64_t request_id, uint64_t bytes,
                       const absl::Status& why) {
  current_peer_ = PeerKind::kConv;
  traffic_.AddReceived(current_peer_, bytes);
  SendError(identity, request_id, why);
}

namespace {

wire::Role RoleOf(KeyOwner owner) {
  return owner == KeyOwner::kFcWorkers ? wire::Role::FC_WORKER : wire::Role::CONV_WORKER;
}

}  // namespace

const JobServer::WorkerState* JobServer::StoppedPusherOf(const std::vector<Chunk>& chunks) const {
  for (const WorkerState& w : workers_) {
    if (!w.stopped || w.done) continue;
    for (const Chunk& c : chunks) {
      if (RoleOf(store_->rule(c.key).owner) == w.peer.role) return &w;
    }
  }
  return nullptr;
}

absl::Status JobServer::StoppedPusherError(const WorkerState& pusher) {
  return absl::UnavailableError(absl::StrCat(DescribePeer(pusher.peer.role, pusher.peer.rank), " ",
                                             pusher.why_stopped,
                                             "; pulls waiting for its iterations cannot complete"));
}

void JobServer::OnWorkerStopped(const Peer& peer, const std::string& why) {
  WorkerState* worker = FindWorker(peer);  // servers: nothing waits for them here
  // A worker that finished and left is not missed.
  if (worker == nullptr || worker->stopped || worker->done) return;
  worker->stopped = true;
  worker->why_stopped = why;
  const std::string who = DescribePeer(peer.role, peer.rank);
  LogWarning("%s %s", who.c_str(), why.c_str());
  // The pulls that wait for its iterations: those of the keys it pushes.
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (StoppedPusherOf(it->chunks) == worker) {
      SendError(it->identity, it->request_id, StoppedPusherError(*worker));
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  if (options_.consistency == Consistency::kAsp) {
    // Nobody waits for its iterations, and it will not say it is done.
    worker->done = true;
    LogWarning("no longer waits for %s to finish (asp)", who.c_str());
  }
}

absl::Status JobServer::ServeCoordinatorLink() {
  bool register_again = false;
  while (true) {
    absl::StatusOr<RawMessage> raw = coordinator_link_->ReceiveNow();
    if (!raw.ok()) break;
    absl::StatusOr<IncomingMessage> message = Decode(*std::move(raw), options_.limits);
    if (!message.ok()) continue;
    const auto h = message->header();
    if (TypeOf(h) == wire::Kind::NODE_DEAD && h.getNodes().size() == 1) {
      OnWorkerStopped({h.getNodes()[0].getRole(), h.getNodes()[0].getRank()},
                      "stopped sending heartbeats");
    } else if (IsNotRegistered(h)) {
      register_again = true;  // a restarted coordinator does not know us
    } else if (TypeOf(h) == wire::Kind::ERROR) {
      return WithContext(ErrorFromHeader(h), absl::StrCat("the coordinator ", options_.coordinator,
                                                          " refused server ", options_.rank));
    }
  }
  if (register_again && MonotonicNow() - last_registration_ >= options_.heartbeat_every) {
    LogInfo("registering again with the coordinator %s", options_.coordinator.c_str());
    STRATA_RETURN_IF_ERROR(Register(/*wait_for_hello=*/false).status());
  }
  return absl::OkStatus();
}

absl::Status JobServer::Tick(absl::Time now) {
  if (coordinator_ != nullptr) {
    if (!coordinator_->all_registered() && now - created_ > options_.assemble_within) {
      const absl::Status late = absl::DeadlineExceededError(absl::StrCat(
          "the job's nodes did not all register within ",
          absl::FormatDuration(options_.assemble_within), " (", coordinator_->Registered(), ")"));
      coordinator_->Abandon(late);
      return late;
    }
    for (const Peer& dead : coordinator_->CheckLiveness(now)) {
      OnWorkerStopped(dead, "stopped sending heartbeats");
    }
    ReportCheckpointFailures();
    MaybeCompleteEpoch();
    SettleFinalEpoch(now);
  }
  if (coordinator_link_ != nullptr) {
    STRATA_RETURN_IF_ERROR(ServeCoordinatorLink());
    const int64_t reported_failure = failure_to_report_.failed;
    ReportCheckpointFailures();
    // A part that failed is news at once: its epoch will never count.
    if (now >= next_heartbeat_ || failure_to_report_.failed != reported_failure) {
      OutgoingMessage beat(wire::Kind::HEARTBEAT);
      FillOwnHeartbeat(beat.header());
      (void)coordinator_link_->Send(beat);
      next_heartbeat_ = now + options_.heartbeat_every;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> JobServer::Finished() const {
  if (shutdown_) return true;
  std::vector<std::string> unfinished;
  for (const WorkerState& w : workers_) {
    if (w.done) continue;
    if (!w.stopped) return false;
    unfinished.push_back(absl::StrCat(DescribePeer(w.peer.role, w.peer.rank), " ", w.why_stopped));
  }
  if (unfinished.empty()) {
    // Rank 0 with coordinated checkpoints: done once the final epoch settled.
    const bool settles =
        coordinator_ != nullptr && checkpoints_ != nullptr && !options_.checkpoint_dir.empty();
    if (!settles) return true;
    if (!final_epoch_.has_value()) return false;
    STRATA_RETURN_IF_ERROR(*final_epoch_);
    return true;
  }
  return absl::UnavailableError(
      absl::StrCat("server ", options_.rank, ": every worker that had not finished has stopped (",
                   absl::StrJoin(unfinished, "; "), "); the job cannot complete"));
}

void JobServer::LogUpdateCount() const {
  if (options_.consistency != Consistency::kBsp || updates_by_iteration_.empty()) return;
  // Under BSP every chunk takes one update per iteration, from the
  // iteration the job started (or was restored) at to its end: a lost
  // update leaves a chunk short, one applied twice makes one long.
  const int64_t chunks = static_cast<int64_t>(plan_.chunks_of_server(options_.rank).size());
  const int64_t first = restored_ ? restored_version_ : 0;
  const int64_t last = updates_by_iteration_.rbegin()->first;
  std::vector<std::string> wrong;
  int64_t total = 0;
  for (int64_t it = first; it <= last; ++it) {
    auto found = updates_by_iteration_.find(it);
    const int64_t count = found == updates_by_iteration_.end() ? 0 : found->second;
    total += count;
    if (count != chunks) wrong.push_back(absl::StrCat("iteration ", it, ": ", count));
  }
  if (updates_by_iteration_.begin()->first < first) {
    wrong.push_back(absl::StrCat("iteration ", updates_by_iteration_.begin()->first,
                                 " (before the restored iteration ", first, ")"));
  }
  if (wrong.empty()) {
    LogInfo("updates applied: iterations %lld to %lld, each of our %lld chunks once (%lld)",
            static_cast<long long>(first), static_cast<long long>(last),
            static_cast<long long>(chunks), static_cast<long long>(total));
  } else {
    LogWarning("updates applied: not one per chunk and iteration (%lld chunks): %s",
               static_cast<long long>(chunks), absl::StrJoin(wrong, "; ").c_str());
  }
}

void JobServer::FillOwnHeartbeat(wire::Header::Builder h) const {
  CheckpointReport report = failure_to_report_;
  report.written = checkpoints_ != nullptr ? checkpoints_->last_written() : -1;
  FillHeartbeat(h, options_.job_id, wire::Role::SERVER, options_.rank, report);
}

void JobServer::SendLastReport() {
  constexpr uint64_t kLastReport = 1;
  // Asked again until the coordinator says it heard it (a lost message, a
  // cut that heals), for as long as it waits for our report at most.
  RoundTrip wait(GivingUpAfter(options_.dead_after, {absl::Milliseconds(200)}));
  const absl::Time give_up = MonotonicNow() + options_.dead_after;
  for (int sends = 1; MonotonicNow() < give_up; ++sends) {
    OutgoingMessage beat(wire::Kind::HEARTBEAT);
    FillOwnHeartbeat(beat.header());
    beat.header().setRequestId(kLastReport);
    (void)coordinator_link_->Send(beat);
    const absl::Time resend_at = std::min(give_up, MonotonicNow() + wait.TimeoutAfter(sends));
    while (MonotonicNow() < resend_at) {
      absl::StatusOr<RawMessage> raw = coordinator_link_->Receive(resend_at - MonotonicNow());
      if (!raw.ok()) continue;
      const std::optional<HeaderGlance> heard = PeekHeader(*raw, options_.limits);
      if (heard.has_value() && heard->type == wire::Kind::HEARTBEAT &&
          heard->request_id == kLastReport) {
        if (sends > 1) LogInfo("the coordinator heard our last report after %d sends", sends);
        return;
      }
    }
  }
  LogWarning("the coordinator did not confirm our last checkpoint report within %s",
             absl::FormatDuration(options_.dead_after).c_str());
}

absl::Status JobServer::Finish() {
  if (checkpoints_ != nullptr) {
    checkpoints_->Flush();
    MaybeCompleteEpoch();
    ReportCheckpointFailures();
    if (coordinator_link_ != nullptr && !options_.checkpoint_dir.empty()) SendLastReport();
  }
  if (!options_.checkpoint_path.empty()) {
    STRATA_RETURN_IF_ERROR(WriteCheckpoint(options_.checkpoint_path, store_->Capture()));
  }
  if (coordinator_ != nullptr) {
    for (const std::string& failure : coordinator_->CheckpointFailures()) {
      LogWarning("checkpoint part not written (its epoch never counted): %s", failure.c_str());
    }
  }
  LogUpdateCount();
  traffic_.process = absl::StrCat("server ", options_.rank);
  traffic_.steps = store_->min_clock();
  traffic_.Print();
  std::string clocks;
  for (int64_t c : store_->clocks()) clocks += (clocks.empty() ? "" : " ") + std::to_string(c);
  LogInfo(
      "finished job %llu: worker clocks [%s], max pull lead %lld (%s, staleness %d), %llu "
      "requests refused%s",
      static_cast<unsigned long long>(options_.job_id), clocks.c_str(),
      static_cast<long long>(store_->max_served_lead()), ConsistencyName(options_.consistency),
      options_.staleness, static_cast<unsigned long long>(errors_sent_),
      replies_dropped_ == 0 ? ""
                            : absl::StrCat(", ", replies_dropped_, " replies dropped").c_str());
  return absl::OkStatus();
}

}  // namespace strata
