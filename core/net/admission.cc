#include "core/net/admission.h"

#include <sys/random.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/net/connection_security.h"
#include "core/net/round_trip.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/json_difference.h"

namespace strata {
namespace {

// More registered connections than any job has; beyond, the oldest go.
constexpr size_t kMaxPeers = 4096;
// Longer identities or tokens are refused before they are compared.
constexpr size_t kMaxIdentityBytes = 1 << 16;
constexpr size_t kMaxTokenBytes = 256;

absl::Status CheckTokenText(const std::string& token, const std::string& where) {
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(where, " is empty"));
  if (token.size() > kMaxTokenBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " is longer than ", kMaxTokenBytes, " characters"));
  }
  for (unsigned char c : token) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " has a space or a non-printable character"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string DescribePeer(wire::Role role, int rank) {
  switch (role) {
    case wire::Role::SERVER:
      return absl::StrCat("server ", rank);
    case wire::Role::CONV_WORKER:
      return rank < 0 ? "a conv worker without a rank" : absl::StrCat("worker ", rank);
    case wire::Role::FC_WORKER:
      return absl::StrCat("fc worker ", rank);
    case wire::Role::LAUNCHER:
      return "launcher";
    case wire::Role::TOOL:
      return "tool";
  }
  return absl::StrCat("role ", static_cast<int>(role));
}

Admission::Admission(std::string owner, JobCredentials credentials)
    : owner_(std::move(owner)), credentials_(std::move(credentials)) {}

absl::StatusOr<Peer> Admission::Admit(const IncomingMessage& hello) {
  const auto h = hello.header();
  Peer peer{h.getSenderRole(), h.getSenderRank()};
  const std::string who = DescribePeer(peer.role, peer.rank);
  if (h.getJobId() != credentials_.job_id) {
    return absl::PermissionDeniedError(absl::StrCat(who, " says hello for job ", h.getJobId(), "; ",
                                                    owner_, " serves job ", credentials_.job_id));
  }
  STRATA_RETURN_IF_ERROR(CheckCurveKey(hello, who));
  STRATA_RETURN_IF_ERROR(CheckToken(hello));
  const auto identity = h.getJobIdentity();
  if (identity.size() > kMaxIdentityBytes) {
    return absl::InvalidArgumentError(absl::StrCat(who, "'s job identity has ", identity.size(),
                                                   " bytes, the limit is ", kMaxIdentityBytes));
  }
  // A tool or launcher computes nothing: it may come without an identity
  // (the token still decides).
  const bool computes = peer.role != wire::Role::TOOL && peer.role != wire::Role::LAUNCHER;
  const std::string field =
      !computes && identity.size() == 0
          ? std::string()
          : FirstDifferingField(credentials_.identity,
                                std::string(identity.cStr(), identity.size()));
  if (!field.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(who, " runs another job config than ", owner_, ": ", field,
                     " differs (every process of a job needs the same config and overrides)"));
  }
  if (!computes) {
    STRATA_ASSIGN_OR_RETURN(peer.admin, CheckAdminToken(hello, who));
  }
  auto known = peers_.find(hello.identity());
  if (known != peers_.end()) {
    // A hello said again on a connection: a rank assigned since stays; what
    // the hello proves (the admin token) is what it proves now.
    if (peer.rank < 0 && known->second.role == peer.role) {
      known->second.admin = peer.admin;
      return known->second;
    }
    known->second = peer;
    return peer;
  }
  if (peers_.size() >= kMaxPeers) {
    // Connections that closed are never reported: make room by forgetting
    // the oldest. If it is still in use, its client says hello again.
    peers_.erase(admitted_.front());
    admitted_.pop_front();
  }
  peers_[hello.identity()] = peer;
  admitted_.push_back(hello.identity());
  return peer;
}

absl::Status Admission::CheckCurveKey(const IncomingMessage& hello,
                                      const std::string& who) const {
  const uint64_t job = hello.header().getJobId();
  if (hello.curve_user().empty()) {
    if (ProcessMechanism() != Mechanism::kCurve) return absl::OkStatus();
    return absl::PermissionDeniedError(absl::StrCat(
        who, " says hello for job ", job, " without a CURVE key; ", owner_,
        " takes only encrypted, keyed connections"));
  }
  const std::optional<CurvePeer> key = ParseCurveUserId(hello.curve_user());
  if (!key.has_value()) {
    return absl::PermissionDeniedError(
        absl::StrCat(who, " came with an unreadable CURVE admission \"", hello.curve_user(), "\""));
  }
  if (std::find(key->jobs.begin(), key->jobs.end(), job) == key->jobs.end()) {
    return absl::PermissionDeniedError(absl::StrCat(
        who, "'s CURVE key \"", key->name, "\" is listed for job(s) ", absl::StrJoin(key->jobs, ","),
        ", not for job ", job));
  }
  return absl::OkStatus();
}

absl::Status Admission::CheckToken(const IncomingMessage& hello) const {
  if (open()) return absl::OkStatus();
  const auto h = hello.header();
  const std::string who = DescribePeer(h.getSenderRole(), h.getSenderRank());
  const std::string token(h.getJobToken().cStr(), h.getJobToken().size());
  if (token.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat(who, " presented no job token; ", owner_, " requires one"));
  }
  if (token.size() > kMaxTokenBytes || !SameSecret(credentials_.token, token)) {
    return absl::PermissionDeniedError(absl::StrCat(who, " presented a wrong job token (", owner_,
                                                    " of job ", credentials_.job_id, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Admission::CheckAdminToken(const IncomingMessage& hello,
                                                const std::string& who) const {
  const auto presented = hello.header().getAdminToken();
  if (presented.size() == 0) return open() && credentials_.admin_token.empty();
  if (credentials_.admin_token.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        who, " presented an admin token, but ", owner_, " of job ", credentials_.job_id,
        " was given none (--admin-token-file or $", kAdminTokenEnv, ")"));
  }
  if (presented.size() > kMaxTokenBytes ||
      !SameSecret(credentials_.admin_token, std::string(presented.cStr(), presented.size()))) {
    return absl::PermissionDeniedError(absl::StrCat(
        who, " presented a wrong admin token (", owner_, " of job ", credentials_.job_id, ")"));
  }
  return true;
}

absl::StatusOr<Peer> Admission::Admit(const IncomingMessage& hello,
                                      absl::FunctionRef<absl::Status(const Peer&)> allowed) {
  STRATA_ASSIGN_OR_RETURN(const Peer peer, Admit(hello));
  if (absl::Status s = allowed(peer); !s.ok()) {
    Forget(hello.identity());
    return s;
  }
  return peer;
}

absl::StatusOr<Peer> Admission::Check(const IncomingMessage& message) const {
  const auto h = message.header();
  auto it = peers_.find(message.identity());
  if (it == peers_.end()) {
    return absl::UnauthenticatedError(absl::StrCat(KindName(TypeOf(h)),
                                                   " from a connection that never said hello to ",
                                                   owner_, " (every connection registers first)"));
  }
  const Peer& peer = it->second;
  if (h.getJobId() != credentials_.job_id) {
    return absl::PermissionDeniedError(absl::StrCat("unknown job id ", h.getJobId(), " (", owner_,
                                                    " serves job ", credentials_.job_id, ")"));
  }
  // A conv worker that asked for a rank registers again without one until
  // the cluster map tells it which it got.
  const bool asking_again = TypeOf(h) == wire::Kind::REGISTER && h.getSenderRank() == -1 &&
                            peer.role == wire::Role::CONV_WORKER;
  if (h.getSenderRole() != peer.role || (h.getSenderRank() != peer.rank && !asking_again)) {
    return absl::PermissionDeniedError(
        absl::StrCat(KindName(TypeOf(h)), " claiming to come from ",
                     DescribePeer(h.getSenderRole(), h.getSenderRank()), " on the connection of ",
                     DescribePeer(peer.role, peer.rank)));
  }
  return peer;
}

void Admission::AssignRank(const std::string& identity, int rank) {
  auto it = peers_.find(identity);
  if (it != peers_.end()) it->second.rank = rank;
}

void Admission::Forget(const std::string& identity) {
  if (peers_.erase(identity) == 0) return;
  admitted_.erase(std::find(admitted_.begin(), admitted_.end(), identity));
}

void FillHello(wire::Header::Builder h, const JobCredentials& credentials, wire::Role role,
               int rank) {
  h.setJobId(credentials.job_id);
  h.setSenderRole(role);
  h.setSenderRank(rank);
  h.setJobToken(credentials.token);
  const bool tool = role == wire::Role::TOOL || role == wire::Role::LAUNCHER;
  if (tool && !credentials.admin_token.empty()) h.setAdminToken(credentials.admin_token);
  h.setJobIdentity(credentials.identity);
  if (!credentials.spec.empty()) h.setJobSpec(credentials.spec);
}

absl::Status SayHello(Socket& socket, const JobCredentials& credentials, wire::Role role, int rank,
                      uint64_t request_id) {
  OutgoingMessage hello(wire::Kind::HELLO);
  FillHello(hello.header(), credentials, role, rank);
  hello.header().setRequestId(request_id);
  return socket.Send(hello);
}

absl::StatusOr<HelloAnswer> Introduce(Socket& socket, const JobCredentials& credentials,
                                      wire::Role role, int rank, const std::string& peer,
                                      absl::Duration timeout) {
  const absl::Time deadline = MonotonicNow() + timeout;
  // Said again, less and less often, while unanswered: a hello or its
  // answer can be lost. A peer answers every hello.
  RoundTrip round_trip;
  int hellos = 0;
  absl::Time hello_again = absl::InfinitePast();
  while (true) {
    const absl::Time now = MonotonicNow();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(peer, " did not answer our hello within ", absl::FormatDuration(timeout)));
    }
    if (now >= hello_again) {
      STRATA_RETURN_IF_ERROR_CTX(SayHello(socket, credentials, role, rank),
                                 absl::StrCat("saying hello to ", peer));
      hello_again = now + round_trip.TimeoutAfter(++hellos);
    }
    absl::StatusOr<RawMessage> raw = socket.Receive(std::min(deadline, hello_again) - now);
    if (absl::IsDeadlineExceeded(raw.status())) continue;
    STRATA_RETURN_IF_ERROR_CTX(raw.status(),
                               absl::StrCat("waiting for ", peer, " to answer our hello"));
    absl::StatusOr<IncomingMessage> reply = Decode(*std::move(raw), socket.limits());
    if (!reply.ok()) continue;
    const auto h = reply->header();
    if (IsRefusal(h)) return WithContext(ErrorFromHeader(h), absl::StrCat(peer, " refused us"));
    if (TypeOf(h) == wire::Kind::HELLO_ACK) return HelloAnswer{h.getCheckpointEpoch()};
  }
}

bool IsNotRegistered(const absl::Status& status) { return absl::IsUnauthenticated(status); }

bool IsNotRegistered(wire::Header::Reader error_reply) {
  return TypeOf(error_reply) == wire::Kind::ERROR &&
         error_reply.getErrorCode() == static_cast<uint32_t>(absl::StatusCode::kUnauthenticated);
}

namespace {

// A token: the first line of `token_file` when given (which must not be
// readable by others), else $`env`, else "". `what` names it in errors
// ("job token").
absl::StatusOr<std::string> LoadToken(const std::string& token_file, const char* env_name,
                                      const std::string& what) {
  if (token_file.empty()) {
    const char* env = std::getenv(env_name);
    if (env == nullptr || *env == '\0') return std::string();
    const std::string token = env;
    if (absl::Status s = CheckTokenText(token, absl::StrCat("$", env_name)); !s.ok()) return s;
    return token;
  }
  struct stat st;
  if (::stat(token_file.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat(what, " file ", token_file, ": ", std::strerror(errno)));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(
        absl::StrFormat("%s file %s is readable by others (mode %04o); chmod 600 it", what,
                        token_file, st.st_mode & 0777));
  }
  std::ifstream in(token_file);
  std::string line;
  std::getline(in, line);
  const std::string token(absl::StripAsciiWhitespace(line));
  if (absl::Status s = CheckTokenText(token, absl::StrCat(what, " file ", token_file)); !s.ok()) {
    return s;
  }
  return token;
}

}  // namespace

absl::StatusOr<std::string> LoadJobToken(const std::string& token_file) {
  return LoadToken(token_file, kJobTokenEnv, "job token");
}

absl::StatusOr<std::string> LoadAdminToken(const std::string& token_file) {
  return LoadToken(token_file, kAdminTokenEnv, "admin token");
}

absl::Status NeedsAdmin(const Peer& peer, const std::string& owner, const std::string& what) {
  return absl::PermissionDeniedError(absl::StrCat(
      what, " from the ", DescribePeer(peer.role, peer.rank), " without the admin token; ", owner,
      " takes it only from a tool that presents the admin token its servers were given "
      "(--admin-token-file or $", kAdminTokenEnv, ")"));
}

std::string NewJobToken() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (errno != EINTR) {
      std::random_device device;  // no getrandom(2): the library's source
      for (; got < sizeof(bytes); ++got) bytes[got] = static_cast<unsigned char>(device());
    }
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

}  // namespace strata
