// ClientIoLoop: each part polls its own items, in the order it added them,
// with the events it sets before each poll, and is never called after Stop.
#include "core/net/client_io_loop.h"

#include <array>
#include <atomic>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "absl/synchronization/notification.h"

namespace strata {
namespace {

// A part that polls the read ends of pipes and records what it saw.
class PipeWatcher : public ClientIoLoop::Part {
 public:
  explicit PipeWatcher(int pipes) : fds_(pipes) {
    for (auto& fd : fds_) EXPECT_EQ(::pipe(fd.data()), 0);
  }
  ~PipeWatcher() override {
    for (auto& fd : fds_) {
      ::close(fd[0]);
      ::close(fd[1]);
    }
  }
  std::vector<zmq::pollitem_t> Items() const {
    std::vector<zmq::pollitem_t> items;
    for (const auto& fd : fds_) items.push_back({nullptr, fd[0], ZMQ_POLLIN, 0});
    return items;
  }
  void Write(int pipe) { ASSERT_EQ(::write(fds_[pipe][1], "x", 1), 1); }

  absl::Duration BeforePoll(absl::Span<zmq::pollitem_t> items) override {
    EXPECT_EQ(items.size(), fds_.size());
    for (auto& item : items) item.events = listening_.load() ? ZMQ_POLLIN : 0;
    return absl::Milliseconds(5);
  }
  void AfterPoll(absl::Span<const zmq::pollitem_t> items) override {
    turns_.fetch_add(1);
    for (size_t i = 0; i < items.size(); ++i) {
      EXPECT_EQ(items[i].fd, fds_[i][0]);  // its own items, in order
      if ((items[i].revents & ZMQ_POLLIN) == 0) continue;
      char c = 0;
      ASSERT_EQ(::read(fds_[i][0], &c, 1), 1);
      read_from_ = static_cast<int>(i);
      if (!seen_.HasBeenNotified()) seen_.Notify();
    }
  }

  std::atomic<bool> listening_{true};
  std::atomic<int> turns_{0};
  std::atomic<int> read_from_{-1};
  absl::Notification seen_;

 private:
  std::vector<std::array<int, 2>> fds_;
};

TEST(ClientIoLoopTest, EachPartReadsItsOwnItemsInTheOrderItAddedThem) {
  PipeWatcher first(1), second(2);
  ClientIoLoop loop;
  loop.Add(&first, first.Items());
  loop.Add(&second, second.Items());
  ASSERT_TRUE(loop.Start().ok());
  second.Write(1);
  ASSERT_TRUE(second.seen_.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(second.read_from_.load(), 1);
  EXPECT_FALSE(first.seen_.HasBeenNotified());
  EXPECT_GT(first.turns_.load(), 0);  // called every turn, ready or not
  loop.Stop();
}

TEST(ClientIoLoopTest, APartThatClearsItsEventsIsNotToldOfInputUntilItListensAgain) {
  PipeWatcher watcher(1);
  watcher.listening_.store(false);
  ClientIoLoop loop;
  loop.Add(&watcher, watcher.Items());
  ASSERT_TRUE(loop.Start().ok());
  watcher.Write(0);
  while (watcher.turns_.load() < 5) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_FALSE(watcher.seen_.HasBeenNotified());
  watcher.listening_.store(true);
  loop.Wake();
  EXPECT_TRUE(watcher.seen_.WaitForNotificationWithTimeout(absl::Seconds(30)));
  loop.Stop();
  const int turns = watcher.turns_.load();
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_EQ(watcher.turns_.load(), turns);  // nothing after Stop
}

}  // namespace
}  // namespace strata
