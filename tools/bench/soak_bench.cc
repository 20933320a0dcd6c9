#include "tools/bench/soak_bench.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/net/ps_client.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/json_file.h"
#include "core/util/statistics.h"
#include "tools/bench/bench_server.h"
#include "tools/bench/harness/plot.h"

namespace strata::bench {
namespace {

// Resident memory of process `pid` in bytes (VmRSS), 0 when unreadable.
int64_t ResidentBytes(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      int64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

uint32_t KeyOf(int k) { return static_cast<uint32_t>(k); }

struct Round {
  double at;       // seconds since the start, when it ended
  double seconds;  // its latency
};

// The servers of the soak, server 0 the coordinator; each serves the
// clients' `sizes` keys under ASP.
absl::StatusOr<std::vector<std::unique_ptr<BenchServer>>> StartServers(
    const SoakOptions& o, const std::vector<int64_t>& sizes) {
  std::vector<std::string> size_list;
  for (int64_t s : sizes) size_list.push_back(std::to_string(s));
  auto flags = [&](int rank, const std::string& coordinator) {
    std::vector<std::string> f = {
        "--rank",     std::to_string(rank),          "--coordinator",  coordinator,
        "--servers",  std::to_string(o.servers),     "--conv-workers", std::to_string(o.clients),
        "--kv-sizes", absl::StrJoin(size_list, ","), "--consistency",  "asp"};
    if (rank > 0) f.insert(f.end(), {"--bind", "tcp://127.0.0.1:0"});
    return f;
  };
  std::vector<std::unique_ptr<BenchServer>> servers;
  STRATA_ASSIGN_OR_RETURN(auto first, BenchServer::Start(flags(0, "tcp://127.0.0.1:0")));
  const std::string coordinator = first->address();
  servers.push_back(std::move(first));
  for (int r = 1; r < o.servers; ++r) {
    STRATA_ASSIGN_OR_RETURN(auto server, BenchServer::Start(flags(r, coordinator)));
    servers.push_back(std::move(server));
  }
  return servers;
}

// A client of the soak, connected, its values pulled once: ready for its
// first round.
struct SoakClient {
  std::unique_ptr<PsClient> client;
  std::vector<Tensor> values, grads;
};

// Client `w`, connected to the servers at `coordinator`; client 0 sets the
// keys' values, which every client's first pull waits for (so the clients
// are connected side by side).
absl::StatusOr<SoakClient> ConnectClient(const SoakOptions& o, int w,
                                         const std::string& coordinator,
                                         const std::vector<int64_t>& sizes) {
  PsClientOptions co;
  co.coordinator = coordinator;
  co.rank = w;
  co.shared_memory = false;
  co.timeout = absl::Seconds(60);
  SoakClient c;
  STRATA_ASSIGN_OR_RETURN(c.client, PsClient::Connect(co));
  KvClient& kv = c.client->kv();
  STRATA_RETURN_IF_ERROR(kv.SetPlan(PartitionPlan::Build(sizes, o.servers)));
  for (int64_t size : sizes) {
    c.values.push_back(Tensor::Zeros({size}));
    c.grads.push_back(Tensor::Full({size}, 1e-6f));
  }
  if (w == 0) {
    std::vector<Ticket> inits;
    for (int k = 0; k < o.keys; ++k) inits.push_back(kv.Init(KeyOf(k), c.values[k]));
    STRATA_RETURN_IF_ERROR(kv.WaitAll(inits));
  }
  std::vector<Ticket> first;
  for (int k = 0; k < o.keys; ++k) first.push_back(kv.Pull(-1, KeyOf(k), c.values[k]));
  STRATA_RETURN_IF_ERROR(kv.WaitAll(first));
  return c;
}

// Pushes and pulls every key each round until `end` (or `stop`); every
// round it finished, timed from `start`.
absl::StatusOr<std::vector<Round>> RunRounds(const SoakOptions& o, SoakClient& c, double start,
                                             double end, const std::atomic<bool>& stop) {
  KvClient& kv = c.client->kv();
  std::vector<Round> rounds;
  for (int64_t r = 0; !stop.load() && MonotonicSeconds() < end; ++r) {
    const double t0 = MonotonicSeconds();
    std::vector<Ticket> tickets;
    for (int k = 0; k < o.keys; ++k) {
      tickets.push_back(kv.Push(r, KeyOf(k), c.grads[k]));
      tickets.push_back(kv.Pull(-1, KeyOf(k), c.values[k]));
    }
    STRATA_RETURN_IF_ERROR(kv.WaitAll(tickets));
    const double t1 = MonotonicSeconds();
    rounds.push_back({t1 - start, t1 - t0});
  }
  STRATA_RETURN_IF_ERROR(c.client->Done());
  return rounds;
}

// Runs `work(w)` for every client at once; the first error, naming the
// client, or OK.
absl::Status ForEveryClient(int clients, const std::function<absl::Status(int w)>& work) {
  std::vector<absl::Status> errors(clients);
  std::vector<std::thread> threads;
  for (int w = 0; w < clients; ++w) threads.emplace_back([&, w] { errors[w] = work(w); });
  for (std::thread& t : threads) t.join();
  for (int w = 0; w < clients; ++w) {
    if (!errors[w].ok()) return WithContext(errors[w], absl::StrCat("client ", w));
  }
  return absl::OkStatus();
}

// The rounds' latencies and the servers' memory in each of o.windows
// windows of the run, printed as a table; the report's "windows".
nlohmann::json Windows(const SoakOptions& o, const std::vector<Round>& rounds,
                       const std::vector<MemorySample>& memory, size_t servers) {
  const double total = o.minutes * 60;
  nlohmann::json windows = nlohmann::json::array();
  std::printf("%10s %8s %10s %10s  %s\n", "window (s)", "rounds", "p50 (ms)", "p99 (ms)",
              "server RSS (MiB)");
  for (int i = 0; i < o.windows; ++i) {
    const double from = total * i / o.windows, to = total * (i + 1) / o.windows;
    std::vector<double> latencies;
    for (const Round& r : rounds) {
      // The last window also takes the rounds that ended after the deadline.
      if (r.at >= from && (r.at < to || i == o.windows - 1)) latencies.push_back(r.seconds * 1e3);
    }
    std::vector<double> rss_mib(servers, 0.0);
    for (const MemorySample& m : memory) {
      if (m.at < to) {
        for (size_t s = 0; s < servers; ++s) rss_mib[s] = m.rss[s] / 1048576.0;
      }
    }
    nlohmann::json w = {{"start_seconds", from},
                        {"end_seconds", to},
                        {"rounds", latencies.size()},
                        {"p50_ms", Quantile(latencies, 0.5)},
                        {"p99_ms", Quantile(latencies, 0.99)},
                        {"rss_mib", rss_mib}};
    std::vector<std::string> rss_text;
    for (double v : rss_mib) rss_text.push_back(absl::StrFormat("%.1f", v));
    std::printf("%4.0f-%-5.0f %8zu %10.2f %10.2f  %s\n", from, to, latencies.size(),
                w["p50_ms"].get<double>(), w["p99_ms"].get<double>(),
                absl::StrJoin(rss_text, " / ").c_str());
    windows.push_back(w);
  }
  return windows;
}

// Each server's RSS growth from the first sample after the warm-up to the
// last, as a share.
std::vector<double> RssGrowth(const std::vector<MemorySample>& memory, double warmup_end,
                              size_t servers) {
  std::vector<double> growth(servers, 0.0);
  const auto after_warmup = std::find_if(memory.begin(), memory.end(),
                                         [&](const MemorySample& m) { return m.at >= warmup_end; });
  if (after_warmup == memory.end()) return growth;
  for (size_t s = 0; s < servers; ++s) {
    const double from = static_cast<double>(after_warmup->rss[s]);
    const double to = static_cast<double>(memory.back().rss[s]);
    growth[s] = from > 0 ? (to - from) / from : 0.0;
  }
  return growth;
}

}  // namespace

absl::Status RunSoak(const SoakOptions& o) {
  if (!(o.minutes > 0) || o.clients < 1 || o.servers < 1 || o.keys < 1 || o.key_elements < 1 ||
      o.windows < 1) {
    return absl::InvalidArgumentError(
        "soak: --minutes > 0, --clients, --servers, --keys and --windows >= 1");
  }
  const std::vector<int64_t> sizes(static_cast<size_t>(o.keys), o.key_elements);
  STRATA_ASSIGN_OR_RETURN(const std::vector<std::unique_ptr<BenchServer>> servers,
                          StartServers(o, sizes));
  std::printf("soak: %d clients, %d servers, %d keys of %lld floats, %.1f minutes (tcp, ASP)\n",
              o.clients, o.servers, o.keys, static_cast<long long>(o.key_elements), o.minutes);
  std::fflush(stdout);

  // Every client connects first: the windows time the rounds, not the
  // start-up (which a loaded machine stretches past the first window).
  std::vector<SoakClient> ready(o.clients);
  STRATA_RETURN_IF_ERROR(ForEveryClient(o.clients, [&](int w) -> absl::Status {
    STRATA_ASSIGN_OR_RETURN(ready[w], ConnectClient(o, w, servers.front()->address(), sizes));
    return absl::OkStatus();
  }));
  const double start = MonotonicSeconds();
  const double end = start + o.minutes * 60;
  absl::Mutex mu;
  std::vector<Round> rounds;
  std::vector<std::string> errors;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int w = 0; w < o.clients; ++w) {
    clients.emplace_back([&, w] {
      absl::StatusOr<std::vector<Round>> mine = RunRounds(o, ready[w], start, end, stop);
      absl::MutexLock lock(&mu);
      if (mine.ok()) {
        rounds.insert(rounds.end(), mine->begin(), mine->end());
      } else {
        errors.push_back(absl::StrCat("client ", w, ": ", mine.status().message()));
      }
    });
  }
  // Memory, once a second, while the clients run.
  std::vector<MemorySample> memory;
  while (MonotonicSeconds() < end) {
    {
      absl::MutexLock lock(&mu);
      if (!errors.empty()) break;
    }
    MemorySample m{MonotonicSeconds() - start, {}};
    for (const auto& s : servers) m.rss.push_back(ResidentBytes(s->pid()));
    memory.push_back(m);
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  stop.store(true);
  for (auto& t : clients) t.join();

  const double warmup_end = o.minutes * 60 * o.warmup_fraction;
  const nlohmann::json windows = Windows(o, rounds, memory, servers.size());
  const std::vector<double> growth = RssGrowth(memory, warmup_end, servers.size());
  std::vector<double> round_ends;
  for (const Round& r : rounds) round_ends.push_back(r.at);
  std::vector<double> per_round;
  const absl::Status leak =
      JudgeMemory(memory, round_ends, warmup_end, o.max_bytes_per_round, &per_round);
  std::vector<std::string> growth_text;
  for (double g : growth) growth_text.push_back(absl::StrFormat("%+.2f%%", g * 100));
  std::vector<std::string> per_round_text;
  for (double b : per_round) per_round_text.push_back(absl::StrFormat("%.0f", b));
  std::printf(
      "rounds: %zu; errors: %zu; server RSS growth after the warm-up (%.0f s): %s (bytes per "
      "round: %s)\n",
      rounds.size(), errors.size(), warmup_end, absl::StrJoin(growth_text, ", ").c_str(),
      absl::StrJoin(per_round_text, ", ").c_str());
  for (const std::string& e : errors) std::printf("  error: %s\n", e.c_str());
  nlohmann::json report = {{"clients", o.clients},    {"servers", o.servers},
                           {"keys", o.keys},          {"key_elements", o.key_elements},
                           {"minutes", o.minutes},    {"warmup_seconds", warmup_end},
                           {"rounds", rounds.size()}, {"errors", errors},
                           {"rss_growth", growth},    {"rss_bytes_per_round", per_round},
                           {"windows", windows}};
  if (!o.json_out.empty()) STRATA_RETURN_IF_ERROR(WriteJsonFile(o.json_out, report));
  if (!o.plot.empty()) {
    STRATA_RETURN_IF_ERROR(DrawReport(report, o.plot, "windows"));
    std::printf("plot: %s\n", o.plot.c_str());
  }
  if (!errors.empty()) {
    return absl::InternalError(
        absl::StrCat(errors.size(), " clients failed; the first: ", errors.front()));
  }
  return leak;
}

absl::Status JudgeMemory(const std::vector<MemorySample>& memory,
                         const std::vector<double>& round_ends, double warmup_end,
                         double max_bytes_per_round, std::vector<double>* per_round) {
  per_round->clear();
  const auto first = std::find_if(memory.begin(), memory.end(),
                                  [&](const MemorySample& m) { return m.at >= warmup_end; });
  if (first == memory.end()) return absl::OkStatus();
  const MemorySample& last = memory.back();
  const int64_t rounds = std::count_if(round_ends.begin(), round_ends.end(),
                                       [&](double at) { return at >= first->at && at <= last.at; });
  for (size_t s = 0; s < last.rss.size(); ++s) {
    const double grew = static_cast<double>(last.rss[s] - first->rss[s]);
    per_round->push_back(rounds > 0 ? grew / static_cast<double>(rounds) : 0.0);
  }
  for (size_t s = 0; s < per_round->size(); ++s) {
    if ((*per_round)[s] > max_bytes_per_round) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "server %zu kept %.0f bytes per round after the warm-up (%.1f MiB over %lld rounds; the "
          "limit is %.0f): a leak",
          s, (*per_round)[s], (last.rss[s] - first->rss[s]) / 1048576.0,
          static_cast<long long>(rounds), max_bytes_per_round));
    }
  }
  return absl::OkStatus();
}

}  // namespace strata::bench
