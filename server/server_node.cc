#include "server/server_node.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/log.h"
#include "core/util/ready_file.h"
#include "server/lane_hub.h"

namespace strata {
namespace {

// Requests read from the socket, and from each lane, per poll.
constexpr int kMaxMessagesPerPoll = 256;

}  // namespace

ServerNode::~ServerNode() = default;

absl::StatusOr<std::unique_ptr<ServerNode>> ServerNode::Create(std::vector<ServerOptions> jobs) {
  if (jobs.empty()) return absl::InvalidArgumentError("a server needs at least one job");
  std::set<uint64_t> ids;
  for (const ServerOptions& job : jobs) {
    if (!ids.insert(job.job_id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("two jobs with id ", job.job_id, ": every job needs an id of its own"));
    }
    if (job.rank != jobs[0].rank || job.coordinator != jobs[0].coordinator) {
      return absl::InvalidArgumentError(
          absl::StrCat("job ", job.job_id, " names server ", job.rank, " of ", job.coordinator,
                       ", job ", jobs[0].job_id, " server ", jobs[0].rank, " of ",
                       jobs[0].coordinator, ": one process is one server rank of one coordinator"));
    }
  }
  const ServerOptions& process = jobs[0];
  if (process.coordinator.empty()) return absl::InvalidArgumentError("--coordinator is required");
  std::unique_ptr<ServerNode> node(new ServerNode(process));
  const std::string bind = process.rank == 0 ? process.coordinator : process.bind;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ZmqEndpoint> socket,
                          ZmqEndpoint::Bind(node->context_, bind, process.limits));
  node->socket_ = Decorated(std::move(socket), process.decorate_endpoint);
  absl::StatusOr<std::unique_ptr<LaneHub>> lanes =
      LaneHub::Listen(absl::StrCat("server ", process.rank), node->socket_->address());
  if (lanes.ok()) {
    node->lanes_ = Decorated(*std::move(lanes), process.decorate_endpoint);
    node->endpoints_.all.push_back(node->lanes_.get());
  } else {
    LogInfo("no shared memory lanes (%s); workers use the socket",
            std::string(lanes.status().message()).c_str());
  }
  node->endpoints_.socket = node->socket_.get();
  node->endpoints_.lanes = node->lanes_.get();
  node->endpoints_.all.push_back(node->socket_.get());
  for (const ServerOptions& job : jobs) {
    absl::StatusOr<std::unique_ptr<JobServer>> server =
        JobServer::Create(job, &node->endpoints_, node->context_);
    if (!server.ok() && jobs.size() > 1) {
      return WithContext(server.status(), absl::StrCat("job ", job.job_id));
    }
    STRATA_RETURN_IF_ERROR(server.status());
    node->jobs_.push_back(*std::move(server));
  }
  STRATA_RETURN_IF_ERROR_CTX(
      WriteReadyFile(process.ready_file,
                     {{"role", "server"},
                      {"rank", process.rank},
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
  if (jobs_.size() == 1) return jobs_[0].get();  // its admission names a wrong id
  for (const auto& job : jobs_) {
    if (job->job_id() == job_id) return job.get();
  }
  return nullptr;
}

void ServerNode::Refuse(const std::string& identity, uint64_t request_id, uint64_t bytes,
                        const absl::Status& why) {
  if (jobs_.size() == 1) {  // everything is that job's, its traffic too
    jobs_[0]->Refuse(identity, request_id, bytes, why);
    return;
  }
  LogWarning("refused a request: %s", std::string(why.message()).c_str());
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
  JobServer* job = JobFor(message->header().getJobId());
  if (job == nullptr) {
    Refuse(identity, request_id, bytes,
           absl::PermissionDeniedError(absl::StrCat("unknown job id ", message->header().getJobId(),
                                                    " (server ", process_.rank, " serves jobs ",
                                                    JobIds(), ")")));
    return;
  }
  job->HandleRequest(*message, bytes);
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

absl::Status ServerNode::Run() {
  std::vector<bool> over(jobs_.size(), false);
  absl::Status first_error;
  auto end_job = [&](size_t i, const absl::Status& status) {
    over[i] = true;
    absl::Status s = status.ok() ? jobs_[i]->Finish() : status;
    if (s.ok()) return;
    if (jobs_.size() > 1) {
      s = WithContext(s, absl::StrCat("job ", jobs_[i]->job_id()));
      LogWarning("%s (the other jobs go on)", std::string(s.message()).c_str());
    }
    if (first_error.ok()) first_error = s;
  };
  while (true) {
    bool all_over = true;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      if (over[i]) continue;
      absl::StatusOr<bool> finished = jobs_[i]->Finished();
      if (!finished.ok() || *finished) {
        end_job(i, finished.status());
        continue;
      }
      all_over = false;
    }
    if (all_over) break;
    STRATA_RETURN_IF_ERROR(ServeOnce(absl::Milliseconds(200)));
    const absl::Time now = MonotonicNow();
    for (size_t i = 0; i < jobs_.size(); ++i) {
      if (over[i]) continue;
      absl::Status s = jobs_[i]->Tick(now);
      if (!s.ok()) end_job(i, s);
    }
  }
  return first_error;
}

}  // namespace strata
