// LaneHub: a server's end of the shared-memory lanes (core/net/lane_socket.h)
// that workers on its host open beside their ZeroMQ connection.
//
// The hub is a MessageEndpoint (core/net/message_endpoint.h) beside the
// server's ROUTER socket: it listens on an abstract-namespace name
// (announced to workers in the cluster map), accepts lanes, and delivers
// their requests as RawMessages whose identity is the lane's ("lane:N" of
// the lane kind, EndpointKind::kLane, which no ZeroMQ peer can present), so
// the server handles them like any other request and answers through the
// endpoint that serves the identity.
//
// Only processes of the server's own user are served (a lane's peer
// credentials say who connected), and the worker checks the server's alike
// (LaneSocket::Connect).
//
// A lane closes when its worker closes it, or when a reply cannot be
// delivered (the worker is gone or not reading): the worker then resends
// what was in flight over its socket. Collect() reports closed lanes once,
// so the server can drop their regions and pending pulls.
#ifndef STRATA_SERVER_LANE_HUB_H_
#define STRATA_SERVER_LANE_HUB_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "absl/status/statusor.h"
#include "core/net/lane_socket.h"
#include "core/net/message_endpoint.h"
#include "core/net/transport.h"

namespace strata {

class LaneHub final : public MessageEndpoint {
 public:
  // Listens at NameFor(server_address, job_token) (the server's ZeroMQ
  // endpoint, its job token), so that a server restarted at the same
  // address listens at the same lane address and its workers can reopen
  // their lanes. `owner` names the server in log lines ("server 0").
  static absl::StatusOr<std::unique_ptr<LaneHub>> Listen(std::string owner,
                                                         const std::string& server_address,
                                                         const std::string& job_token);
  // The abstract name a server at `server_address` listens at: a hash of
  // the address and the job token, which another user of the host cannot
  // work out without the token (and so cannot take before the server
  // does). Without a token it follows from the address alone.
  static std::string NameFor(const std::string& server_address, const std::string& job_token);

  // Whether `identity` is a lane's (one this hub delivered).
  static bool IsLane(const std::string& identity);

  // The address workers connect to.
  const std::string& address() const override { return listener_->address(); }
  bool Serves(const std::string& peer) const override { return IsLane(peer); }
  // Sends a reply on a lane (header packets; the floats go through the
  // lane's region). Unavailable when the lane is gone: the reply is dropped
  // and the lane reported closed.
  absl::StatusOr<size_t> Send(const std::string& peer, OutgoingMessage& message) override;
  // Items for the listener and every open lane.
  void AddPollItems(std::vector<zmq::pollitem_t>& items) override;
  // Accepts new lanes and reads what the ready ones carry.
  void Collect(const zmq::pollitem_t* items, int max_messages, EndpointEvents& events) override;
  uint64_t bytes_sent() const override { return sent_; }
  uint64_t bytes_received() const override { return received_; }
  bool same_host() const override { return true; }

 private:
  LaneHub(std::string owner, std::unique_ptr<LaneListener> listener)
      : owner_(std::move(owner)), listener_(std::move(listener)) {}
  void CloseLane(const std::string& identity, const std::string& why);

  const std::string owner_;
  std::unique_ptr<LaneListener> listener_;
  uint64_t next_lane_ = 1;
  std::map<std::string, std::unique_ptr<LaneSocket>> lanes_;  // open lanes
  std::vector<std::string> polled_;   // the lanes of the last AddPollItems, in order
  std::vector<std::string> closed_;   // not yet reported
  uint64_t sent_ = 0, received_ = 0;  // header packets
};

}  // namespace strata

#endif  // STRATA_SERVER_LANE_HUB_H_
