// ServerNode: one parameter-server process. It binds a ROUTER socket (and
// listens for shared-memory lanes from workers on its host), polls both,
// and hands each request to the JobServer (server/job_server.h) of the job
// whose id it carries: the job's shard, its consistency rule, its
// connections, its checkpoints and, on rank 0, its coordinator. One process
// may serve several jobs, each with its own key space and rules; a job's
// errors never reach another, and a job that ends (or fails) leaves the
// others serving. With one job, every request goes to it, so one naming
// another job is refused by that job's admission.
//
// A message that cannot be decoded belongs to no job; it gets an error
// reply naming what was wrong. So does a request for a job this process
// does not serve.
//
//   auto node = ServerNode::Create({job_a, job_b});  // binds, restores, registers
//   STRATA_RETURN_IF_ERROR((*node)->Run());          // until every job is over
#ifndef STRATA_SERVER_SERVER_NODE_H_
#define STRATA_SERVER_SERVER_NODE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/net/message_endpoint.h"
#include "core/net/transport.h"
#include "server/job_server.h"

namespace strata {

class ServerNode {
 public:
  // The jobs served, each with its own options; the process-wide ones
  // (rank, where to bind, the coordinator address of rank 0, wire limits,
  // the ready file, the endpoint decorator) are the first job's, and every
  // job must agree on rank and coordinator. InvalidArgument for no job or
  // two jobs with one id.
  static absl::StatusOr<std::unique_ptr<ServerNode>> Create(std::vector<ServerOptions> jobs);
  static absl::StatusOr<std::unique_ptr<ServerNode>> Create(const ServerOptions& job) {
    return Create(std::vector<ServerOptions>{job});
  }
  ~ServerNode();
  // The address this server serves on.
  const std::string& address() const { return endpoints_.socket->address(); }
  // Serves until every job is over here (each worker sent DONE, or a
  // SHUTDOWN for that job came). The first job error, naming the job when
  // there are several; the other jobs were served to their end.
  absl::Status Run();

  const JobServer& job(size_t i) const { return *jobs_[i]; }

 private:
  explicit ServerNode(const ServerOptions& process) : process_(process) {}
  // The job a decoded request belongs to, or null.
  JobServer* JobFor(uint64_t job_id);
  void HandleRaw(RawMessage raw);
  // Answers a message that could not be given to a job: with one job, as
  // that job's refusal (its traffic counts `bytes`); else as no job's.
  void Refuse(const std::string& identity, uint64_t request_id, uint64_t bytes,
              const absl::Status& why);
  // Waits up to `timeout` for requests on every endpoint, and handles them.
  absl::Status ServeOnce(absl::Duration timeout);
  std::string JobIds() const;

  const ServerOptions process_;  // the process-wide options (the first job's)
  zmq::context_t context_{2};    // two I/O threads: one per busy connection on 2 cores
  std::unique_ptr<MessageEndpoint> socket_;
  std::unique_ptr<MessageEndpoint> lanes_;  // null when lanes are unavailable here
  ServingEndpoints endpoints_;
  std::vector<std::unique_ptr<JobServer>> jobs_;
};

}  // namespace strata

#endif  // STRATA_SERVER_SERVER_NODE_H_
