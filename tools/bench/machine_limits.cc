#include "tools/bench/machine_limits.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/ops/cpu/dnnl_runtime.h"
#include "core/tensor/tensor.h"
#include "core/util/clock.h"

namespace strata::bench {

double MeasureSgemmGflops(int n, int threads) {
  SetCpuThreads(threads);
  Tensor a = Tensor::Full({n, n}, 0.5f);
  Tensor b = Tensor::Full({n, n}, 0.25f);
  Tensor c = Tensor::Zeros({n, n});
  Sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);  // warm-up
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    Sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, dt);
  }
  return 2.0 * n * n * static_cast<double>(n) / best / 1e9;
}

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

}  // namespace strata::bench
