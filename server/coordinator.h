// Coordinator: registration, rank assignment, the cluster map, barriers,
// heartbeats and dead-node detection. It lives in server rank 0's process
// and shares its ROUTER endpoint: ServerNode hands it the messages of those
// kinds.
//
// Bootstrap: every node sends REGISTER (role, requested rank, serving
// address). Servers and FC workers bring their rank; conv workers get the
// lowest free rank unless they ask for one. When the expected numbers of
// servers, conv workers and FC workers have registered, every node receives
// the CLUSTER_MAP: the servers' and FC workers' addresses by rank, and its
// own rank. A node that registers again (a restarted process) gets the map
// at once. Every node says HELLO on its connection first (the server node
// checks that, core/net/admission.h); a node registers only as the role and
// rank its connection was admitted as, and a conv worker admitted without a
// rank gets the one assigned here bound to its connection.
//
// Knobs: KNOB_LEASE (from the job's workers), KNOB_SET (from a tool, the
// launcher or a worker's controller) and KNOB_GET (from any admitted
// connection) are answered from the job's KnobBoard (server/knob_board.h).
//
// Dead nodes: a node silent for `dead_after` is reported once by
// CheckLiveness, and every other server is told (NODE_DEAD), so each can
// fail the pulls that wait for it. Death is final: a node that sends
// heartbeats again stays dead: the job goes on without it or stops, as the
// launcher's --lost-conv-worker says (tools/launch/local_cluster.h), and
// a restarted job starts from a checkpoint epoch.
#ifndef STRATA_SERVER_COORDINATOR_H_
#define STRATA_SERVER_COORDINATOR_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/net/admission.h"
#include "core/net/message_endpoint.h"
#include "core/net/transport.h"
#include "server/knob_board.h"
#include "server/report_relay.h"

namespace strata {

struct CoordinatorOptions {
  int servers = 1;
  int workers = 1;     // conv workers
  int fc_workers = 0;  // FC workers (stanza mode)
  uint64_t job_id = 1;
  absl::Duration dead_after = absl::Seconds(10);  // silence that marks a node dead
  int64_t knob_lead = 8;  // iterations a knob lease reaches ahead (server/knob_board.h)
  // Each node declared dead is added here (core/train/lost_nodes.h) before
  // anyone is told; "" = nowhere.
  std::string lost_nodes_out;
  // The checkpoint epoch every restoring process restores (the cluster
  // map says it); -1 when the job starts afresh.
  int64_t checkpoint_epoch = -1;
};

class Coordinator {
 public:
  // `endpoint` is server 0's ROUTER endpoint and `admission` its connections;
  // `self_address` its address and `self_lane_address` its shared-memory
  // lane's ("" if none).
  Coordinator(MessageEndpoint* endpoint, Admission* admission, const CoordinatorOptions& options,
              std::string self_address, std::string self_lane_address);

  // Handles REGISTER, HEARTBEAT and BARRIER from `peer` (the sender its
  // connection was admitted as). Returns an error to be sent back to the
  // sender when the request is invalid.
  absl::Status Handle(const IncomingMessage& message, const Peer& peer);
  // The knob service (core/net/knob.capnp): lease, set and get, likewise.
  absl::Status HandleKnobs(const IncomingMessage& message, const Peer& peer);
  // Checks heartbeats; logs each node that falls silent, tells the other
  // servers, and returns the nodes newly found dead.
  std::vector<Peer> CheckLiveness(absl::Time now);
  bool all_registered() const;
  // Tells every node registered so far that the job ends with `why` (an
  // error its registration, or its wait for the map, fails with).
  void Abandon(const absl::Status& why);
  // How many of each role have registered: "1/2 servers, 2/2 workers, 0/0 fc workers".
  std::string Registered() const;
  // The newest checkpoint iteration for which every server and FC worker
  // has written its part, `own` being server 0's; -1 while any of them
  // has not registered or written one.
  int64_t AgreedCheckpoint(int64_t own) const;
  // The servers (but server 0) and FC workers that have said nothing yet
  // of their part of epoch `iteration`: neither a part of it or later
  // (heartbeats; an FC worker's DONE) nor that they could not write it.
  // "server 1", "fc worker 0"; empty when none.
  std::vector<std::string> NodesYetToReport(int64_t iteration) const;
  // The other servers whose last report (the heartbeat a server sends, and
  // repeats until it is answered, as it exits) has not arrived, dead ones
  // aside: "server 1"; empty when none.
  std::vector<std::string> ServersYetToSayLast() const;
  // `peer` reported its newest part (its DONE says, at the end).
  void RecordCheckpointed(const Peer& peer, int64_t iteration);
  // `who` could not write its part of epoch `iteration`: logged as an
  // error once per epoch and process, and kept for the job's end
  // (CheckpointFailures).
  void RecordCheckpointFailure(const std::string& who, int64_t iteration, const std::string& why);
  // The parts that could not be written: "epoch 200: server 1: ...", by
  // epoch; those of epoch `only` alone when it is not -1.
  std::vector<std::string> CheckpointFailures(int64_t only = -1) const;

 private:
  struct Node {
    wire::Role role;
    int rank;
    std::string address;
    std::string peer_address;  // FC workers: their expert exchange; servers: their lane
    std::string identity;
    absl::Time last_seen;
    bool dead = false;
    bool late_heartbeat_logged = false;
    int64_t checkpointed = -1;  // its newest checkpoint part (heartbeats say)
    bool said_last = false;     // a server's last report arrived
  };
  absl::Status Register(const IncomingMessage& message, const Peer& peer);
  absl::Status Barrier(const IncomingMessage& message);
  void SendMap(const Node& node);
  static std::string Describe(const Node& node);
  // Adds `node` to options_.lost_nodes_out (when set), logging a failure.
  void RecordLoss(const Node& node, const std::string& why) const;

  MessageEndpoint* endpoint_;
  Admission* admission_;
  CoordinatorOptions options_;
  std::map<int, Node> servers_;     // by rank
  std::map<int, Node> workers_;     // conv workers, by rank
  std::map<int, Node> fc_workers_;  // by rank
  std::map<int, Node>& TableFor(wire::Role role);
  int LimitFor(wire::Role role) const;
  bool map_sent_ = false;
  KnobBoard knobs_;
  ReportRelay reports_;  // iterations relayed to the job's controller
  // (epoch, who) -> why, of the parts that could not be written
  std::map<std::pair<int64_t, std::string>, std::string> checkpoint_failures_;
  // barrier name -> identities waiting, with their request ids
  std::map<std::string, std::vector<std::pair<std::string, uint64_t>>> barriers_;
};

}  // namespace strata

#endif  // STRATA_SERVER_COORDINATOR_H_
