// LaneHub: a server's end of the shared-memory lanes (core/net/lane_socket.h)
// that workers on its host open beside their ZeroMQ connection.
//
// The hub listens on an abstract-namespace name (announced to workers in
// the cluster map), accepts lanes, and reads their requests as RawMessages
// whose identity is the lane's ("\0lane:N", never a ZeroMQ routing id), so
// the server handles them like any other request and answers with Send.
// The server polls the hub's descriptors together with its ROUTER socket.
//
// A lane closes when its worker closes it, or when a reply cannot be
// delivered (the worker is gone or not reading): the worker then resends
// what was in flight over its socket. Service() reports closed lanes once,
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
#include "core/net/transport.h"

namespace strata {

class LaneHub {
 public:
  // Listens at a name derived from `server_address` (the server's ZeroMQ
  // endpoint), so that a server restarted at the same address listens at
  // the same lane address and its workers can reopen their lanes. `owner`
  // names the server in log lines ("server 0").
  static absl::StatusOr<std::unique_ptr<LaneHub>> Listen(std::string owner,
                                                         const std::string& server_address);

  // The address workers connect to.
  const std::string& address() const { return listener_->address(); }
  // Whether `identity` names a lane (else it is a ZeroMQ routing id).
  static bool IsLane(const std::string& identity);

  // Appends poll items for the listener and every open lane; Service reads
  // the results of the last call's items.
  void AddPollItems(std::vector<zmq::pollitem_t>& items);

  struct Events {
    std::vector<RawMessage> requests;  // identity: the lane
    // Packets that could not even be read as a message, per lane.
    std::vector<std::pair<std::string, absl::Status>> refused;
    std::vector<std::string> closed;  // lanes gone since the last call
  };
  // After a poll over the items AddPollItems appended (starting at
  // `items`): accepts new lanes and reads what the ready ones carry, at most
  // `max_per_lane` packets each so that one busy lane cannot starve others.
  Events Service(const zmq::pollitem_t* items, int max_per_lane = 256);

  // Sends a reply on a lane; returns the bytes sent, or 0 when the lane is
  // gone (the reply is dropped and the lane reported closed).
  size_t Send(const std::string& identity, OutgoingMessage& message);

 private:
  LaneHub(std::string owner, std::unique_ptr<LaneListener> listener)
      : owner_(std::move(owner)), listener_(std::move(listener)) {}
  void CloseLane(const std::string& identity, const std::string& why);

  const std::string owner_;
  std::unique_ptr<LaneListener> listener_;
  uint64_t next_lane_ = 1;
  std::map<std::string, std::unique_ptr<LaneSocket>> lanes_;  // open lanes
  std::vector<std::string> polled_;  // the lanes of the last AddPollItems, in order
  std::vector<std::string> closed_;  // not yet reported
};

}  // namespace strata

#endif  // STRATA_SERVER_LANE_HUB_H_
