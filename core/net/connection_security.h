// ConnectionSecurity: how every ZeroMQ socket of a process proves itself
// when a connection is made, before any message passes.
//
// A process is in one of three settings, installed once at start (before
// any socket opens) by InstallConnectionSecurity:
//
//   open    no job token, no keys: any peer that reaches a serving socket
//           connects (ZeroMQ's NULL mechanism). Serving sockets may bind
//           loopback addresses only, unless `insecure` says otherwise.
//   token   the job token: every serving socket is a ZeroMQ PLAIN server,
//           and its context's ZAP handler (RFC 27) admits only connections
//           whose password is the token; every client socket presents it.
//           The token crosses the network in plain text, as the data does.
//   CURVE   keys (core/net/curve.h): every connection is encrypted, and the
//           ZAP handler admits only listed client keys, stamping each
//           connection with the jobs its key may speak for.
//
// Either way a peer that cannot prove itself fails the handshake: ZeroMQ
// disconnects it before it can send a single frame, so nothing it sends is
// buffered, decoded or seen by the application. What a connection may do
// once in (its job, role and rank) is Admission's (core/net/admission.h).
//
//   ConnectionSecurity security;
//   security.token = token;
//   InstallConnectionSecurity(security);   // in main, before any socket
//   auto server = Socket::Bind(context, SocketKind::kRouter, address);  // PLAIN server
//
// Thread safety: Install is not thread-safe against sockets being opened;
// everything else is.
#ifndef STRATA_CORE_NET_CONNECTION_SECURITY_H_
#define STRATA_CORE_NET_CONNECTION_SECURITY_H_

#include <cstdint>
#include <memory>
#include <string>

#include <zmq.hpp>

#include "absl/status/statusor.h"
#include "core/net/curve.h"

namespace strata {

struct ConnectionSecurity {
  std::string token;                       // the job token; "" = none
  std::shared_ptr<const CurveKeys> curve;  // null = no CURVE
  // Lets an open process serve on addresses other than loopback (every
  // process on the network may then join its jobs).
  bool insecure = false;
};

// How a socket authenticates its connections.
enum class Mechanism { kOpen, kToken, kCurve };

// Every socket this process opens from now on follows `security`.
void InstallConnectionSecurity(ConnectionSecurity security);
// The installed setting (open by default).
ConnectionSecurity ProcessConnectionSecurity();
Mechanism ProcessMechanism();
// "open", "token", "CURVE".
const char* MechanismName(Mechanism mechanism);

// Whether two secrets (tokens) are equal, in time independent of where
// equal-length ones differ. An empty secret equals nothing.
bool SameSecret(const std::string& a, const std::string& b);

// Socket set-up, for the transport (core/net/transport.cc).
//
// Before a serving socket binds `endpoint`: FailedPrecondition when an open
// process (not `insecure`) would serve on an address other than loopback,
// naming the flags that give a token; a warning, once per process, when a
// token without CURVE serves there (the network can read it). Then the
// socket's mechanism, and this context's ZAP handler started if it has
// none (it keeps the setting it was started with for the context's life).
// FailedPrecondition as well when the CURVE keys cannot serve (no
// server.key, no authorized_keys).
// Returns the socket's mechanism.
absl::StatusOr<Mechanism> SecureServerSocket(zmq::context_t& context, zmq::socket_t& socket,
                                             const std::string& endpoint);
// Before a client socket connects: what it presents; returns its mechanism.
Mechanism SecureClientSocket(zmq::socket_t& socket);

// Whether `endpoint` (a bound or bindable "tcp://HOST:PORT" or "ipc://...")
// can be reached only from this host: a loopback address or a Unix socket.
bool ServesThisHostOnly(const std::string& endpoint);

// A socket monitor's handshake-failure event (ZMQ_EVENT_HANDSHAKE_FAILED_*)
// under `mechanism`, worded for a log line or an error ("the peer presents
// no job token", ...). `serving`: the socket is the serving end. A
// handshake that broke off (no detail) is said as the likely cause, with a
// question mark: when the ends are set up differently, which one notices
// first is a race, and the other sees only a broken connection.
std::string DescribeHandshakeFailure(Mechanism mechanism, bool serving, uint16_t event,
                                     int32_t value);

}  // namespace strata

#endif  // STRATA_CORE_NET_CONNECTION_SECURITY_H_
