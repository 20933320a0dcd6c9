#include "tools/bench/kv_contenders.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "absl/strings/str_cat.h"
#include "core/net/admission.h"
#include "core/net/connection_security.h"
#include "core/net/curve.h"
#include "core/net/ps_client.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "tools/bench/bench_server.h"

namespace strata::bench {

absl::Status CheckKvTransport(const std::string& transport) {
  if (transport == "tcp" || transport == "ipc" || transport == "shm" || transport == "curve") {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--transports: unknown transport \"", transport, "\" (tcp, ipc, shm, curve)"));
}

absl::StatusOr<KvSecrets> KvSecrets::Make() {
  STRATA_ASSIGN_OR_RETURN(ScratchDirectory folder,
                          ScratchDirectory::Make("strata_ps_bench_secrets"));
  KvSecrets secrets(std::move(folder));
  secrets.token_ = NewJobToken();
  std::ofstream(secrets.token_file()) << secrets.token_ << "\n";
  if (::chmod(secrets.token_file().c_str(), 0600) != 0) {
    return absl::InternalError(absl::StrCat("cannot write ", secrets.token_file()));
  }
  return secrets;
}

absl::StatusOr<std::shared_ptr<const CurveKeys>> KvSecrets::Keys() {
  if (keys_ != nullptr) return keys_;
  const std::string& dir = folder_.path();
  STRATA_ASSIGN_OR_RETURN(const CurveKeyPair server, NewCurveKeyPair());
  STRATA_ASSIGN_OR_RETURN(const CurveKeyPair client, NewCurveKeyPair());
  STRATA_RETURN_IF_ERROR(WriteKeyFile(dir + "/server.key", server, true));
  STRATA_RETURN_IF_ERROR(WriteKeyFile(dir + "/server.pub", server, false));
  STRATA_RETURN_IF_ERROR(WriteKeyFile(dir + "/client.key", client, true));
  STRATA_RETURN_IF_ERROR(
      AppendAuthorizedKey(dir + "/authorized_keys", {{1}, client.public_key, "bench"}));
  STRATA_ASSIGN_OR_RETURN(CurveKeys loaded, LoadCurveKeys(dir));
  keys_ = std::make_shared<const CurveKeys>(std::move(loaded));
  return keys_;
}

namespace {

// This process's sockets present the run's token (and, for `transport`
// "curve", its keys) while one lives.
class ClientSecurity {
 public:
  static absl::StatusOr<ClientSecurity> For(KvSecrets& secrets, const std::string& transport) {
    ConnectionSecurity security;
    security.token = secrets.token();
    if (transport == "curve") {
      STRATA_ASSIGN_OR_RETURN(security.curve, secrets.Keys());
    }
    InstallConnectionSecurity(security);
    return ClientSecurity(true);
  }
  ClientSecurity(ClientSecurity&& other) noexcept : installed_(other.installed_) {
    other.installed_ = false;
  }
  ~ClientSecurity() {
    if (installed_) InstallConnectionSecurity({});
  }

 private:
  explicit ClientSecurity(bool installed) : installed_(installed) {}
  bool installed_;
};

// A client of the run's server: `rank`, over `transport`.
absl::StatusOr<std::unique_ptr<PsClient>> ConnectClient(const KvSecrets& secrets,
                                                        const std::string& address,
                                                        const std::string& transport, int rank) {
  PsClientOptions o;
  o.coordinator = address;
  o.shared_memory = transport == "shm";
  o.rank = rank;
  o.timeout = absl::Seconds(120);
  o.credentials.token = secrets.token();
  return PsClient::Connect(o);
}

// A strata_server in plain key-value mode: one tensor of `elements`
// floats, `workers` clients, over `transport`.
absl::StatusOr<std::unique_ptr<BenchServer>> StartKvServer(KvSecrets& secrets,
                                                           const std::string& transport,
                                                           int64_t elements, int workers) {
  std::vector<std::string> flags = {
      "--rank",
      "0",
      "--coordinator",
      transport == "tcp" || transport == "curve" ? "tcp://127.0.0.1:0" : "ipc://*",
      "--kv-sizes",
      std::to_string(elements),
      "--conv-workers",
      std::to_string(workers),
      "--max-message-mb",
      "2048"};
  flags.insert(flags.end(), {"--job-token-file", secrets.token_file()});
  if (transport == "curve") {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const CurveKeys> keys, secrets.Keys());
    flags.insert(flags.end(), {"--curve-keys", keys->dir});
  }
  return BenchServer::Start(flags);
}

}  // namespace

absl::StatusOr<GoodputRun> MeasureGoodput(KvSecrets& secrets, const std::string& transport,
                                          int workers, int mib, double seconds) {
  const int64_t elements = static_cast<int64_t>(mib) << 18;  // MiB -> floats
  STRATA_ASSIGN_OR_RETURN(auto server, StartKvServer(secrets, transport, elements, workers));
  STRATA_ASSIGN_OR_RETURN(const ClientSecurity security, ClientSecurity::For(secrets, transport));
  std::vector<std::unique_ptr<PsClient>> clients(workers);
  std::vector<absl::Status> errors(workers);
  std::vector<int64_t> rounds_done(workers, 0);
  std::vector<double> elapsed(workers, 0.0);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      auto client = ConnectClient(secrets, server->address(), transport, w);
      if (!client.ok()) {
        errors[w] = client.status();
        return;
      }
      KvClient& kv = (*client)->kv();
      errors[w] = kv.SetPlan(PartitionPlan::Build({elements}, 1));
      if (!errors[w].ok()) return;
      Tensor grad = Tensor::Full({elements}, 1e-6f);
      Tensor value = Tensor::Zeros({elements});
      if (w == 0) {
        errors[w] = kv.Wait(kv.Init(0, value));
        if (!errors[w].ok()) return;
      }
      errors[w] = kv.Wait(kv.Pull(-1, 0, value));
      if (!errors[w].ok()) return;
      // Rounds are lockstep under BSP, so every worker runs the same count,
      // sized to move about `seconds` worth of data at 4 GB/s.
      const int64_t warmup = 2;
      const double round_bytes = 8.0 * static_cast<double>(elements) * workers;
      const int64_t target =
          warmup + std::clamp<int64_t>(static_cast<int64_t>(seconds * 4e9 / round_bytes), 4, 2000);
      double start = 0.0;
      for (int64_t r = 0; r < target; ++r) {
        if (r == warmup) start = MonotonicSeconds();
        Ticket push = kv.Push(r, 0, grad);
        Ticket pull = kv.Pull(r + 1, 0, value);
        errors[w] = kv.WaitAll({push, pull});
        if (!errors[w].ok()) return;
      }
      elapsed[w] = MonotonicSeconds() - start;
      rounds_done[w] = target - warmup;
      errors[w] = (*client)->Done();
      clients[w] = *std::move(client);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) STRATA_RETURN_IF_ERROR(e);
  double wall = 0.0;
  int64_t rounds = rounds_done[0];
  for (int w = 0; w < workers; ++w) {
    wall = std::max(wall, elapsed[w]);
    rounds = std::min(rounds, rounds_done[w]);
  }
  const double bytes =
      2.0 * static_cast<double>(elements) * 4.0 * workers * static_cast<double>(rounds);
  return GoodputRun{bytes / wall / 1e9, rounds};
}

namespace {

// The pulls of StartStrataPulls.
class PullLatency : public RoundTrip {
 public:
  static absl::StatusOr<std::unique_ptr<PullLatency>> Start(KvSecrets& secrets,
                                                            const std::string& transport) {
    auto p = std::unique_ptr<PullLatency>(new PullLatency());
    STRATA_ASSIGN_OR_RETURN(p->server_, StartKvServer(secrets, transport, kElements, 1));
    STRATA_ASSIGN_OR_RETURN(ClientSecurity security, ClientSecurity::For(secrets, transport));
    p->security_ = std::make_unique<ClientSecurity>(std::move(security));
    STRATA_ASSIGN_OR_RETURN(p->client_,
                            ConnectClient(secrets, p->server_->address(), transport, -1));
    STRATA_RETURN_IF_ERROR(p->client_->kv().SetPlan(PartitionPlan::Build({kElements}, 1)));
    p->value_ = Tensor::Zeros({kElements});
    STRATA_RETURN_IF_ERROR(p->client_->kv().Wait(p->client_->kv().Init(0, p->value_)));
    return p;
  }
  ~PullLatency() override {
    if (client_ != nullptr) (void)client_->Done();
  }
  absl::StatusOr<double> MicrosecondsOfOne() override {
    const double t0 = MonotonicSeconds();
    STRATA_RETURN_IF_ERROR(client_->kv().Wait(client_->kv().Pull(-1, 0, value_)));
    return (MonotonicSeconds() - t0) * 1e6;
  }

 private:
  static constexpr int64_t kElements = 1024;  // 4 KiB
  PullLatency() = default;
  std::unique_ptr<BenchServer> server_;
  std::unique_ptr<ClientSecurity> security_;  // for as long as the client pulls
  std::unique_ptr<PsClient> client_;
  Tensor value_;
};

// The ping-pong of StartZmqPingPong.
class ZmqPingPong : public RoundTrip {
 public:
  static absl::StatusOr<std::unique_ptr<ZmqPingPong>> Start(const std::string& transport) {
    int ready[2];
    if (::pipe(ready) != 0) return absl::InternalError("pipe failed");
    std::fflush(stdout);
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(ready[0]);
      Echo(transport, ready[1]);
      ::_exit(0);
    }
    ::close(ready[1]);
    char buffer[512];
    const ssize_t n = ::read(ready[0], buffer, sizeof(buffer));
    ::close(ready[0]);
    auto p = std::unique_ptr<ZmqPingPong>(new ZmqPingPong(child));
    if (n <= 0) return absl::InternalError("the ping-pong echo process did not start");
    p->dealer_.connect(std::string(buffer, static_cast<size_t>(n)));
    return p;
  }
  ~ZmqPingPong() override {
    dealer_.send(zmq::message_t(), zmq::send_flags::dontwait);  // the end
    for (int i = 0; i < 100 && ::waitpid(child_, nullptr, WNOHANG) == 0; ++i) ::usleep(10000);
    ::kill(child_, SIGKILL);
    ::waitpid(child_, nullptr, 0);
  }
  absl::StatusOr<double> MicrosecondsOfOne() override {
    const double t0 = MonotonicSeconds();
    dealer_.send(zmq::buffer(request_), zmq::send_flags::none);
    zmq::message_t reply;
    if (!dealer_.recv(reply)) return absl::InternalError("the echo process stopped answering");
    return (MonotonicSeconds() - t0) * 1e6;
  }

 private:
  explicit ZmqPingPong(pid_t child) : child_(child), dealer_(context_, zmq::socket_type::dealer) {
    dealer_.set(zmq::sockopt::rcvtimeo, 10000);
  }
  static void Echo(const std::string& transport, int ready_fd) {
    zmq::context_t context(1);
    zmq::socket_t router(context, zmq::socket_type::router);
    router.bind(transport == "tcp" ? std::string("tcp://127.0.0.1:0")
                                   : absl::StrCat("ipc:///tmp/strata-pingpong-", ::getpid()));
    const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
    (void)!::write(ready_fd, endpoint.data(), endpoint.size());
    ::close(ready_fd);
    const std::string payload(4096, 'x');
    while (true) {
      zmq::message_t identity, request;
      if (!router.recv(identity) || !router.recv(request) || request.size() == 0) return;
      router.send(identity, zmq::send_flags::sndmore);
      router.send(zmq::buffer(payload), zmq::send_flags::none);
    }
  }
  pid_t child_;
  zmq::context_t context_{1};
  zmq::socket_t dealer_;
  const std::string request_ = std::string(96, 'r');  // about a pull's header
};

}  // namespace

absl::StatusOr<std::unique_ptr<RoundTrip>> StartStrataPulls(KvSecrets& secrets,
                                                            const std::string& transport) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<PullLatency> pulls,
                          PullLatency::Start(secrets, transport));
  return std::unique_ptr<RoundTrip>(std::move(pulls));
}

absl::StatusOr<std::unique_ptr<RoundTrip>> StartZmqPingPong(const std::string& transport) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ZmqPingPong> ping, ZmqPingPong::Start(transport));
  return std::unique_ptr<RoundTrip>(std::move(ping));
}

}  // namespace strata::bench
