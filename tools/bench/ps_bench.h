// `strata_bench ps`: push+pull goodput of the parameter server on loopback
// for 1, 2, 4 workers and 4-256 MiB tensors, and the latency of small pulls,
// beside the machine's memcpy bandwidth (the ceiling of any copy-based
// transport on this host). Each point runs every transport back to back,
// so that they see the same moments of a shared machine; `--curve` (the
// transports tcp and curve) prices encryption.
#ifndef STRATA_TOOLS_BENCH_PS_BENCH_H_
#define STRATA_TOOLS_BENCH_PS_BENCH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace strata::bench {

struct PsBenchOptions {
  // "tcp" (127.0.0.1, what separate hosts use), "ipc" (Unix sockets) and
  // "shm" (headers over ipc, data through shared memory: what
  // strata_launch's processes on one host use). tcp and ipc run with
  // shared memory off.
  // "curve": tcp with every connection encrypted and authenticated
  // (ZeroMQ CURVE, core/net/curve.h), keys made for the run.
  std::vector<std::string> transports = {"tcp", "ipc", "shm"};
  std::vector<int> workers = {1, 2, 4};
  std::vector<int> sizes_mib = {4, 16, 64, 256};
  double seconds_per_point = 1.5;  // measured time per (workers, size)
  int latency_pulls = 2000;
  std::string json_out;
};

absl::Status RunPsBench(const PsBenchOptions& options);

// Single-threaded memcpy bandwidth over `bytes`-sized buffers, GB/s.
double MeasureMemcpyGBps(size_t bytes);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_PS_BENCH_H_
