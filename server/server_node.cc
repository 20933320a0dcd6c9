#include "server/server_node.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/model/job_identity.h"
#include "core/net/connection_security.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/json_difference.h"
#include "core/util/log.h"
#include "core/util/ready_file.h"
#include "server/lane_hub.h"

namespace strata {
namespace {

// Where a server binds and what it advertises, the role's defaults applied
// (ServerOptions::serving).
absl::StatusOr<ServingAddress> ServerServingAddress(const ServerOptions& self) {
  ServingAddress serving = self.serving;
  if (self.rank > 0) {
    if (serving.bind.empty()) serving.bind = ServingAddress().bind;
    return serving;
  }
  if (serving.bind.empty()) serving.bind = self.coordinator;
  if (serving.advertise.empty() && serving.interface.empty()) {
    STRATA_ASSIGN_OR_RETURN(BindTarget coordinator, ParseBindAddress(self.coordinator));
    if (coordinator.scheme == "tcp") serving.advertise = coordinator.host;
  }
  return serving;
}

// Requests read from the socket, and from each lane, per poll.
constexpr int kMaxMessagesPerPoll = 256;

}  // namespace

ServerNode::ServerNode(ServerNodeOptions options)
    : options_(std::move(options)),
      process_(options_.process),
      group_admission_(absl::StrCat("server ", options_.process.rank),
                       JobCredentials{kServerGroupJobId, options_.process.job_token, "", "", ""}) {}

ServerNode::~ServerNode() = default;

absl::StatusOr<std::unique_ptr<ServerNode>> ServerNode::Create(std::vector<ServerOptions> jobs) {
  if (jobs.empty()) return absl::InvalidArgumentError("a server needs at least one job");
  ServerNodeOptions options;
  options.process = jobs[0];
  options.jobs = std::move(jobs);
  return Create(std::move(options));
}

absl::StatusOr<std::unique_ptr<ServerNode>> ServerNode::Create(ServerNodeOptions options) {
  const bool learns = static_cast<bool>(options.learning.options_for);
  if (options.jobs.empty() && !learns) {
    return absl::InvalidArgumentError("a server needs at least one job, or to learn jobs");
  }
  std::set<uint64_t> ids;
  const ServerOptions& process = options.process;
  for (const ServerOptions& job : options.jobs) {
    if (job.job_id == kServerGroupJobId) {
      return absl::InvalidArgumentError(
          absl::StrCat("job id ", kServerGroupJobId, " is the server group's own; use another"));
    }
    if (!ids.insert(job.job_id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("two jobs with id ", job.job_id, ": every job needs an id of its own"));
    }
    if (job.rank != process.rank || job.coordinator != process.coordinator) {
      return absl::InvalidArgumentError(
          absl::StrCat("job ", job.job_id, " names server ", job.rank, " of ", job.coordinator,
                       ", this process is server ", process.rank, " of ", process.coordinator,
                       ": one process is one server rank of one coordinator"));
    }
  }
  if (process.coordinator.empty()) return absl::InvalidArgumentError("--coordinator is required");
  std::unique_ptr<ServerNode> node(new ServerNode(std::move(options)));
  const ServerOptions& self = node->process_;
  STRATA_ASSIGN_OR_RETURN(const ServingAddress serving, ServerServingAddress(self));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ZmqEndpoint> socket,
                          ZmqEndpoint::Bind(node->context_, serving, self.limits));
  node->socket_ = Decorated(std::move(socket), self.decorate_endpoint);
  // Lanes bypass the socket: with CURVE every message takes the encrypted,
  // keyed connection instead.
  absl::StatusOr<std::unique_ptr<LaneHub>> lanes =
      ProcessMechanism() == Mechanism::kCurve
          ? absl::FailedPreconditionError("with CURVE every message takes the encrypted socket")
          : LaneHub::Listen(absl::StrCat("server ", self.rank), node->socket_->address(),
                            self.job_token);
  if (lanes.ok()) {
    node->lanes_ = Decorated(*std::move(lanes), self.decorate_endpoint);
    node->endpoints_.all.push_back(node->lanes_.get());
  } else {
    LogInfo("no shared memory lanes (%s); workers use the socket",
            std::string(lanes.status().message()).c_str());
  }
  node->endpoints_.socket = node->socket_.get();
  node->endpoints_.lanes = node->lanes_.get();
  node->endpoints_.all.push_back(node->socket_.get());
  const size_t given = node->options_.jobs.size();
  for (const ServerOptions& job : node->options_.jobs) {
    absl::StatusOr<std::unique_ptr<JobServer>> server =
        JobServer::Create(job, &node->endpoints_, node->context_);
    if (!server.ok() && given > 1) {
      return WithContext(server.status(), absl::StrCat("job ", job.job_id));
    }
    STRATA_RETURN_IF_ERROR(server.status());
    node->jobs_.push_back(*std::move(server));
  }
  if (learns) {
    if (self.rank > 0) {
      // Join server 0's group: it tells us every job it learns.
      STRATA_ASSIGN_OR_RETURN(
          node->group_link_,
          Socket::Connect(node->context_, SocketKind::kDealer, self.coordinator, self.limits));
      STRATA_RETURN_IF_ERROR(SayHello(*node->group_link_, node->group_admission_.credentials(),
                                      wire::Role::SERVER, self.rank));
    }
    LogInfo(
        "learning jobs from the workers' hellos%s%s",
        self.rank > 0 ? absl::StrCat(" (told by server 0 at ", self.coordinator, ")").c_str() : "",
        node->options_.learning.serve_forever ? "; serving until stopped" : "");
  }
  STRATA_RETURN_IF_ERROR_CTX(
      WriteReadyFile(self.ready_file,
                     {{"role", "server"},
                      {"rank", self.rank},
                      {"address", node->socket_->address()},
                      {"lane", node->lanes_ != nullptr ? node->lanes_->address() : ""}}),
      "writing --ready-file");
  return node;
}

std::string ServerNode::JobIds() const {
  std::vector<uint64_t> ids;
  for (const auto& job : jobs_) ids.push_back(job->job_id());
  return absl::StrJoin(ids, ", ");
}

JobServer* ServerNode::JobFor(uint64_t job_id) {
  if (jobs_.size() == 1 && !learning()) return jobs_[0].get();  // its admission names a wrong id
  for (const auto& job : jobs_) {
    if (job->job_id() == job_id) return job.get();
  }
  return nullptr;
}

void ServerNode::Refuse(const std::string& identity, uint64_t request_id, uint64_t bytes,
                        const absl::Status& why) {
  if (jobs_.size() == 1 && !learning()) {  // everything is that job's, its traffic too
    jobs_[0]->Refuse(identity, request_id, bytes, why);
    return;
  }
  LogRefusal("refused a request: %s", std::string(why.message()).c_str());
  OutgoingMessage reply(wire::Kind::ERROR);
  reply.header().setRequestId(request_id);
  reply.header().setSenderRole(wire::Role::SERVER);
  reply.header().setSenderRank(process_.rank);
  FillError(reply.header(), why);
  (void)endpoints_.Reply(identity, reply);
}

void ServerNode::HandleRaw(RawMessage raw) {
  const std::string identity = raw.identity;
  uint64_t bytes = 0;
  for (const auto& f : raw.frames) bytes += f.size();
  const uint64_t request_id = PeekRequestId(raw, process_.limits);
  absl::StatusOr<IncomingMessage> message = Decode(std::move(raw), process_.limits);
  if (!message.ok()) {
    Refuse(identity, request_id, bytes, message.status());
    return;
  }
  const auto h = message->header();
  if (learning() && h.getJobId() == kServerGroupJobId) {
    HandleGroupMessage(*message);
    return;
  }
  JobServer* job = JobFor(h.getJobId());
  if (job == nullptr && learning() && TypeOf(h) == wire::Kind::HELLO && h.getJobSpec().size() > 0) {
    absl::StatusOr<JobServer*> learned = LearnFromHello(*message);
    if (!learned.ok()) {
      Refuse(identity, request_id, bytes, learned.status());
      return;
    }
    job = *learned;
  }
  if (job == nullptr) {
    Refuse(identity, request_id, bytes,
           absl::PermissionDeniedError(
               absl::StrCat("unknown job id ", h.getJobId(), " (server ", process_.rank, " serves ",
                            jobs_.empty() ? std::string("no job") : absl::StrCat("jobs ", JobIds()),
                            learning() && TypeOf(h) == wire::Kind::HELLO
                                ? "; a hello that offers its job's spec would start it"
                                : "",
                            ")")));
    return;
  }
  job->HandleRequest(*message, bytes);
}

absl::StatusOr<JobServer*> ServerNode::LearnFromHello(const IncomingMessage& hello) {
  const auto h = hello.header();
  const uint64_t job_id = h.getJobId();
  STRATA_RETURN_IF_ERROR(group_admission_.CheckToken(hello));
  const std::string spec_text(h.getJobSpec().cStr(), h.getJobSpec().size());
  STRATA_ASSIGN_OR_RETURN(JobSpec spec, ParseSpec(job_id, spec_text));
  const std::string offered(h.getJobIdentity().cStr(), h.getJobIdentity().size());
  if (const std::string d = FirstDifference(JobIdentity(spec.config), offered); !d.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the spec of job ", job_id, " differs from the identity its hello presents: ", d));
  }
  STRATA_ASSIGN_OR_RETURN(JobServer * job, Learn(job_id, spec, spec_text));
  LogInfo("learned job %llu from the hello of %s", static_cast<unsigned long long>(job_id),
          DescribePeer(h.getSenderRole(), h.getSenderRank()).c_str());
  return job;
}

absl::StatusOr<JobSpec> ServerNode::ParseSpec(uint64_t job_id, const std::string& spec_text) {
  constexpr size_t kMaxSpecBytes = 1 << 20;
  if (spec_text.size() > kMaxSpecBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the spec of job ", job_id, " has ",
                                                   spec_text.size(), " bytes, the limit is ",
                                                   kMaxSpecBytes));
  }
  absl::StatusOr<JobSpec> spec = ParseJobSpec(spec_text);
  if (!spec.ok()) return WithContext(spec.status(), absl::StrCat("job ", job_id));
  return spec;
}

absl::StatusOr<JobServer*> ServerNode::Learn(uint64_t job_id, const JobSpec& spec,
                                             const std::string& spec_text) {
  absl::StatusOr<ServerOptions> options = options_.learning.options_for(spec, job_id);
  if (!options.ok()) return WithContext(options.status(), absl::StrCat("job ", job_id));
  options->job_id = job_id;
  options->await_registration = false;  // the jobs served meanwhile go on
  absl::StatusOr<std::unique_ptr<JobServer>> server =
      JobServer::Create(*options, &endpoints_, context_);
  if (!server.ok()) return WithContext(server.status(), absl::StrCat("job ", job_id));
  jobs_.push_back(*std::move(server));
  if (process_.rank == 0) {
    learned_specs_[job_id] = spec_text;
    for (const auto& [member, rank] : group_members_) Announce(member, job_id, spec_text);
  }
  return jobs_.back().get();
}

void ServerNode::Announce(const std::string& member, uint64_t job_id,
                          const std::string& spec_text) {
  OutgoingMessage m(wire::Kind::NEW_JOB);
  m.header().setJobId(job_id);
  m.header().setSenderRole(wire::Role::SERVER);
  m.header().setSenderRank(process_.rank);
  m.header().setJobSpec(spec_text);
  if (absl::StatusOr<size_t> sent = endpoints_.Reply(member, m); !sent.ok()) {
    LogWarning("could not tell server %d of job %llu: %s", group_members_[member],
               static_cast<unsigned long long>(job_id),
               std::string(sent.status().message()).c_str());
  }
}

void ServerNode::HandleGroupMessage(const IncomingMessage& message) {
  const auto h = message.header();
  const bool from_server = h.getSenderRole() == wire::Role::SERVER && h.getSenderRank() > 0;
  if (process_.rank != 0 || TypeOf(h) != wire::Kind::HELLO || !from_server) {
    Refuse(message.identity(), h.getRequestId(), 0,
           absl::PermissionDeniedError(absl::StrCat(
               KindName(TypeOf(h)), " from ", DescribePeer(h.getSenderRole(), h.getSenderRank()),
               " under job id ", kServerGroupJobId,
               ", which only the other servers' hellos to server 0 may use")));
    return;
  }
  absl::StatusOr<Peer> peer = group_admission_.Admit(message);
  if (!peer.ok()) {
    Refuse(message.identity(), h.getRequestId(), 0, peer.status());
    return;
  }
  OutgoingMessage ack(wire::Kind::HELLO_ACK);
  ack.header().setJobId(kServerGroupJobId);
  ack.header().setRequestId(h.getRequestId());
  ack.header().setSenderRole(wire::Role::SERVER);
  ack.header().setSenderRank(process_.rank);
  (void)endpoints_.Reply(message.identity(), ack);
  group_members_[message.identity()] = peer->rank;
  LogInfo("server %d joined the group; telling it %zu job(s) learned", peer->rank,
          learned_specs_.size());
  for (const auto& [job_id, spec] : learned_specs_) Announce(message.identity(), job_id, spec);
}

absl::Status ServerNode::ServeGroupLink() {
  if (group_link_ == nullptr) return absl::OkStatus();
  while (true) {
    absl::StatusOr<RawMessage> raw = group_link_->ReceiveNow();
    if (!raw.ok()) break;
    absl::StatusOr<IncomingMessage> message = Decode(*std::move(raw), process_.limits);
    if (!message.ok()) continue;
    const auto h = message->header();
    if (TypeOf(h) == wire::Kind::ERROR) {
      return WithContext(ErrorFromHeader(h),
                         absl::StrCat("server 0 (", process_.coordinator, ") refused server ",
                                      process_.rank, " into its group"));
    }
    if (TypeOf(h) == wire::Kind::NEW_JOB) {
      announced_[h.getJobId()] = std::string(h.getJobSpec().cStr(), h.getJobSpec().size());
    }
  }
  // A job id still in use here is learned once that job has ended.
  for (auto it = announced_.begin(); it != announced_.end();) {
    if (JobFor(it->first) != nullptr) {
      ++it;
      continue;
    }
    absl::StatusOr<JobSpec> spec = ParseSpec(it->first, it->second);
    absl::StatusOr<JobServer*> job =
        spec.ok() ? Learn(it->first, *spec, it->second) : spec.status();
    if (job.ok()) {
      LogInfo("learned job %llu from server 0", static_cast<unsigned long long>(it->first));
    } else {
      LogWarning("cannot serve job %llu that server 0 announced: %s",
                 static_cast<unsigned long long>(it->first),
                 std::string(job.status().message()).c_str());
    }
    it = announced_.erase(it);
  }
  return absl::OkStatus();
}

absl::Status ServerNode::ServeOnce(absl::Duration timeout) {
  STRATA_ASSIGN_OR_RETURN(EndpointEvents events,
                          PollEndpoints(endpoints_.all, timeout, kMaxMessagesPerPoll));
  for (RawMessage& raw : events.messages) HandleRaw(std::move(raw));
  for (const auto& [identity, status] : events.refused) Refuse(identity, 0, 0, status);
  for (const std::string& identity : events.closed) {
    for (const auto& job : jobs_) job->ForgetPeer(identity);
  }
  return absl::OkStatus();
}

void ServerNode::EndJob(size_t index, const absl::Status& status) {
  JobServer& job = *jobs_[index];
  absl::Status s = status.ok() ? job.Finish() : status;
  if (!s.ok()) {
    if (options_.jobs.size() > 1 || learning()) {
      s = WithContext(s, absl::StrCat("job ", job.job_id()));
      LogWarning("%s (the other jobs go on)", std::string(s.message()).c_str());
    }
    if (first_error_.ok()) first_error_ = s;
  }
  learned_specs_.erase(job.job_id());
  jobs_.erase(jobs_.begin() + static_cast<std::ptrdiff_t>(index));
  ++jobs_ended_;
}

void ServerNode::EndJobsThatAreOver() {
  for (size_t i = jobs_.size(); i-- > 0;) {
    absl::StatusOr<bool> finished = jobs_[i]->Finished();
    if (!finished.ok() || *finished) EndJob(i, finished.status());
  }
}

absl::Status ServerNode::Run() {
  while (true) {
    EndJobsThatAreOver();
    if (options_.stop != nullptr && options_.stop->load()) {
      if (!jobs_.empty()) LogWarning("stopped while serving jobs %s", JobIds().c_str());
      break;
    }
    if (jobs_.empty()) {
      if (!learning()) break;
      if (!options_.learning.serve_forever && jobs_ended_ > 0) break;
    }
    STRATA_RETURN_IF_ERROR(ServeOnce(absl::Milliseconds(200)));
    STRATA_RETURN_IF_ERROR(ServeGroupLink());
    const absl::Time now = MonotonicNow();
    for (size_t i = jobs_.size(); i-- > 0;) {
      absl::Status s = jobs_[i]->Tick(now);
      if (!s.ok()) EndJob(i, s);
    }
  }
  return first_error_;
}

}  // namespace strata
