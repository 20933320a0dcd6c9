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
// Installed for a process (core/net/connection_security.h), the keys make
// every Socket::Bind a CURVE server whose context's ZAP handler admits
// only listed client keys (an unlisted one is refused, and the refusal
// logged with the peer's address and key), and every Socket::Connect a
// CURVE client. A message a serving socket receives carries the jobs of the
// key that sent it (RawMessage::curve_user), and Admission refuses a hello
// for a job that key is not listed for, so a key of job A cannot speak for
// job B on a server of both.
#ifndef STRATA_CORE_NET_CURVE_H_
#define STRATA_CORE_NET_CURVE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

// The ZAP user id of `public_key` (Z85) when authorized_keys lists it
// ("jobs=1,2 name=job1"), else nothing.
std::optional<std::string> AdmittedCurveUser(const CurveKeys& keys,
                                             const std::string& public_key);

// The ZAP user id the handler gives an admitted key ("jobs=1,2 name=job1")
// and what it says.
struct CurvePeer {
  std::vector<uint64_t> jobs;
  std::string name;
};
std::optional<CurvePeer> ParseCurveUserId(const std::string& user_id);

}  // namespace strata

#endif  // STRATA_CORE_NET_CURVE_H_
