// ServerNode: one parameter-server process. It binds a ROUTER socket (and
// listens for shared-memory lanes from workers on its host), polls both,
// and hands each request to the JobServer (server/job_server.h) of the job
// whose id it carries: the job's shard, its consistency rule, its
// connections, its checkpoints and, on rank 0, its coordinator. One process
// may serve several jobs, each with its own key space and rules; a job's
// errors never reach another, and a job that ends (or fails) leaves the
// others serving. With one job and no learning, every request goes to it,
// so one naming another job is refused by that job's admission.
//
// Learning jobs: a server group started without a job's config can learn
// it. A worker offers its job's spec (core/model/job_spec.h) in its hello;
// server 0, seeing a hello with a valid token for a job id it does not
// serve, checks that the spec's identity is the hello's, turns the spec
// into the job's options (JobLearning::options_for: the process's rules,
// the job's config and layout) and starts serving it. The other servers of
// the group say hello to server 0 under job id 0 (kServerGroupJobId) when
// they start; server 0 tells each of them every job it learns (NEW_JOB,
// also those learned before they came), and each registers with that
// job's coordinator without blocking the jobs it already serves. A job id
// is free again once its job has ended on this process. A learning
// process exits when the last job it served ends, or, with serve_forever,
// only when `stop` is set.
//
// A message that cannot be decoded belongs to no job; it gets an error
// reply naming what was wrong. So does a request for a job this process
// does not serve (and cannot learn).
//
//   auto node = ServerNode::Create({job_a, job_b});  // binds, restores, registers
//   STRATA_RETURN_IF_ERROR((*node)->Run());          // until every job is over
#ifndef STRATA_SERVER_SERVER_NODE_H_
#define STRATA_SERVER_SERVER_NODE_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/model/job_spec.h"
#include "core/net/admission.h"
#include "core/net/message_endpoint.h"
#include "core/net/transport.h"
#include "server/job_server.h"

namespace strata {

// The job id of the server group's own messages (servers saying hello to
// server 0, NEW_JOB); no job may have it.
inline constexpr uint64_t kServerGroupJobId = 0;

// How a server process takes jobs beyond those it was started with.
struct JobLearning {
  // The options of job `job_id` of `spec`; unset: learn no jobs. Errors
  // refuse the hello that offered the spec, naming why.
  std::function<absl::StatusOr<ServerOptions>(const JobSpec& spec, uint64_t job_id)> options_for;
  // Stay when every job is over, until ServerNodeOptions::stop.
  bool serve_forever = false;
};

struct ServerNodeOptions {
  // The process-wide options: rank, where to bind, the coordinator address
  // (rank 0 binds it), the token that admits servers and learned jobs,
  // wire limits, the ready file and the endpoint decorator.
  ServerOptions process;
  // The jobs served from the start; each must agree with `process` on rank
  // and coordinator.
  std::vector<ServerOptions> jobs;
  JobLearning learning;
  // Run returns soon after this becomes true (a signal handler sets it);
  // null: never.
  const std::atomic<bool>* stop = nullptr;
};

class ServerNode {
 public:
  // Binds, restores and registers the jobs given. InvalidArgument for no
  // job and no learning, two jobs with one id, or a job with id 0.
  static absl::StatusOr<std::unique_ptr<ServerNode>> Create(ServerNodeOptions options);
  // The jobs given, the process-wide options being the first job's.
  static absl::StatusOr<std::unique_ptr<ServerNode>> Create(std::vector<ServerOptions> jobs);
  static absl::StatusOr<std::unique_ptr<ServerNode>> Create(const ServerOptions& job) {
    return Create(std::vector<ServerOptions>{job});
  }
  ~ServerNode();
  // The address this server serves on.
  const std::string& address() const { return endpoints_.socket->address(); }
  // Serves until every job is over here (each worker sent DONE, or a
  // SHUTDOWN for that job came) and, when learning, at least one was
  // served (with serve_forever: until stop). The first job error, naming
  // the job when there are several; the other jobs were served to their
  // end.
  absl::Status Run();

 private:
  explicit ServerNode(ServerNodeOptions options);
  bool learning() const { return static_cast<bool>(options_.learning.options_for); }
  // The job a decoded request belongs to, or null.
  JobServer* JobFor(uint64_t job_id);
  void HandleRaw(RawMessage raw);
  // Answers a message that could not be given to a job: with one job and
  // no learning, as that job's refusal (its traffic counts `bytes`); else
  // as no job's.
  void Refuse(const std::string& identity, uint64_t request_id, uint64_t bytes,
              const absl::Status& why);
  // Waits up to `timeout` for requests on every endpoint, and handles them.
  absl::Status ServeOnce(absl::Duration timeout);
  std::string JobIds() const;

  // Learning (see above). The spec in `spec_text` of job `job_id`, its
  // size bounded; errors name the job.
  static absl::StatusOr<JobSpec> ParseSpec(uint64_t job_id, const std::string& spec_text);
  // Starts serving job `job_id` of `spec` (whose text is `spec_text`); on
  // rank 0, tells the group's other servers.
  absl::StatusOr<JobServer*> Learn(uint64_t job_id, const JobSpec& spec,
                                   const std::string& spec_text);
  // A hello for a job this process does not serve that offers a spec: the
  // token and the spec's identity checked, the job learned.
  absl::StatusOr<JobServer*> LearnFromHello(const IncomingMessage& hello);
  // Rank 0: a group member's hello (admitted and answered, then told every
  // job learned so far) or anything else under job id 0 (refused).
  void HandleGroupMessage(const IncomingMessage& message);
  void Announce(const std::string& member, uint64_t job_id, const std::string& spec_text);
  // Ranks > 0: server 0's answers and NEW_JOBs on the group link, and the
  // jobs announced whose id is free here, learned.
  absl::Status ServeGroupLink();
  // Ends each job that is over (Finished), recording its error.
  void EndJobsThatAreOver();
  void EndJob(size_t index, const absl::Status& status);

  const ServerNodeOptions options_;
  const ServerOptions& process_;  // options_.process
  zmq::context_t context_{2};     // two I/O threads: one per busy connection on 2 cores
  std::unique_ptr<MessageEndpoint> socket_;
  std::unique_ptr<MessageEndpoint> lanes_;  // null when lanes are unavailable here
  ServingEndpoints endpoints_;
  std::vector<std::unique_ptr<JobServer>> jobs_;  // those not yet over
  int jobs_ended_ = 0;
  absl::Status first_error_;
  // Learning: the token's check, the members (rank 0: by connection, their
  // rank), the learned jobs' specs by id (rank 0: to tell late members),
  // the link to server 0 and the announced jobs not yet learned (ranks > 0).
  Admission group_admission_;
  std::map<std::string, int> group_members_;
  std::map<uint64_t, std::string> learned_specs_;
  std::unique_ptr<Socket> group_link_;
  std::map<uint64_t, std::string> announced_;
};

}  // namespace strata

#endif  // STRATA_SERVER_SERVER_NODE_H_
