// Physical limits of this machine, measured in the same run as a benchmark
// so that figures can be quoted as a fraction of what the hardware allows.
#ifndef STRATA_TOOLS_BENCH_MACHINE_LIMITS_H_
#define STRATA_TOOLS_BENCH_MACHINE_LIMITS_H_

#include <cstddef>

namespace strata::bench {

// Best-of-5 single-precision GEMM rate (GFLOP/s) for n x n x n through
// oneDNN's sgemm with `threads` threads.
double MeasureSgemmGflops(int n, int threads);

// Best-of-5 single-threaded memcpy bandwidth (GB/s) over `bytes`-sized
// buffers: the ceiling of any copy-based transport on this host.
double MeasureMemcpyGBps(size_t bytes);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_MACHINE_LIMITS_H_
