// PrefetchingLoader: a BatchLoader's batches made one step ahead on a thread
// of their own, so normalising and augmenting the next batch overlaps the
// current step's compute.
//
// ForStep(s) returns the batch BatchLoader::ForStep(s) returns (the same
// values); its thread then starts on s + 1. A step it did not make ahead
// (the first, or a jump such as a rewind after a server restart) is made
// while the call waits. Only its thread touches the BatchLoader.
//
// It watches itself: when, over an epoch's worth of steps, the caller spent
// more than a tenth of its time waiting for batches, it logs a warning once
// per such stretch saying so, with the share. Not thread-safe: one caller.
#ifndef STRATA_CORE_DATA_PREFETCHING_LOADER_H_
#define STRATA_CORE_DATA_PREFETCHING_LOADER_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

#include "core/data/batch_loader.h"

namespace strata {

class PrefetchingLoader {
 public:
  // `loader` must outlive this object.
  explicit PrefetchingLoader(BatchLoader& loader);
  ~PrefetchingLoader();  // stops and joins the thread
  PrefetchingLoader(const PrefetchingLoader&) = delete;
  PrefetchingLoader& operator=(const PrefetchingLoader&) = delete;

  Batch ForStep(int64_t step);

  // Seconds ForStep spent waiting for batches, in all.
  double waited_seconds() const { return waited_seconds_; }
  // Calls whose batch was not ready when asked for (the first, jumps, and
  // a loader slower than the steps).
  int64_t waits() const { return waits_; }

 private:
  void Run();
  // Accounts one call that waited `waited` of the `since_last` seconds since
  // the previous call, and warns when waiting dominates.
  void Account(double waited, double since_last);

  BatchLoader& loader_;
  const int64_t window_;  // steps per bottleneck check

  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<int64_t> wanted_;  // the step the thread should make next
  std::optional<int64_t> making_;  // the step it is making now
  std::optional<std::pair<int64_t, Batch>> ready_;
  bool stop_ = false;

  double waited_seconds_ = 0;
  int64_t waits_ = 0;
  double last_call_ = -1;
  double window_waited_ = 0, window_elapsed_ = 0;
  int64_t window_calls_ = 0;

  std::thread thread_;  // last: starts after every member is set
};

}  // namespace strata

#endif  // STRATA_CORE_DATA_PREFETCHING_LOADER_H_
