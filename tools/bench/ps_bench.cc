#include "tools/bench/ps_bench.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/net/admission.h"
#include "core/net/connection_security.h"
#include "core/net/curve.h"
#include "core/net/ps_client.h"
#include "core/net/transport.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "core/train/metrics_writer.h"
#include "core/util/clock.h"
#include "core/util/ready_file.h"
#include "tools/bench/bench_server.h"
#include "tools/bench/harness/contender_environment.h"

namespace strata::bench {
namespace {

// The run's secrets, made once in a scratch directory: a job token, which
// every connection presents (as strata_launch gives every process of a
// cluster one), and CURVE keys for the "curve" transport. The server reads
// them from their files, this process's clients once installed. Discard()
// removes the directory.
class BenchSecrets {
 public:
  static void Discard() {
    BenchSecrets& secrets = Instance();
    if (!secrets.dir_.empty()) std::filesystem::remove_all(secrets.dir_);
    secrets.dir_.clear();
    secrets.keys_.reset();
  }
  static absl::StatusOr<const BenchSecrets*> Get() {
    BenchSecrets* secrets = &Instance();
    if (secrets->dir_.empty()) {
      char tmpl[] = "/tmp/strata_ps_bench_secrets_XXXXXX";
      if (::mkdtemp(tmpl) == nullptr) return absl::InternalError("cannot make a secrets directory");
      secrets->dir_ = tmpl;
      secrets->token_ = NewJobToken();
      std::ofstream(secrets->token_file()) << secrets->token_ << "\n";
      ::chmod(secrets->token_file().c_str(), 0600);
    }
    return secrets;
  }
  static absl::StatusOr<std::shared_ptr<const CurveKeys>> Keys() {
    STRATA_ASSIGN_OR_RETURN(const BenchSecrets* secrets, Get());
    BenchSecrets& s = Instance();
    if (s.keys_ == nullptr) {
      const std::string dir = secrets->dir_;
      STRATA_ASSIGN_OR_RETURN(const CurveKeyPair server, NewCurveKeyPair());
      STRATA_ASSIGN_OR_RETURN(const CurveKeyPair client, NewCurveKeyPair());
      STRATA_RETURN_IF_ERROR(WriteKeyFile(dir + "/server.key", server, true));
      STRATA_RETURN_IF_ERROR(WriteKeyFile(dir + "/server.pub", server, false));
      STRATA_RETURN_IF_ERROR(WriteKeyFile(dir + "/client.key", client, true));
      STRATA_RETURN_IF_ERROR(
          AppendAuthorizedKey(dir + "/authorized_keys", {{1}, client.public_key, "bench"}));
      STRATA_ASSIGN_OR_RETURN(CurveKeys loaded, LoadCurveKeys(dir));
      s.keys_ = std::make_shared<const CurveKeys>(std::move(loaded));
    }
    return s.keys_;
  }
  const std::string& dir() const { return dir_; }
  const std::string& token() const { return token_; }
  std::string token_file() const { return dir_ + "/token"; }

 private:
  static BenchSecrets& Instance() {
    static BenchSecrets* secrets = new BenchSecrets();
    return *secrets;
  }
  std::string dir_, token_;
  std::shared_ptr<const CurveKeys> keys_;
};

// This process's sockets present the run's token (and, for `transport`
// "curve", its keys) while one lives.
class ClientSecurity {
 public:
  static absl::StatusOr<ClientSecurity> For(const std::string& transport) {
    STRATA_ASSIGN_OR_RETURN(const BenchSecrets* secrets, BenchSecrets::Get());
    ConnectionSecurity security;
    security.token = secrets->token();
    if (transport == "curve") {
      STRATA_ASSIGN_OR_RETURN(security.curve, BenchSecrets::Keys());
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
absl::StatusOr<std::unique_ptr<PsClient>> ConnectClient(const std::string& address,
                                                        const std::string& transport, int rank) {
  STRATA_ASSIGN_OR_RETURN(const BenchSecrets* secrets, BenchSecrets::Get());
  PsClientOptions o;
  o.coordinator = address;
  o.shared_memory = transport == "shm";
  o.rank = rank;
  o.timeout = absl::Seconds(120);
  o.credentials.token = secrets->token();
  return PsClient::Connect(o);
}

// A strata_server in plain key-value mode: one tensor of `elements`
// floats, `workers` clients, over `transport`.
absl::StatusOr<std::unique_ptr<BenchServer>> StartKvServer(const std::string& transport,
                                                           int64_t elements, int workers) {
  std::vector<std::string> flags = {
      "--rank", "0", "--coordinator",
      transport == "tcp" || transport == "curve" ? "tcp://127.0.0.1:0" : "ipc://*",
      "--kv-sizes", std::to_string(elements), "--conv-workers", std::to_string(workers),
      "--max-message-mb", "2048"};
  STRATA_ASSIGN_OR_RETURN(const BenchSecrets* secrets, BenchSecrets::Get());
  flags.insert(flags.end(), {"--job-token-file", secrets->token_file()});
  if (transport == "curve") {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const CurveKeys> keys, BenchSecrets::Keys());
    flags.insert(flags.end(), {"--curve-keys", keys->dir});
  }
  return BenchServer::Start(flags);
}

struct Point {
  std::string transport;
  int workers;
  int mib;
  double gbps;
  double rounds;
};

// `workers` clients each push then pull one tensor of `elements` floats
// per round (BSP), for about `seconds`. Returns aggregate push+pull GB/s.
absl::StatusOr<Point> MeasureGoodput(const std::string& transport, int workers, int mib,
                                     double seconds) {
  const int64_t elements = static_cast<int64_t>(mib) << 18;  // MiB -> floats
  STRATA_ASSIGN_OR_RETURN(auto server, StartKvServer(transport, elements, workers));
  STRATA_ASSIGN_OR_RETURN(const ClientSecurity security, ClientSecurity::For(transport));
  std::vector<std::unique_ptr<PsClient>> clients(workers);
  std::vector<absl::Status> errors(workers);
  std::vector<int64_t> rounds_done(workers, 0);
  std::vector<double> elapsed(workers, 0.0);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      auto client = ConnectClient(server->address(), transport, w);
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
  return Point{transport, workers, mib, bytes / wall / 1e9, static_cast<double>(rounds)};
}

// One 4 KiB pull at a time from a strata_server over `transport`.
class PullLatency {
 public:
  static absl::StatusOr<std::unique_ptr<PullLatency>> Start(const std::string& transport) {
    auto p = std::unique_ptr<PullLatency>(new PullLatency());
    STRATA_ASSIGN_OR_RETURN(p->server_, StartKvServer(transport, kElements, 1));
    STRATA_ASSIGN_OR_RETURN(ClientSecurity security, ClientSecurity::For(transport));
    p->security_ = std::make_unique<ClientSecurity>(std::move(security));
    STRATA_ASSIGN_OR_RETURN(p->client_, ConnectClient(p->server_->address(), transport, -1));
    STRATA_RETURN_IF_ERROR(p->client_->kv().SetPlan(PartitionPlan::Build({kElements}, 1)));
    p->value_ = Tensor::Zeros({kElements});
    STRATA_RETURN_IF_ERROR(p->client_->kv().Wait(p->client_->kv().Init(0, p->value_)));
    return p;
  }
  ~PullLatency() {
    if (client_ != nullptr) (void)client_->Done();
  }
  // Microseconds of one pull.
  absl::StatusOr<double> Once() {
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

// A bare ZeroMQ DEALER/ROUTER ping-pong between this process and a forked
// echo process over `transport`: a small request out, a 4 KiB reply back,
// as a pull of one 4 KiB chunk is — the floor under Strata's pull latency.
class ZmqPingPong {
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
  ~ZmqPingPong() {
    dealer_.send(zmq::message_t(), zmq::send_flags::dontwait);  // the end
    for (int i = 0; i < 100 && ::waitpid(child_, nullptr, WNOHANG) == 0; ++i) ::usleep(10000);
    ::kill(child_, SIGKILL);
    ::waitpid(child_, nullptr, 0);
  }
  absl::StatusOr<double> Once() {
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

struct Latencies {
  std::vector<double> strata, bare;  // microseconds, sorted
};

// `rounds` pulls and, when `bare` is set, as many ping-pongs, alternated
// in blocks of 100 after 100 warm-up rounds each, so that both see the
// same moments of a shared, noisy machine.
absl::StatusOr<Latencies> MeasureLatencies(const std::string& transport, int rounds, bool bare) {
  STRATA_ASSIGN_OR_RETURN(auto pulls, PullLatency::Start(transport));
  std::unique_ptr<ZmqPingPong> ping;
  if (bare) {
    STRATA_ASSIGN_OR_RETURN(ping, ZmqPingPong::Start(transport));
  }
  Latencies out;
  constexpr int kBlock = 100;
  for (int done = -kBlock; done < rounds; done += kBlock) {
    for (int i = 0; i < kBlock; ++i) {
      STRATA_ASSIGN_OR_RETURN(const double us, pulls->Once());
      if (done >= 0) out.strata.push_back(us);
    }
    for (int i = 0; ping != nullptr && i < kBlock; ++i) {
      STRATA_ASSIGN_OR_RETURN(const double us, ping->Once());
      if (done >= 0) out.bare.push_back(us);
    }
  }
  std::sort(out.strata.begin(), out.strata.end());
  std::sort(out.bare.begin(), out.bare.end());
  return out;
}

// With both tcp and curve measured: CURVE's goodput as a share of plain
// tcp's (the median over the points both ran) and what it adds to a pull.
void PrintPriceOfCurve(nlohmann::json& report) {
  const auto& latency = report["pull_latency_us"];
  if (!latency.contains("tcp") || !latency.contains("curve")) return;
  std::map<std::pair<int, int>, std::map<std::string, double>> points;
  for (const auto& p : report["goodput"]) {
    points[{p["workers"].get<int>(), p["mib"].get<int>()}][p["transport"]] = p["gbps"];
  }
  std::vector<double> shares;
  for (const auto& [point, gbps] : points) {
    if (gbps.count("tcp") && gbps.count("curve")) shares.push_back(gbps.at("curve") / gbps.at("tcp"));
  }
  std::sort(shares.begin(), shares.end());
  const double share = shares.empty() ? 0.0 : shares[shares.size() / 2];
  const double added = latency["curve"]["p50"].get<double>() - latency["tcp"]["p50"].get<double>();
  std::printf("CURVE: goodput %.2fx plain tcp's (median of %zu points), pull latency p50 %+.1f us\n",
              share, shares.size(), added);
  report["curve_price"] = {{"goodput_share", share}, {"pull_p50_added_us", added}};
}

}  // namespace

double MeasureMemcpyGBps(size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  std::memcpy(b.data(), a.data(), bytes);
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const double t0 = MonotonicSeconds();
    std::memcpy(b.data(), a.data(), bytes);
    best = std::min(best, MonotonicSeconds() - t0);
  }
  return static_cast<double>(bytes) / best / 1e9;
}

absl::Status RunPsBench(const PsBenchOptions& o) {
  // The run's secrets go with it, however it ends.
  struct SecretsOfThisRun {
    ~SecretsOfThisRun() { BenchSecrets::Discard(); }
  } secrets_of_this_run;
  for (const std::string& transport : o.transports) {
    if (transport != "tcp" && transport != "ipc" && transport != "shm" && transport != "curve") {
      return absl::InvalidArgumentError(
          absl::StrCat("--transports: unknown transport \"", transport, "\" (tcp, ipc, shm, curve)"));
    }
  }
  std::printf(
      "strata_bench ps: BSP push+pull of one tensor per worker per round, 1 server, loopback\n");
  const double memcpy_gbps = MeasureMemcpyGBps(size_t{256} << 20);
  std::printf("machine: memcpy (1 thread, 256 MiB) %.1f GB/s\n\n", memcpy_gbps);
  std::printf("%9s %8s %10s %14s %8s\n", "transport", "workers", "tensor", "push+pull GB/s",
              "rounds");
  nlohmann::json report = {{"benchmark", "ps"}, {"memcpy_gbps", memcpy_gbps}};
  for (int workers : o.workers) {
    for (int mib : o.sizes_mib) {
      for (const std::string& transport : o.transports) {
        STRATA_ASSIGN_OR_RETURN(Point p,
                                MeasureGoodput(transport, workers, mib, o.seconds_per_point));
        std::printf("%9s %8d %6d MiB %14.2f %8.0f\n", p.transport.c_str(), p.workers, p.mib, p.gbps,
                    p.rounds);
        std::fflush(stdout);
        report["goodput"].push_back({{"transport", p.transport},
                                     {"workers", p.workers},
                                     {"mib", p.mib},
                                     {"gbps", p.gbps},
                                     {"rounds", p.rounds}});
      }
    }
  }
  std::printf("\n");
  for (const std::string& transport : o.transports) {
    // shm has no bare ZeroMQ counterpart, nor has CURVE here.
    const bool bare = transport == "tcp" || transport == "ipc";
    STRATA_ASSIGN_OR_RETURN(Latencies l, MeasureLatencies(transport, o.latency_pulls, bare));
    const double p50 = l.strata[l.strata.size() / 2];
    const double p99 = l.strata[l.strata.size() * 99 / 100];
    std::printf("pull latency (%s), 4 KiB tensor, %zu pulls: p50 %.1f us, p99 %.1f us",
                transport.c_str(), l.strata.size(), p50, p99);
    report["pull_latency_us"][transport] = {{"p50", p50}, {"p99", p99}, {"pulls", l.strata.size()}};
    if (bare) {
      const double bare_p50 = l.bare[l.bare.size() / 2];
      std::printf("; bare ZeroMQ ping-pong, alternated: p50 %.1f us; ratio %.2fx", bare_p50,
                  p50 / bare_p50);
      report["pull_latency_us"][transport]["zmq_ping_pong_p50"] = bare_p50;
      report["pull_latency_us"][transport]["ratio_to_zmq"] = p50 / bare_p50;
    }
    std::printf("\n");
  }
  PrintPriceOfCurve(report);
  if (!o.json_out.empty()) STRATA_RETURN_IF_ERROR(WriteJsonFile(o.json_out, report));
  return absl::OkStatus();
}

}  // namespace strata::bench
