// What `strata_bench ps` times: a strata_server in plain key-value mode
// and this process's clients of it, over one transport:
//   "tcp"   127.0.0.1, what separate hosts use (shared memory off)
//   "ipc"   Unix sockets (shared memory off)
//   "shm"   headers over ipc, data through shared memory: what
//           strata_launch's processes on one host use
//   "curve" tcp with every connection encrypted and authenticated (ZeroMQ
//           CURVE, core/net/curve.h), with keys made for the run
// Every connection presents a job token made for the run, as strata_launch
// gives every process of a cluster one.
#ifndef STRATA_TOOLS_BENCH_KV_CONTENDERS_H_
#define STRATA_TOOLS_BENCH_KV_CONTENDERS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/util/scratch_directory.h"

namespace strata {
struct CurveKeys;
}  // namespace strata

namespace strata::bench {

// OK for a transport named above; otherwise an error naming it.
absl::Status CheckKvTransport(const std::string& transport);

// The run's secrets in a scratch folder of their own, removed with the
// object: a job token, which every connection presents, and CURVE keys for
// the "curve" transport, made on first use. The server reads them from
// their files; this process's clients get them installed while they run.
class KvSecrets {
 public:
  static absl::StatusOr<KvSecrets> Make();
  const std::string& token() const { return token_; }
  std::string token_file() const { return folder_.path() + "/token"; }
  // The folder strata_server's --curve-keys reads, with the keys in it.
  absl::StatusOr<std::shared_ptr<const CurveKeys>> Keys();

 private:
  explicit KvSecrets(ScratchDirectory folder) : folder_(std::move(folder)) {}
  ScratchDirectory folder_;
  std::string token_;
  std::shared_ptr<const CurveKeys> keys_;
};

struct GoodputRun {
  double gbps = 0;     // push + pull bytes of every worker per second
  int64_t rounds = 0;  // timed rounds (after two warm-up rounds)
};

// `workers` clients each push then pull one tensor of `mib` MiB per round
// (BSP) for about `seconds`, against a server started for the run.
absl::StatusOr<GoodputRun> MeasureGoodput(KvSecrets& secrets, const std::string& transport,
                                          int workers, int mib, double seconds);

// One round trip at a time, timed.
class RoundTrip {
 public:
  virtual ~RoundTrip() = default;
  virtual absl::StatusOr<double> MicrosecondsOfOne() = 0;
};

// Pulls of one 4 KiB tensor from a strata_server started for them.
absl::StatusOr<std::unique_ptr<RoundTrip>> StartStrataPulls(KvSecrets& secrets,
                                                            const std::string& transport);

// A bare ZeroMQ DEALER/ROUTER ping-pong with a forked echo process (tcp or
// ipc): a small request out, a 4 KiB reply back, as a pull of one 4 KiB
// chunk is; the floor under Strata's pull latency.
absl::StatusOr<std::unique_ptr<RoundTrip>> StartZmqPingPong(const std::string& transport);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_KV_CONTENDERS_H_
