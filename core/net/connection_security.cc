#include "core/net/connection_security.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "core/util/log.h"

namespace strata {
namespace {

constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";
constexpr char kZapDomain[] = "strata";
// ZMQ_ZAP_ENFORCE_DOMAIN, which zmq.h declares only with its draft API (the
// library takes it): a serving socket refuses every handshake when its
// context has no ZAP handler, instead of admitting every peer.
constexpr int kZapEnforceDomain = 93;
// The PLAIN user name clients present; the password is what is checked.
constexpr char kPlainUser[] = "strata";

std::mutex g_mutex;
ConnectionSecurity& Installed() {
  static ConnectionSecurity* security = new ConnectionSecurity();
  return *security;
}

Mechanism MechanismOf(const ConnectionSecurity& security) {
  if (security.curve != nullptr) return Mechanism::kCurve;
  if (!security.token.empty()) return Mechanism::kToken;
  return Mechanism::kOpen;
}

// One ZAP request (RFC 27): version, request id, domain, address, routing
// id, mechanism, then the mechanism's credentials (PLAIN: user name and
// password; CURVE: the client's 32-byte public key). The reply admits a
// client that proves itself under the setting the handler was started
// with; its user id says what the connection may speak for (CURVE: the
// key's jobs, which Admission checks).
std::vector<std::string> AnswerZap(const std::vector<zmq::message_t>& request,
                                   const ConnectionSecurity& security) {
  auto frame = [&](size_t i) { return i < request.size() ? request[i].to_string() : ""; };
  auto reply = [&](const char* code, const std::string& text, const std::string& user) {
    return std::vector<std::string>{"1.0", frame(1), code, text, user, ""};
  };
  const std::string mechanism = frame(5);
  const std::string peer = frame(3);
  if (security.curve != nullptr) {
    if (mechanism != "CURVE" || request.size() < 7 || request[6].size() != 32) {
      return reply("400", "a CURVE key is required", "");
    }
    char z85[41] = {};
    zmq_z85_encode(z85, static_cast<const uint8_t*>(request[6].data()), 32);
    std::optional<std::string> user = AdmittedCurveUser(*security.curve, z85);
    if (user.has_value()) return reply("200", "OK", *user);
    LogRefusal("refused a connection from %s: CURVE key %s is not in %s/authorized_keys",
               peer.c_str(), z85, security.curve->dir.c_str());
    return reply("400", "key not authorized", "");
  }
  if (mechanism == "PLAIN" && request.size() >= 8 && !security.token.empty() &&
      SameSecret(security.token, request[7].to_string())) {
    return reply("200", "OK", "");
  }
  LogRefusal("refused a connection from %s: it did not present the job token", peer.c_str());
  return reply("400", "the job token is required", "");
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
void ServeZap(zmq::socket_t socket, ConnectionSecurity security) {
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
      const std::vector<std::string> reply = AnswerZap(request, security);
      for (size_t i = 0; i < reply.size(); ++i) {
        const auto flags = i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
        RetryOnInterrupt([&] { return socket.send(zmq::buffer(reply[i]), flags); });
      }
    }
  } catch (const zmq::error_t& e) {
    // ETERM: the context is closing, so let it. Anything else leaves the
    // context without a handler: every handshake is then refused (the
    // sockets enforce the domain).
    if (e.num() != ETERM) {
      LogError("the connection admission (ZAP) handler stopped: %s; no new connection is admitted",
               e.what());
    }
  }
  socket.close();
}

// Starts `context`'s ZAP handler unless it has one.
absl::Status StartZapHandler(zmq::context_t& context, const ConnectionSecurity& security) {
  // One handler per context: binding its endpoint fails when the context
  // has one already.
  zmq::socket_t zap(context, zmq::socket_type::rep);
  zap.set(zmq::sockopt::linger, 0);
  try {
    zap.bind(kZapEndpoint);
  } catch (const zmq::error_t& e) {
    if (e.num() == EADDRINUSE) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat("cannot start the ZAP handler: ", e.what()));
  }
  try {
    std::thread(ServeZap, std::move(zap), security).detach();
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot start the ZAP handler: ", e.what()));
  }
  return absl::OkStatus();
}

// The host of a "tcp://HOST:PORT" endpoint, brackets stripped; "" for any
// other scheme.
std::string TcpHost(const std::string& endpoint) {
  if (!absl::StartsWith(endpoint, "tcp://")) return "";
  std::string host = endpoint.substr(6, endpoint.rfind(':') - 6);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace

bool SameSecret(const std::string& a, const std::string& b) {
  if (a.empty() || a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void InstallConnectionSecurity(ConnectionSecurity security) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Installed() = std::move(security);
}

ConnectionSecurity ProcessConnectionSecurity() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return Installed();
}

Mechanism ProcessMechanism() { return MechanismOf(ProcessConnectionSecurity()); }

const char* MechanismName(Mechanism mechanism) {
  switch (mechanism) {
    case Mechanism::kOpen:
      return "open";
    case Mechanism::kToken:
      return "token";
    case Mechanism::kCurve:
      return "CURVE";
  }
  return "?";
}

bool ServesThisHostOnly(const std::string& endpoint) {
  if (absl::StartsWith(endpoint, "ipc://") || absl::StartsWith(endpoint, "inproc://")) return true;
  const std::string host = TcpHost(endpoint);
  if (host == "localhost" || host == "lo") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

absl::StatusOr<Mechanism> SecureServerSocket(zmq::context_t& context, zmq::socket_t& socket,
                                             const std::string& endpoint) {
  const ConnectionSecurity security = ProcessConnectionSecurity();
  const Mechanism mechanism = MechanismOf(security);
  if (!ServesThisHostOnly(endpoint)) {
    if (mechanism == Mechanism::kOpen && !security.insecure) {
      return absl::FailedPreconditionError(absl::StrCat(
          "serving ", endpoint,
          " without a job token would let anyone who reaches it join "
          "the job: give the job token (--job-token-file FILE or $STRATA_JOB_TOKEN), or "
          "--insecure to serve openly all the same"));
    }
    static std::atomic<bool> warned{false};
    if (mechanism == Mechanism::kToken && !warned.exchange(true)) {
      LogWarning(
          "serving %s without CURVE: the job token and every message cross the network "
          "in plain text (--curve-keys encrypts them)",
          endpoint.c_str());
    }
  }
  if (mechanism == Mechanism::kOpen) return mechanism;
  if (mechanism == Mechanism::kCurve) {
    const CurveKeys& keys = *security.curve;
    if (!keys.server.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "this process serves, but ", keys.dir, " has no server.key (strata_keygen makes it)"));
    }
    if (keys.authorized.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("this process serves, but ", keys.dir,
                       "/authorized_keys lists no client key (strata_keygen adds them)"));
    }
  }
  STRATA_RETURN_IF_ERROR(StartZapHandler(context, security));
  const int enforce = 1;
  if (zmq_setsockopt(socket.handle(), kZapEnforceDomain, &enforce, sizeof(enforce)) != 0) {
    return absl::UnavailableError(absl::StrCat("this libzmq cannot enforce connection admission: ",
                                               zmq_strerror(zmq_errno())));
  }
  try {
    socket.set(zmq::sockopt::zap_domain, kZapDomain);
    if (mechanism == Mechanism::kCurve) {
      socket.set(zmq::sockopt::curve_server, 1);
      socket.set(zmq::sockopt::curve_secretkey, security.curve->server->secret_key);
    } else {
      socket.set(zmq::sockopt::plain_server, 1);
    }
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot make a ", MechanismName(mechanism), " server: ", e.what()));
  }
  return mechanism;
}

Mechanism SecureClientSocket(zmq::socket_t& socket) {
  const ConnectionSecurity security = ProcessConnectionSecurity();
  const Mechanism mechanism = MechanismOf(security);
  switch (mechanism) {
    case Mechanism::kOpen:
      break;
    case Mechanism::kToken:
      socket.set(zmq::sockopt::plain_username, kPlainUser);
      socket.set(zmq::sockopt::plain_password, security.token);
      break;
    case Mechanism::kCurve:
      socket.set(zmq::sockopt::curve_serverkey, security.curve->server_public);
      socket.set(zmq::sockopt::curve_publickey, security.curve->client.public_key);
      socket.set(zmq::sockopt::curve_secretkey, security.curve->client.secret_key);
      break;
  }
  return mechanism;
}

std::string DescribeHandshakeFailure(Mechanism mechanism, bool serving, uint16_t event,
                                     int32_t value) {
  // What most likely keeps the two ends apart, said from this end.
  auto apart = [&]() -> std::string {
    if (serving) {
      return mechanism == Mechanism::kCurve ? "the peer does not use CURVE (no keys)"
                                            : "the peer presents no job token";
    }
    switch (mechanism) {
      case Mechanism::kOpen:
        return "it takes only connections that present the job token (--job-token-file or "
               "$STRATA_JOB_TOKEN) or CURVE keys (--curve-keys), and this process has neither";
      case Mechanism::kToken:
        return "it takes no job token at the connection (it is open, or uses CURVE keys)";
      case Mechanism::kCurve:
        return "it does not use CURVE";
    }
    return "";
  };
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
    if (serving) return "the peer could not prove itself";
    return mechanism == Mechanism::kCurve
               ? "it does not admit this process's CURVE key (not in its authorized_keys, or "
                 "not for this job)"
               : "it does not take the job token this process presents";
  }
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
    if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) return apart();
    if (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC) {
      return "the CURVE handshake does not decrypt (another cluster's server key?)";
    }
    return absl::StrFormat("protocol error 0x%x in the handshake", value);
  }
  // The other end hung up during the handshake: which end noticed the
  // mismatch first is a race, so the other sees only a broken connection.
  return absl::StrCat("the handshake broke off (", zmq_strerror(value), "): ", apart(), "?");
}

}  // namespace strata
