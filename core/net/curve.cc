#include "core/net/curve.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status.h"
#include "core/util/log.h"

namespace strata {
namespace {

constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";
constexpr size_t kZ85KeyLength = 40;

std::mutex g_mutex;
std::shared_ptr<const CurveKeys> g_keys;

bool IsZ85Key(const std::string& key) {
  if (key.size() != kZ85KeyLength) return false;
  uint8_t decoded[32];
  return zmq_z85_decode(decoded, key.c_str()) != nullptr;
}

absl::Status CheckPrivate(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "%s is readable by others (mode %04o); chmod 600 it", path, st.st_mode & 0777));
  }
  return absl::OkStatus();
}

std::string JobList(const std::vector<uint64_t>& jobs) { return absl::StrJoin(jobs, ","); }

// One ZAP request (RFC 27): version, request id, domain, address, routing
// id, mechanism, then the mechanism's credentials (CURVE: the client's
// 32-byte public key). The reply admits listed keys with their jobs as the
// user id.
std::vector<std::string> AnswerZap(const std::vector<zmq::message_t>& request,
                                   const CurveKeys& keys) {
  auto frame = [&](size_t i) { return i < request.size() ? request[i].to_string() : ""; };
  auto reply = [&](const char* code, const std::string& text, const std::string& user) {
    return std::vector<std::string>{"1.0", frame(1), code, text, user, ""};
  };
  if (request.size() < 7 || frame(5) != "CURVE" || request[6].size() != 32) {
    return reply("400", "a CURVE key is required", "");
  }
  char z85[kZ85KeyLength + 1] = {};
  zmq_z85_encode(z85, static_cast<const uint8_t*>(request[6].data()), 32);
  for (const AuthorizedKey& key : keys.authorized) {
    if (key.public_key == z85) {
      return reply("200", "OK", absl::StrCat("jobs=", JobList(key.jobs), " name=", key.name));
    }
  }
  LogWarning("refused a connection from %s: CURVE key %s is not in %s/authorized_keys",
             frame(3).c_str(), z85, keys.dir.c_str());
  return reply("400", "key not authorized", "");
}

// Runs a ZeroMQ call again when a signal interrupts it.
template <typename F>
auto RetryOnInterrupt(F&& f) {
  while (true) {
    try {
      return f();
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
  }
}

// The ZAP handler of one context: answers until the context terminates.
// Signals go to the process's other threads.
void ServeZap(zmq::socket_t socket, std::shared_ptr<const CurveKeys> keys) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  try {
    while (true) {
      std::vector<zmq::message_t> request;
      bool more = true;
      while (more) {
        zmq::message_t frame;
        RetryOnInterrupt([&] { return socket.recv(frame, zmq::recv_flags::none); });
        more = frame.more();
        request.push_back(std::move(frame));
      }
      const std::vector<std::string> reply = AnswerZap(request, *keys);
      for (size_t i = 0; i < reply.size(); ++i) {
        const auto flags = i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
        RetryOnInterrupt([&] { return socket.send(zmq::buffer(reply[i]), flags); });
      }
    }
  } catch (const zmq::error_t& e) {
    // ETERM: the context is closing, so let it. Anything else leaves the
    // context without a handler: every CURVE handshake is then refused.
    if (e.num() != ETERM) {
      LogError("the CURVE admission (ZAP) handler stopped: %s; no new connection is admitted",
               e.what());
    }
  }
  socket.close();
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> ParseJobList(const std::string& text) {
  std::vector<uint64_t> jobs;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    uint64_t job = 0;
    if (!absl::SimpleAtoi(part, &job) || job == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", text, "\" is not a list of job ids >= 1 (like 1,2)"));
    }
    jobs.push_back(job);
  }
  return jobs;
}

absl::StatusOr<CurveKeyPair> NewCurveKeyPair() {
  char public_key[kZ85KeyLength + 1] = {};
  char secret_key[kZ85KeyLength + 1] = {};
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot make a CURVE key pair: ", zmq_strerror(zmq_errno()),
                     " (this libzmq has no CURVE support)"));
  }
  return CurveKeyPair{public_key, secret_key};
}

absl::Status WriteKeyFile(const std::string& path, const CurveKeyPair& pair, bool with_secret) {
  std::string text = with_secret ? "# A Strata CURVE key pair (ZeroMQ Z85). Keep it secret.\n"
                                 : "# The public half of a Strata CURVE key pair (ZeroMQ Z85).\n";
  absl::StrAppend(&text, "public = ", pair.public_key, "\n");
  if (with_secret) absl::StrAppend(&text, "secret = ", pair.secret_key, "\n");
  // The file is private before the secret is in it.
  const mode_t mode = with_secret ? 0600 : 0644;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  bool ok = fd >= 0 && ::fchmod(fd, mode) == 0 &&
            ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int error = errno;
  if (fd >= 0) ok = ::close(fd) == 0 && ok;
  if (!ok) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

absl::StatusOr<CurveKeyPair> ReadKeyFile(const std::string& path, bool with_secret) {
  if (with_secret) STRATA_RETURN_IF_ERROR(CheckPrivate(path));
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  CurveKeyPair pair;
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text.front() == '#') continue;
    const std::vector<std::string> parts = absl::StrSplit(text, absl::MaxSplits('=', 1));
    const std::string field(absl::StripAsciiWhitespace(parts[0]));
    const std::string value(parts.size() > 1 ? absl::StripAsciiWhitespace(parts[1]) : "");
    if (field == "public") {
      pair.public_key = value;
    } else if (field == "secret") {
      pair.secret_key = value;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": unknown line \"", text, "\" (public = ..., secret = ...)"));
    }
  }
  if (!IsZ85Key(pair.public_key)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no public key of 40 Z85 characters"));
  }
  if (with_secret && !IsZ85Key(pair.secret_key)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no secret key of 40 Z85 characters"));
  }
  return pair;
}

absl::StatusOr<std::vector<AuthorizedKey>> ReadAuthorizedKeys(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::vector<AuthorizedKey> keys;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text.front() == '#') continue;
    const std::vector<std::string> parts =
        absl::StrSplit(text, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    AuthorizedKey key;
    absl::StatusOr<std::vector<uint64_t>> jobs = ParseJobList(parts[0]);
    if (parts.size() < 2 || !jobs.ok() || !IsZ85Key(parts[1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", number, ": expected \"JOBS PUBLIC-KEY [NAME]\" (JOBS like 1,2; a key of 40 "
          "Z85 characters), got \"", text, "\""));
    }
    key.jobs = *jobs;
    key.public_key = parts[1];
    key.name = parts.size() > 2 ? parts[2] : absl::StrCat("line ", number);
    keys.push_back(std::move(key));
  }
  return keys;
}

absl::Status AppendAuthorizedKey(const std::string& path, const AuthorizedKey& key) {
  if (key.name.empty() || key.name.find_first_of(" \t\n#") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("a key's name is one word without '#', not \"", key.name, "\""));
  }
  std::ofstream out(path, std::ios::app);
  out << JobList(key.jobs) << " " << key.public_key << " " << key.name << "\n";
  out.close();
  if (!out) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<CurveKeys> LoadCurveKeys(const std::string& dir, const std::string& client_name) {
  CurveKeys keys;
  keys.dir = dir;
  keys.client_name = client_name;
  STRATA_ASSIGN_OR_RETURN(CurveKeyPair server_public,
                          ReadKeyFile(dir + "/server.pub", /*with_secret=*/false));
  keys.server_public = server_public.public_key;
  STRATA_ASSIGN_OR_RETURN(keys.client,
                          ReadKeyFile(absl::StrCat(dir, "/", client_name, ".key"), true));
  const std::string server_key = dir + "/server.key";
  if (std::ifstream(server_key).good()) {
    STRATA_ASSIGN_OR_RETURN(CurveKeyPair server, ReadKeyFile(server_key, true));
    if (server.public_key != keys.server_public) {
      return absl::InvalidArgumentError(
          absl::StrCat(server_key, " and ", dir, "/server.pub hold different keys"));
    }
    keys.server = server;
  }
  const std::string authorized = dir + "/authorized_keys";
  if (std::ifstream(authorized).good()) {
    STRATA_ASSIGN_OR_RETURN(keys.authorized, ReadAuthorizedKeys(authorized));
  }
  return keys;
}

void InstallProcessCurve(std::shared_ptr<const CurveKeys> keys) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_keys = std::move(keys);
}

std::shared_ptr<const CurveKeys> ProcessCurve() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_keys;
}

absl::Status MakeCurveServer(zmq::context_t& context, zmq::socket_t& socket,
                             std::shared_ptr<const CurveKeys> keys) {
  if (!keys->server.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this process serves, but ", keys->dir, " has no server.key (strata_keygen makes it)"));
  }
  if (keys->authorized.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this process serves, but ", keys->dir,
        "/authorized_keys lists no client key (strata_keygen adds them)"));
  }
  // One ZAP handler per context: binding its endpoint fails when the
  // context has one already.
  zmq::socket_t zap(context, zmq::socket_type::rep);
  zap.set(zmq::sockopt::linger, 0);
  try {
    zap.bind(kZapEndpoint);
    std::thread(ServeZap, std::move(zap), keys).detach();
  } catch (const zmq::error_t& e) {
    if (e.num() != EADDRINUSE) {
      return absl::UnavailableError(absl::StrCat("cannot start the ZAP handler: ", e.what()));
    }
  }
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, keys->server->secret_key);
  socket.set(zmq::sockopt::zap_domain, "strata");
  return absl::OkStatus();
}

void MakeCurveClient(zmq::socket_t& socket, const CurveKeys& keys) {
  socket.set(zmq::sockopt::curve_serverkey, keys.server_public);
  socket.set(zmq::sockopt::curve_publickey, keys.client.public_key);
  socket.set(zmq::sockopt::curve_secretkey, keys.client.secret_key);
}

std::optional<CurvePeer> ParseCurveUserId(const std::string& user_id) {
  CurvePeer peer;
  bool has_jobs = false;
  for (absl::string_view part : absl::StrSplit(user_id, ' ', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&part, "jobs=")) {
      absl::StatusOr<std::vector<uint64_t>> jobs = ParseJobList(std::string(part));
      if (!jobs.ok()) return std::nullopt;
      peer.jobs = *jobs;
      has_jobs = true;
    } else if (absl::ConsumePrefix(&part, "name=")) {
      peer.name = std::string(part);
    }
  }
  if (!has_jobs) return std::nullopt;
  return peer;
}

std::string DescribeHandshakeFailure(uint16_t event, int32_t value) {
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
    if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
      return "the peer does not use CURVE (no keys)";
    }
    if (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC) {
      return "the peer's CURVE handshake does not decrypt (another cluster's server key?)";
    }
    return absl::StrFormat("protocol error 0x%x in the handshake", value);
  }
  return absl::StrFormat("the CURVE handshake failed (%s): a peer without this cluster's keys?",
                         zmq_strerror(value));
}

}  // namespace strata
