// Admission: which connections a serving process (a parameter server, an FC
// worker, an expert exchange) takes requests from.
//
// Every connection — a ZeroMQ connection to a ROUTER socket, or a
// shared-memory lane — begins with a HELLO that names the sender's role and
// rank and presents the job's credentials: the job id, the job token (a
// secret made once per run and handed to every process; never on a command
// line) and the job's identity (core/model/job_identity.h). Admit() checks
// them and binds the connection to that sender; every later request must
// come on a bound connection and claim the role and rank it was bound to
// (Check). A client whose connection is renewed (a server restarted, so its
// routing id is new) says HELLO again before it resends anything.
//
// A tool or launcher (strata_ctl) may present no identity: it computes
// nothing, and the token alone admits it. What changes a job from outside
// (shutdown, knob changes) also takes the admin token, which only servers
// and their operators hold: a tool that presents it is bound as an admin
// (Peer::admin). Workers are never given it. An open process (no job
// token) without an admin token takes every tool as an admin.
//
// Without a token (an open cluster) any HELLO with the right job id and
// identity is admitted, and the serving process warns that the cluster is
// open. The token travels as plain text: on networks others can read, use
// encryption (CURVE, core/net/curve.h) as well; then a hello must also come
// with a client key listed for the job it names.
//
// Thread safety: not thread-safe; the serving loop owns it.
//
//   Admission admission("server 0", credentials);
//   if (kind == HELLO) { STRATA_ASSIGN_OR_RETURN(Peer p, admission.Admit(message)); ... }
//   else { STRATA_ASSIGN_OR_RETURN(Peer p, admission.Check(message)); ... }
#ifndef STRATA_CORE_NET_ADMISSION_H_
#define STRATA_CORE_NET_ADMISSION_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "core/net/transport.h"

namespace strata {

// The environment variables a launcher hands the job token (every process)
// and the admin token (servers only) in.
inline constexpr char kJobTokenEnv[] = "STRATA_JOB_TOKEN";
inline constexpr char kAdminTokenEnv[] = "STRATA_ADMIN_TOKEN";

struct JobCredentials {
  uint64_t job_id = 1;
  std::string token;     // "" = an open cluster
  std::string identity;  // the job's identity JSON; "" in the plain key-value mode
  // The job's config and mode (core/model/job_spec.h), offered in the hello
  // to servers that learn jobs; "" = not offered.
  std::string spec;
  // A serving process: the admin token it takes ("" = none). A tool: the
  // one it presents. Workers have none.
  std::string admin_token;
};

// Who sent a request, as its connection registered.
struct Peer {
  wire::Role role = wire::Role::CONV_WORKER;
  int rank = -1;
  // A tool or launcher that presented the admin token (or any, in an open
  // process without one): it may shut the job down and change its knobs.
  bool admin = false;
};

// "worker 3", "fc worker 0", "server 1", "launcher", "tool".
std::string DescribePeer(wire::Role role, int rank);

class Admission {
 public:
  // `owner` names the serving process in errors ("server 0").
  Admission(std::string owner, JobCredentials credentials);

  bool open() const { return credentials_.token.empty(); }
  const JobCredentials& credentials() const { return credentials_; }

  // Checks a HELLO and binds its connection to the sender it names.
  // Errors name the sender and what is wrong: PermissionDenied for another
  // job id or a missing or wrong token (the admin token included, when a
  // tool presents one), FailedPrecondition for a job identity that differs
  // (naming the first differing field, never this process's value). A hello said
  // again on a connection keeps a rank assigned to it since (AssignRank).
  // At most 4096 connections stay registered; a new one then replaces the
  // oldest, whose client (if it is still there) is asked to say hello
  // again by its next request's refusal.
  absl::StatusOr<Peer> Admit(const IncomingMessage& hello);
  // Whether `hello` presents this process's token (any job id; with no
  // token, always). PermissionDenied naming the sender otherwise.
  absl::Status CheckToken(const IncomingMessage& hello) const;
  // Admit(), then `allowed` (whether this process takes that sender at
  // all); when it refuses, the connection is not bound and its error
  // returned.
  absl::StatusOr<Peer> Admit(const IncomingMessage& hello,
                             absl::FunctionRef<absl::Status(const Peer&)> allowed);
  // The sender `message`'s connection registered as. Unauthenticated when it
  // never said HELLO (IsNotRegistered); PermissionDenied when the header
  // claims another job, role or rank.
  absl::StatusOr<Peer> Check(const IncomingMessage& message) const;
  // Sets the rank of a connection that registered without one (a conv
  // worker the coordinator assigns a rank to).
  void AssignRank(const std::string& identity, int rank);
  void Forget(const std::string& identity);

 private:
  // With CURVE: the hello's key must be listed for the job it names.
  absl::Status CheckCurveKey(const IncomingMessage& hello, const std::string& who) const;
  // Whether a tool's hello makes it an admin; PermissionDenied for a wrong
  // admin token.
  absl::StatusOr<bool> CheckAdminToken(const IncomingMessage& hello, const std::string& who) const;

  std::string owner_;
  JobCredentials credentials_;
  std::map<std::string, Peer> peers_;  // by connection identity
  std::deque<std::string> admitted_;   // the same identities, oldest first
};

// Fills the header of a HELLO (made as OutgoingMessage(wire::Kind::HELLO))
// for `role` `rank` with `credentials`.
void FillHello(wire::Header::Builder header, const JobCredentials& credentials, wire::Role role,
               int rank);

// Sends a HELLO for `role` `rank` on `socket` (its answer carries
// `request_id`).
absl::Status SayHello(Socket& socket, const JobCredentials& credentials, wire::Role role, int rank,
                      uint64_t request_id = 0);

// What an answer to our hello says beyond admitting us.
struct HelloAnswer {
  // From a job's coordinator: the checkpoint epoch every restoring process
  // of the job restores (core/train/checkpoint_epochs.h); -1 when the job
  // starts afresh.
  int64_t checkpoint_epoch = -1;
};

// Client side: says HELLO on a fresh `socket` and waits up to `timeout` for
// the answer (other messages are dropped meanwhile), saying it again after
// a resend timeout that doubles each time (core/net/round_trip.h). Fails with the
// refusal, in the context of `peer` ("server 1 (tcp://...)"), or with
// DeadlineExceeded.
absl::StatusOr<HelloAnswer> Introduce(Socket& socket, const JobCredentials& credentials,
                                      wire::Role role, int rank, const std::string& peer,
                                      absl::Duration timeout);

// True for the error a request on an unregistered connection gets: the
// sender should say HELLO and send it again (at most kMaxHellosPerRequest
// times for one request).
inline constexpr int kMaxHellosPerRequest = 3;
bool IsNotRegistered(const absl::Status& status);
bool IsNotRegistered(wire::Header::Reader error_reply);

// The job token: the first line of `token_file` when given (which must not
// be readable by others), else $STRATA_JOB_TOKEN, else "" (an open
// cluster). Errors name the file and what is wrong with it.
absl::StatusOr<std::string> LoadJobToken(const std::string& token_file);
// The admin token alike, from `token_file` or $STRATA_ADMIN_TOKEN ("" for
// none).
absl::StatusOr<std::string> LoadAdminToken(const std::string& token_file);
// The refusal of a shutdown or knob change from `peer`, a tool or launcher
// that is not an admin, by `owner` ("server 0"); `what` names the request.
absl::Status NeedsAdmin(const Peer& peer, const std::string& owner, const std::string& what);
// A fresh random token (64 hex digits).
std::string NewJobToken();

}  // namespace strata

#endif  // STRATA_CORE_NET_ADMISSION_H_
