#include "core/net/client_io_loop.h"

#include <algorithm>
#include <cstdint>

#include <sys/eventfd.h>
#include <unistd.h>

namespace strata {

namespace {
// The longest a poll waits when no part asks for less.
constexpr absl::Duration kLongestPoll = absl::Milliseconds(50);
}  // namespace

ClientIoLoop::ClientIoLoop() : wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  items_.push_back({nullptr, wake_fd_, ZMQ_POLLIN, 0});
}

ClientIoLoop::~ClientIoLoop() {
  Stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ClientIoLoop::Add(Part* part, std::vector<zmq::pollitem_t> items) {
  parts_.push_back({part, items_.size(), items.size()});
  items_.insert(items_.end(), items.begin(), items.end());
}

absl::Status ClientIoLoop::Start() {
  if (wake_fd_ < 0) return absl::InternalError("cannot create the I/O loop's eventfd");
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void ClientIoLoop::Wake() {
  const uint64_t one = 1;
  // A full counter (never in practice) still wakes the poll.
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void ClientIoLoop::Stop() {
  stop_.store(true);
  Wake();
  if (thread_.joinable()) thread_.join();
}

void ClientIoLoop::Run() {
  const absl::Span<zmq::pollitem_t> all(items_);
  while (!stop_.load()) {
    absl::Duration wait = kLongestPoll;
    for (const Registered& r : parts_) {
      wait = std::min(wait, r.part->BeforePoll(all.subspan(r.first_item, r.item_count)));
    }
    try {
      // Rounded up: a part due in under a millisecond is not spun for.
      const int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(wait, absl::Milliseconds(1)));
      zmq::poll(items_.data(), items_.size(), std::chrono::milliseconds(std::max<int64_t>(0, ms)));
    } catch (const zmq::error_t&) {
      continue;  // interrupted: poll again
    }
    if (items_[0].revents & ZMQ_POLLIN) {
      uint64_t wakes = 0;
      (void)!::read(wake_fd_, &wakes, sizeof(wakes));
    }
    if (stop_.load()) break;
    for (const Registered& r : parts_) {
      r.part->AfterPoll(all.subspan(r.first_item, r.item_count));
    }
  }
}

}  // namespace strata
