#include "core/data/prefetching_loader.h"

#include <algorithm>

#include "core/util/clock.h"
#include "core/util/log.h"

namespace strata {
namespace {
// A caller waiting for more than this share of its time is held up by the loader.
constexpr double kBottleneckShare = 0.10;
}  // namespace

PrefetchingLoader::PrefetchingLoader(BatchLoader& loader)
    : loader_(loader),
      window_(std::max<int64_t>(10, loader.steps_per_epoch())),
      thread_([this] { Run(); }) {}

PrefetchingLoader::~PrefetchingLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void PrefetchingLoader::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || wanted_.has_value(); });
    if (stop_) return;
    const Order order = *wanted_;
    wanted_.reset();
    making_ = order;
    lock.unlock();
    Batch batch = loader_.ForStep(order.step, order.slice);
    lock.lock();
    making_.reset();
    ready_.emplace(order, std::move(batch));
    cv_.notify_all();
  }
}

Batch PrefetchingLoader::ForStep(int64_t step, const std::optional<BatchSlice>& slice) {
  const double start = MonotonicSeconds();
  const Order order{step, slice};
  Batch batch;
  {
    std::unique_lock<std::mutex> lock(mu_);
    const auto ahead = [&] {
      return (ready_ && ready_->first == order) || (making_ && *making_ == order);
    };
    if (!(ready_ && ready_->first == order)) ++waits_;
    if (!ahead()) {
      // Not prepared: let the thread finish whatever it is making, then ask
      // it for this batch (only it touches the loader).
      cv_.wait(lock, [&] { return !making_.has_value(); });
      ready_.reset();
      wanted_ = order;
      cv_.notify_all();
    }
    cv_.wait(lock, [&] { return ready_ && ready_->first == order; });
    batch = std::move(ready_->second);
    ready_.reset();
    wanted_ = Order{step + 1, slice};
    cv_.notify_all();
  }
  const double now = MonotonicSeconds();
  Account(now - start, last_call_ < 0 ? 0.0 : now - last_call_);
  last_call_ = now;
  return batch;
}

void PrefetchingLoader::Account(double waited, double since_last) {
  waited_seconds_ += waited;
  if (since_last <= 0) return;  // the first call has no step to compare with
  window_waited_ += waited;
  window_elapsed_ += since_last;
  if (++window_calls_ < window_) return;
  const double share = window_waited_ / window_elapsed_;
  if (share > kBottleneckShare) {
    LogWarning(
        "the data loader is the bottleneck: over the last %lld steps, %.0f%% of the time went to "
        "waiting for batches (%.1f ms per step); give the workers more cores or fewer threads "
        "each, or turn off augmentation",
        static_cast<long long>(window_calls_), 100.0 * share,
        1000.0 * window_waited_ / static_cast<double>(window_calls_));
  }
  window_waited_ = window_elapsed_ = 0;
  window_calls_ = 0;
}

}  // namespace strata
