// PrefetchingLoader: a BatchLoader's batches made one step ahead on a thread
// of their own, so normalising and augmenting the next batch overlaps the
// current step's compute.
//
// ForStep(s, slice) returns the batch BatchLoader::ForStep(s, slice)
// returns (the same values); its thread then starts on s + 1 with the same
// slice. A batch it did not make ahead (the first, a jump such as a rewind
// after a server restart, or another slice: the shares changed) is made
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

  Batch ForStep(int64_t step, const std::optional<BatchSlice>& slice = std::nullopt);

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
  // A batch to make: a step and the slice of it.
  struct Order {
    int64_t step = 0;
    std::optional<BatchSlice> slice;
    bool operator==(const Order& o) const { return step == o.step && slice == o.slice; }
  };
  std::optional<Order> wanted_;  // what the thread should make next
  std::optional<Order> making_;  // what it is making now
  std::optional<std::pair<Order, Batch>> ready_;
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
