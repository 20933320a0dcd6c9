// The messages a node sends the coordinator to join a job and to show it is
// alive, built in one place for every role (workers through MembershipClient,
// servers of rank > 0 through ServerNode). A node says HELLO on its
// coordinator connection first (core/net/admission.h).
#ifndef STRATA_CORE_NET_MEMBERSHIP_H_
#define STRATA_CORE_NET_MEMBERSHIP_H_

#include <cstdint>
#include <string>

#include "core/net/transport.h"

namespace strata {

// What a node tells the coordinator about itself.
struct NodeDescription {
  wire::Role role = wire::Role::CONV_WORKER;
  int rank = -1;             // -1: a conv worker asking for one
  std::string address;       // where it serves (servers, FC workers), "" otherwise
  std::string peer_address;  // servers: their lane; FC workers: their expert exchange
};

// What a heartbeat says of the sender's coordinated checkpoint parts
// (core/train/checkpoint_epochs.h).
struct CheckpointReport {
  int64_t written = -1;  // the newest part written; -1: none
  // An epoch whose part could not be written (-1: none), and why.
  int64_t failed = -1;
  std::string why;
};

// Fill the header of a REGISTER and of a HEARTBEAT (messages made with
// those kinds).
void FillRegister(wire::Header::Builder header, uint64_t job_id, const NodeDescription& node);
void FillHeartbeat(wire::Header::Builder header, uint64_t job_id, wire::Role role, int rank,
                   const CheckpointReport& checkpoints = {});
// What a heartbeat's header says of the sender's parts.
CheckpointReport CheckpointReportOf(wire::Header::Reader heartbeat);

}  // namespace strata

#endif  // STRATA_CORE_NET_MEMBERSHIP_H_
