// CURVE: ZeroMQ's encryption and authentication (CurveZMQ) on every socket
// of a process, and which client keys may speak for which jobs.
//
// A key directory (strata_keygen makes one) holds:
//
//   server.key       the key pair every serving socket of the cluster
//                    presents (servers, FC workers, expert exchanges)
//   server.pub       its public half: all a process that only connects needs
//   NAME.key         a client key pair; a process presents NAME's
//                    (--curve-client, default "client") when it connects
//   authorized_keys  the client keys serving sockets admit, one per line,
//                    each for the jobs it names: "JOBS PUBLIC-KEY NAME", JOBS
//                    a comma-separated list of job ids ("1,2")
//
// Key files are "public = <Z85>" and "secret = <Z85>" lines (40 characters
// each) and must not be readable by others.
//
// Once InstallProcessCurve has run (at start, before any socket opens),
// every Socket::Bind is a CURVE server whose context's ZAP handler admits
// only listed client keys (an unlisted one is refused, and the refusal
// logged with the peer's address and key), and every Socket::Connect is a
// CURVE client. A message a serving socket receives carries the jobs of the
// key that sent it (RawMessage::curve_jobs), and Admission refuses a hello
// for a job that key is not listed for, so a key of job A cannot speak for
// job B on a server of both.
#ifndef STRATA_CORE_NET_CURVE_H_
#define STRATA_CORE_NET_CURVE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "absl/status/statusor.h"

namespace strata {

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;
};

struct AuthorizedKey {
  std::vector<uint64_t> jobs;
  std::string public_key;  // Z85
  std::string name;
};

struct CurveKeys {
  std::string dir;                     // where they were read from
  std::string server_public;           // server.pub
  std::optional<CurveKeyPair> server;  // server.key; absent: this process cannot serve
  std::string client_name;
  CurveKeyPair client;                 // NAME.key
  std::vector<AuthorizedKey> authorized;
};

// "1,2" as job ids; InvalidArgument for anything else (an id is >= 1).
absl::StatusOr<std::vector<uint64_t>> ParseJobList(const std::string& text);

// A fresh key pair (zmq_curve_keypair). Unavailable when libzmq was built
// without CURVE.
absl::StatusOr<CurveKeyPair> NewCurveKeyPair();

// Key files. A secret's file is mode 600 before the secret is written;
// reading refuses a secret others can read (PermissionDenied) and
// malformed keys (InvalidArgument), naming the file. A key's name in
// authorized_keys is one word.
absl::Status WriteKeyFile(const std::string& path, const CurveKeyPair& pair, bool with_secret);
absl::StatusOr<CurveKeyPair> ReadKeyFile(const std::string& path, bool with_secret);
absl::StatusOr<std::vector<AuthorizedKey>> ReadAuthorizedKeys(const std::string& path);
absl::Status AppendAuthorizedKey(const std::string& path, const AuthorizedKey& key);

// The keys of directory `dir` for a process presenting client key
// `client_name`. server.key and authorized_keys are optional (a process
// that only connects needs neither); server.pub and NAME.key are not.
absl::StatusOr<CurveKeys> LoadCurveKeys(const std::string& dir,
                                        const std::string& client_name = "client");

// Every socket this process opens from now on uses `keys`; nullptr: plain
// text (the default). Not thread-safe against sockets being opened.
void InstallProcessCurve(std::shared_ptr<const CurveKeys> keys);
// The installed keys, or nullptr.
std::shared_ptr<const CurveKeys> ProcessCurve();

// Socket set-up, for the transport (core/net/transport.cc). Before bind:
// a CURVE server with `keys.server`, and this context's ZAP handler
// started if it has none (FailedPrecondition when `keys` has no
// server.key or no authorized_keys); the handler keeps the keys it was
// started with for the context's life. Before connect: a CURVE client.
absl::Status MakeCurveServer(zmq::context_t& context, zmq::socket_t& socket,
                             std::shared_ptr<const CurveKeys> keys);
void MakeCurveClient(zmq::socket_t& socket, const CurveKeys& keys);

// The ZAP user id the handler gives an admitted key ("jobs=1,2 name=job1")
// and what it says.
struct CurvePeer {
  std::vector<uint64_t> jobs;
  std::string name;
};
std::optional<CurvePeer> ParseCurveUserId(const std::string& user_id);

// A socket monitor's handshake-failure event, as a log line's reason
// ("the peer does not use CURVE", ...).
std::string DescribeHandshakeFailure(uint16_t event, int32_t value);

}  // namespace strata

#endif  // STRATA_CORE_NET_CURVE_H_
