// JobServer: one job's part of a parameter-server process: its shard of
// the job's parameters (a ParameterStore over its partition plan), its
// optimizer and consistency rule, its registered connections, its pending
// pulls, its checkpoints and, on rank 0, the job's Coordinator. The process
// (ServerNode, server/server_node.h) owns the endpoints and hands each
// job the requests that carry its job id; a job's errors stay its own.
//
// Every connection registers first with a HELLO carrying the job token and
// the job's identity (core/net/admission.h); requests from a connection
// that did not, or that claim another sender, are refused, and each role
// may send only its own kinds (SHUTDOWN: a launcher or tool). Every request
// is checked before it touches state (sender rank, slices against the
// partition plan, frame sizes); a bad one gets an error reply naming the
// problem and a log line, and the server keeps serving. A request is
// applied whole or not at all.
//
// A worker that stops before finishing (the coordinator declares it dead
// when its heartbeats fall silent, or it says LEAVE with its error) fails,
// on every server, the pulls that wait for its iterations (those of the
// keys it pushes), naming it and why it stopped; later such pulls are
// refused at once, and so is everything the stopped worker itself sends.
// Under ASP the servers stop waiting for its DONE. A job whose unfinished
// workers have all stopped ends with an error instead of waiting for ever.
//
// Thread safety: the process's serving thread drives it.
#ifndef STRATA_SERVER_JOB_SERVER_H_
#define STRATA_SERVER_JOB_SERVER_H_

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/model/job_config.h"
#include "core/net/admission.h"
#include "core/net/membership.h"
#include "core/net/message_endpoint.h"
#include "core/net/partition_plan.h"
#include "core/net/service_router.h"
#include "core/net/traffic.h"
#include "core/net/transport.h"
#include "core/train/checkpoint_epochs.h"
#include "server/coordinator.h"
#include "server/parameter_store.h"
#include "server/shared_memory_peers.h"

namespace strata {

// One job's options for a server process. In a process that serves several
// jobs, rank, coordinator, serving, limits, ready_file and decorate_endpoint
// are the process's: the first job's count (server/server_node.h).
struct ServerOptions {
  int rank = 0;
  // Rank 0 binds this address; other ranks connect to it to register.
  std::string coordinator;
  // Where this server binds and what it advertises
  // (core/net/serving_address.h). An empty bind is the role's default:
  // rank 0 binds the coordinator address, other ranks tcp://127.0.0.1:0.
  // Rank 0 advertises the coordinator's host unless told another.
  ServingAddress serving{""};
  JobConfig config;
  // Plain key-value mode (benchmarks, generic use): these parameter sizes
  // instead of the model's; config.optimizer still applies, the schedule is
  // constant. Empty = the model of `config`.
  std::vector<int64_t> kv_sizes;
  int servers = 1;
  int workers = 1;     // conv workers
  int fc_workers = 0;  // stanza: FC workers that register with the coordinator
  // "ps" or "stanza": which of the model's keys the servers hold and who
  // pushes them (core/model/server_keys.h).
  std::string mode = "ps";
  uint64_t job_id = 1;
  // The job token every connection must present ("" = an open cluster).
  std::string job_token;
  // The admin token a tool presents to shut the job down or change its
  // knobs ("" = none: then only an open cluster takes those from tools).
  std::string admin_token;
  Consistency consistency = Consistency::kBsp;
  int staleness = 2;
  int64_t chunk_elements = kDefaultChunkElements;
  std::string ready_file;  // written once serving (core/util/ready_file.h); "" = none
  // Checkpoints every `checkpoint_every` iterations (written off the event
  // loop): coordinated epochs in `checkpoint_dir` (this shard's part of
  // each, core/train/checkpoint_epochs.h; rank 0 completes an epoch once
  // every part is written, keeping the newest `keep_checkpoints`), or this
  // shard alone in the file `checkpoint_path`, which is also written at
  // the end. Neither: no checkpoints.
  std::string checkpoint_dir;
  int keep_checkpoints = 3;
  std::string checkpoint_path;
  int64_t checkpoint_every = 0;
  // Start from checkpoint_path, or from a coordinated epoch in
  // checkpoint_dir: rank 0 chooses the newest that every part of verifies
  // (core/train/checkpoint_epochs.h), every other server restores its part
  // of that one, as the coordinator's answer to its hello says, or fails
  // naming the part.
  bool restore = false;
  absl::Duration dead_after = absl::Seconds(10);
  // Rank 0: iterations a knob lease reaches ahead (server/knob_board.h): a
  // requested change takes effect within about this many iterations.
  int64_t knob_lead = 8;
  // Rank 0: where the coordinator records each node it declares dead
  // (core/train/lost_nodes.h); "" = nowhere.
  std::string lost_nodes_out;
  absl::Duration heartbeat_every = absl::Seconds(1);
  // Ranks > 0: whether Create waits for the coordinator to answer our
  // hello (a refusal fails Create), and how long; else a refusal fails the
  // job's Tick.
  bool await_registration = true;
  // Rank 0: how long the job's nodes may take to register before the job
  // fails naming who is missing (a job learned from a worker whose peers
  // never come must not hold its id for ever).
  absl::Duration assemble_within = absl::InfiniteDuration();
  absl::Duration register_timeout = absl::Seconds(60);
  WireLimits limits;
  // Wraps each endpoint the server serves on (its ROUTER socket and its
  // shared-memory lane hub; core/net/message_endpoint.h); unset: none.
  EndpointDecorator decorate_endpoint;
};

// The endpoints of a server process, polled together: the ROUTER socket
// (where the coordinator listens on rank 0) and, where this host has them,
// the shared-memory lanes.
struct ServingEndpoints {
  MessageEndpoint* socket = nullptr;
  MessageEndpoint* lanes = nullptr;  // null when lanes are unavailable here
  // Lanes first: a reply goes through the first that serves its identity.
  std::vector<MessageEndpoint*> all;
  // Sends `message` to `identity` through the first endpoint that serves it.
  absl::StatusOr<size_t> Reply(const std::string& identity, OutgoingMessage& message) const;
};

class JobServer {
 public:
  // Builds the job's shard (restoring it with options.restore) on the
  // process's endpoints; rank 0 starts the job's coordinator, other ranks
  // register with theirs, waiting for its hello's answer.
  static absl::StatusOr<std::unique_ptr<JobServer>> Create(const ServerOptions& options,
                                                           const ServingEndpoints* endpoints,
                                                           zmq::context_t& context);
  ~JobServer();

  uint64_t job_id() const { return options_.job_id; }
  const ServerOptions& options() const { return options_; }
  const ParameterStore& store() const { return *store_; }

  // A decoded request of this job; `bytes` as received. A request that
  // fails gets an error reply naming why.
  void HandleRequest(const IncomingMessage& message, uint64_t bytes);
  // Counts an undecodable message of this job and answers it with `why`.
  void Refuse(const std::string& identity, uint64_t request_id, uint64_t bytes,
              const absl::Status& why);
  // A peer connection that closed (a lane): its region and its pulls still
  // waiting go.
  void ForgetPeer(const std::string& identity);
  // The job's work between polls: dead nodes and checkpoint epochs (rank
  // 0), the coordinator link and heartbeats (other ranks).
  absl::Status Tick(absl::Time now);
  // Whether the job is over here: every worker sent DONE (and, on rank 0
  // with coordinated checkpoints, the epoch of the last iteration, when it
  // is one, is complete), or a SHUTDOWN came. Unavailable when every
  // unfinished worker is dead; DataLoss when the final epoch could not be
  // completed in time, naming the parts missing.
  absl::StatusOr<bool> Finished() const;
  // The final checkpoint (with checkpointing on), the traffic report and the
  // finished line.
  absl::Status Finish();

 private:
  struct PendingPull {
    std::string identity;
    uint64_t request_id;
    int64_t iteration;
    std::vector<Chunk> chunks;
    int sender;
    SharedMemoryPeers::Placement placement;  // where the values go (no region: frames)
    wire::DataType data_type;                // what the frames carry (core/net/wire_format.h)
  };
  JobServer(const ServerOptions& options, const ServingEndpoints* endpoints,
            zmq::context_t& context);
  // HELLO and REGISTER to the coordinator (ranks > 0); the first time,
  // waiting for the hello's answer, so a refusal fails Create.
  absl::StatusOr<HelloAnswer> Register(bool wait_for_hello);
  // Loads the shard of `path` (a checkpoint taken at iteration `epoch`
  // when known, else -1).
  absl::Status RestoreShard(const std::string& path, int64_t epoch);
  bool AllWorkersDone() const;
  // Rank 0, once every worker is done: completes the epoch of the last
  // iteration when it is one (every server's part on disk, every FC
  // worker's reported), or gives up naming what is missing once
  // `dead_after` has passed.
  void SettleFinalEpoch(absl::Time now);
  absl::Status Handle(const IncomingMessage& message);
  absl::Status HandleHello(const IncomingMessage& message);
  // The services this server answers once a message's sender is admitted:
  // the control vocabulary, the parameter-server service and, on the
  // coordinator, the knob service (core/net/service_router.h).
  void AddServices();
  absl::Status HandleControl(const IncomingMessage& message, const Peer& peer);
  absl::Status HandleParameters(const IncomingMessage& message);
  static absl::Status NotAccepted(const IncomingMessage& message);
  // Whether `peer` may send `kind` (on `identity`).
  absl::Status CheckAllowed(const Peer& peer, MessageType kind, const std::string& identity) const;
  // What a worker that stopped before finishing means here (see above);
  // `why` completes "worker 1 ..." ("stopped sending heartbeats").
  void OnWorkerStopped(const Peer& peer, const std::string& why);
  struct WorkerState;
  // A stopped, unfinished worker that pushes one of `chunks`, or null.
  const WorkerState* StoppedPusherOf(const std::vector<Chunk>& chunks) const;
  static absl::Status StoppedPusherError(const WorkerState& pusher);
  // Reads what the coordinator sends a server of rank > 0: dead-node
  // notices, and refusals (a restarted coordinator that does not know us:
  // register again; anything else fails Run).
  absl::Status ServeCoordinatorLink();
  // After --restore: Aborted for a conv worker's push or pull by iteration
  // until it has pulled the current values (iteration -1).
  absl::Status CheckRejoined(const wire::Header::Reader& request);
  // The chunks a request names, checked against the plan, and where their
  // floats lie (slots named and checked, or data frames when `with_frames`).
  struct ResolvedSlices {
    std::vector<Chunk> chunks;
    SharedMemoryPeers::Placement placement;
  };
  absl::StatusOr<ResolvedSlices> ResolveSlices(const IncomingMessage& message,
                                               bool with_frames) const;
  absl::Status HandleInit(const IncomingMessage& message);
  absl::Status HandlePush(const IncomingMessage& message);
  // A push's floats for slice `i`: from its slot or frame, widened from
  // bf16 into widened_ when that is what the frame carries.
  const float* PushedValues(const IncomingMessage& message, const ResolvedSlices& slices, size_t i);
  absl::Status HandlePull(const IncomingMessage& message);
  absl::Status HandleShmAttach(const IncomingMessage& message);
  // A worker's last word (DONE, LEAVE): its connection is forgotten and
  // the message acknowledged.
  absl::Status ForgetAndAcknowledge(const IncomingMessage& message);
  void ServePending();
  // Sends on the request's path (ServingEndpoints::Reply) with this job's
  // id and our rank. A reply to a peer that is gone is dropped (OK); one to
  // a peer whose queue is full fails.
  absl::Status Reply(const std::string& identity, OutgoingMessage& reply);
  void SendPull(const PendingPull& pull);
  void SendError(const std::string& identity, uint64_t request_id, const absl::Status& status);
  void MaybeCheckpoint();
  // Rank 0: completes the newest epoch every part of which is written.
  void MaybeCompleteEpoch();
  // Rank 0: writes the manifest of `last` and of every epoch since the last
  // complete one whose parts are all there, then prunes; false (logged)
  // when `last`'s could not be written, or this process's generation has
  // been taken over.
  bool CompleteEpochsUpTo(int64_t last);
  // Rank 0: writes the manifest of `epoch` unless a part of it was reported
  // failed or a part a complete epoch had is missing (DataLoss, naming
  // them), or the generation was taken over (FailedPrecondition).
  absl::StatusOr<CheckpointEpoch> CompleteOneEpoch(int64_t epoch);
  // The writer's failed parts, to the coordinator (rank 0) or in the
  // heartbeats (other ranks).
  void ReportCheckpointFailures();
  // Ranks > 0: a heartbeat saying our newest part written and the last
  // part that failed.
  void FillOwnHeartbeat(wire::Header::Builder h) const;
  // Ranks > 0, on the way out: the newest part written (or failed), which
  // the coordinator settles the final epoch with, said until the
  // coordinator confirms it or its wait for it (dead_after) is over.
  void SendLastReport();
  // BSP: logs whether every chunk took exactly one update per iteration
  // since the start (or the restored iteration).
  void LogUpdateCount() const;
  void FailPendingPulls(const absl::Status& status);

  ServerOptions options_;
  const ServingEndpoints* endpoints_;
  zmq::context_t& context_;
  Admission admission_;
  std::unique_ptr<Socket> coordinator_link_;  // ranks > 0
  std::unique_ptr<Coordinator> coordinator_;  // rank 0
  ServiceRouter<const Peer&> services_{"a server"};
  PartitionPlan plan_;
  std::unique_ptr<ParameterStore> store_;
  std::deque<PendingPull> pending_;
  std::vector<float> widened_;  // a bf16 push's slice, as floats
  SharedMemoryPeers shared_memory_;
  // Every conv and FC worker of the job: whether it said DONE, and whether
  // it stopped before that (see above).
  struct WorkerState {
    Peer peer;
    bool done = false;
    bool stopped = false;
    std::string why_stopped;  // "stopped sending heartbeats", "stopped: ..."
  };
  std::vector<WorkerState> workers_;
  WorkerState* FindWorker(const Peer& peer);
  // After --restore, a worker must pull the current values (iteration -1)
  // before it may push or pull by iteration again: its own state is ahead
  // of the restored shard.
  bool restored_ = false;
  int64_t restored_version_ = 0;
  std::vector<bool> rejoined_;
  bool shutdown_ = false;
  int64_t last_checkpoint_version_ = 0;
  std::unique_ptr<CheckpointWriter> checkpoints_;  // null: no checkpoints
  // Rank 0: the newest epoch completed, the newest every process had
  // written when last asked (each is tried once), and the parts a
  // complete epoch of this job has (empty until one completed).
  int64_t last_complete_epoch_ = -1;
  int64_t last_agreed_epoch_ = -1;
  std::set<std::string> epoch_parts_;
  // Rank 0 with checkpoint_dir: this start's generation of the directory,
  // and whether a newer start has taken it over (then no manifest is
  // written and nothing pruned).
  RunStamp stamp_;
  bool taken_over_ = false;
  int64_t restore_epoch_ = -1;  // rank 0: the epoch every process restores; -1: none
  // Rank 0: the final epoch: when the last worker finished, and how it
  // settled (unset: not yet).
  absl::Time all_done_at_ = absl::InfiniteFuture();
  std::optional<absl::Status> final_epoch_;
  CheckpointReport failure_to_report_;               // ranks > 0: the latest part that failed
  std::map<int64_t, int64_t> updates_by_iteration_;  // chunk updates applied
  uint64_t errors_sent_ = 0;
  uint64_t replies_dropped_ = 0;  // to peers gone or not reading
  absl::Time created_;            // when Create built it
  absl::Time next_heartbeat_;     // ranks > 0
  absl::Time last_registration_;  // ranks > 0: our last REGISTER
  TrafficReport traffic_;
  PeerKind current_peer_ = PeerKind::kConv;  // the peer of the message being handled
};

// The rules of a job's server keys (core/model/server_keys.h) in `mode`
// with `fc_workers` FC workers, and their sizes.
struct JobKeys {
  std::vector<int64_t> sizes;
  std::vector<KeyRule> rules;
};
absl::StatusOr<JobKeys> KeysOfJob(const JobConfig& config, const std::string& mode, int fc_workers);

}  // namespace strata

#endif  // STRATA_SERVER_JOB_SERVER_H_
