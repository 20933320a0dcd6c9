// The device-sharing policies of scheduler/crossover.h, driven by threads
// that stand in for jobs' StepLoops: who holds the device when, in which
// order the waiting get it, and that a job that leaves never blocks the
// others.
#include "scheduler/crossover.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

// A clock the test moves while the arbiter's threads read it.
class TestClock {
 public:
  double seconds() const { return seconds_.load(); }
  void Advance(double by) { seconds_.store(seconds_.load() + by); }

 private:
  std::atomic<double> seconds_{0};
};

using namespace std::chrono_literals;

// Whether `job` blocks in Acquire within a few seconds: that a thread
// waits for the device is observed, not assumed after a sleep.
::testing::AssertionResult BlocksInAcquire(const DeviceArbiter& arbiter, int job) {
  for (int i = 0; i < 1000 * testing::ScaledSeconds(1); ++i) {
    if (arbiter.Waiting(job)) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(5ms);
  }
  return ::testing::AssertionFailure() << "job " << job << " never waited for the device";
}

// A pause long enough for a woken thread to act on a wrong grant (for
// checks that something did not happen), scaled for slow builds.
void Settle() { std::this_thread::sleep_for(50ms * testing::ScaledSeconds(1)); }

// Calls `acquire` on a thread and says when it returned.
class Acquirer {
 public:
  explicit Acquirer(DevicePolicy& device)
      : thread_([this, &device] {
          device.Acquire();
          got_ = true;
        }) {}
  ~Acquirer() { thread_.join(); }
  bool got() const { return got_; }
  // Waits up to a few seconds for the Acquire to return.
  bool WaitGot() const {
    for (int i = 0; i < 500 * testing::ScaledSeconds(1) && !got_; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    return got_;
  }

 private:
  std::atomic<bool> got_{false};
  std::thread thread_;
};

TEST(SharingPolicyTest, NamesParseAndUnknownOnesAreRefused) {
  for (SharingPolicy p :
       {SharingPolicy::kExclusive, SharingPolicy::kNaive, SharingPolicy::kCrossover}) {
    absl::StatusOr<SharingPolicy> parsed = ParseSharingPolicy(SharingPolicyName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  absl::StatusOr<SharingPolicy> bad = ParseSharingPolicy("fifo");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "unknown sharing policy 'fifo' (exclusive, naive or crossover)");
}

TEST(CrossoverTest, AJobWaitsWhileAnotherComputesAndTakesTheTokenAtItsWait) {
  DeviceArbiter arbiter(SharingPolicy::kCrossover, {{"a"}, {"b"}});
  auto a = arbiter.ForJob(0), b = arbiter.ForJob(1);
  a->Acquire();  // a computes
  {
    Acquirer b_wants(*b);
    ASSERT_TRUE(BlocksInAcquire(arbiter, 1)) << "b computed while a held the device";
    a->Release();  // a waits on its peers: b computes
    EXPECT_TRUE(b_wants.WaitGot());
  }
  {
    Acquirer a_wants(*a);  // a's wait is over; b still computes
    ASSERT_TRUE(BlocksInAcquire(arbiter, 0));
    b->Release();
    EXPECT_TRUE(a_wants.WaitGot());
  }
  a->Release();
  const auto usage = arbiter.usage();
  EXPECT_EQ(usage[0].grants, 2);
  EXPECT_EQ(usage[1].grants, 1);
}

TEST(CrossoverTest, TheLongestWaitingJobTakesTheToken) {
  DeviceArbiter arbiter(SharingPolicy::kCrossover, {{"a"}, {"b"}, {"c"}});
  auto a = arbiter.ForJob(0), b = arbiter.ForJob(1), c = arbiter.ForJob(2);
  a->Acquire();
  auto b_wants = std::make_unique<Acquirer>(*b);
  ASSERT_TRUE(BlocksInAcquire(arbiter, 1));  // b waits first
  auto c_wants = std::make_unique<Acquirer>(*c);
  ASSERT_TRUE(BlocksInAcquire(arbiter, 2));
  a->Release();
  ASSERT_TRUE(b_wants->WaitGot());
  EXPECT_TRUE(arbiter.Waiting(2)) << "c took the token though b waited longer";
  b->Release();
  EXPECT_TRUE(c_wants->WaitGot());
  c->Release();
}

TEST(CrossoverTest, WeightsShareDeviceTimeInProportion) {
  // Both always waiting: the one with less held time per weight goes next.
  std::vector<TokenCandidate> waiting = {{0, 1, 3.0, 3.0}, {1, 2, 1.5, 1.0}};
  EXPECT_EQ(PickTokenHolder(waiting), 0u);  // 1.0 per weight against 1.5
  waiting[0].held_seconds = 6.0;
  EXPECT_EQ(PickTokenHolder(waiting), 1u);  // 2.0 against 1.5
  // Equal weights: the longest waiting, whatever it has held.
  std::vector<TokenCandidate> equal = {{0, 5, 0.0, 1.0}, {1, 4, 9.0, 1.0}};
  EXPECT_EQ(PickTokenHolder(equal), 1u);

  // Through the arbiter, on a clock the test moves: heavy (weight 3) has
  // held the device 2 s and light (weight 1) 1 s, each while the other
  // waited for it (contested time, what weights share). When both wait at
  // once, heavy goes first though light waited longer (0.67 s per weight
  // against 1 s); the longest-waiting rule alone would pick light.
  TestClock now;
  DeviceArbiter arbiter(SharingPolicy::kCrossover, {{"heavy", 3.0}, {"light", 1.0}, {"gate"}},
                        [&now] { return now.seconds(); });
  auto heavy = arbiter.ForJob(0), light = arbiter.ForJob(1), gate = arbiter.ForJob(2);
  heavy->Acquire();
  auto light_first = std::make_unique<Acquirer>(*light);
  ASSERT_TRUE(BlocksInAcquire(arbiter, 1));
  now.Advance(2);
  heavy->Release();
  ASSERT_TRUE(light_first->WaitGot());
  auto heavy_then = std::make_unique<Acquirer>(*heavy);
  ASSERT_TRUE(BlocksInAcquire(arbiter, 0));
  now.Advance(1);
  light->Release();
  ASSERT_TRUE(heavy_then->WaitGot());
  heavy->Release();  // no time passed: nothing more counted
  gate->Acquire();
  auto light_wants = std::make_unique<Acquirer>(*light);
  ASSERT_TRUE(BlocksInAcquire(arbiter, 1));  // light waits first
  auto heavy_wants = std::make_unique<Acquirer>(*heavy);
  ASSERT_TRUE(BlocksInAcquire(arbiter, 0));
  gate->Release();
  ASSERT_TRUE(heavy_wants->WaitGot());
  EXPECT_TRUE(arbiter.Waiting(1));
  now.Advance(2);  // heavy: 4 s contested, 1.33 per weight: light's turn
  heavy->Release();
  EXPECT_TRUE(light_wants->WaitGot());
  light->Release();
  const auto usage = arbiter.usage();
  EXPECT_DOUBLE_EQ(usage[0].held_seconds, 4.0);
  EXPECT_DOUBLE_EQ(usage[1].held_seconds, 1.0);
}

TEST(CrossoverTest, DeviceTimeNobodyElseWantedIsNotCharged) {
  TestClock now;
  DeviceArbiter arbiter(SharingPolicy::kCrossover, {{"heavy", 3.0}, {"light", 1.0}},
                        [&now] { return now.seconds(); });
  auto heavy = arbiter.ForJob(0), light = arbiter.ForJob(1);
  // Light computes 10 s alone (heavy waits on its peers meanwhile)...
  light->Acquire();
  now.Advance(10);
  light->Release();
  // ...and is not behind for it: once both want the device, each is
  // charged from then on. Heavy holds; light asks.
  heavy->Acquire();
  auto light_wants = std::make_unique<Acquirer>(*light);
  ASSERT_TRUE(BlocksInAcquire(arbiter, 1));
  now.Advance(0.2);  // heavy: 0.2 s contested, 0.067 per weight; light: 0
  EXPECT_TRUE(heavy->ShouldYield());
  heavy->Release();
  EXPECT_TRUE(light_wants->WaitGot());
  light->Release();
  EXPECT_DOUBLE_EQ(arbiter.usage()[1].held_seconds, 10.0);  // usage counts it all
}

TEST(CrossoverTest, AHolderAheadOfItsShareYieldsToAWaitingJobBehindIt) {
  TestClock now;
  DeviceArbiter arbiter(SharingPolicy::kCrossover, {{"heavy", 3.0}, {"light", 1.0}},
                        [&now] { return now.seconds(); });
  auto heavy = arbiter.ForJob(0), light = arbiter.ForJob(1);
  light->Acquire();
  auto heavy_wants = std::make_unique<Acquirer>(*heavy);
  ASSERT_TRUE(BlocksInAcquire(arbiter, 0));
  now.Advance(1);  // light: 1 s contested, 1 per weight
  light->Release();
  ASSERT_TRUE(heavy_wants->WaitGot());
  EXPECT_FALSE(heavy->ShouldYield());  // nobody waits
  auto light_wants = std::make_unique<Acquirer>(*light);
  ASSERT_TRUE(BlocksInAcquire(arbiter, 1));
  now.Advance(2.9);  // heavy: 0.97 per weight, still behind
  EXPECT_FALSE(heavy->ShouldYield());
  EXPECT_FALSE(light->ShouldYield());  // not the holder
  now.Advance(0.2);                          // heavy: 1.03 per weight, ahead of light
  EXPECT_TRUE(heavy->ShouldYield());
  heavy->Release();
  EXPECT_TRUE(light_wants->WaitGot());
  light->Release();
  // Equal weights never yield: a job keeps the device for its iteration.
  DeviceArbiter equal(SharingPolicy::kCrossover, {{"a"}, {"b"}}, [&now] { return now.seconds(); });
  auto a = equal.ForJob(0), b = equal.ForJob(1);
  a->Acquire();
  auto b_wants = std::make_unique<Acquirer>(*b);
  ASSERT_TRUE(BlocksInAcquire(equal, 1));
  now.Advance(100);
  EXPECT_FALSE(a->ShouldYield());
  a->Release();
  EXPECT_TRUE(b_wants->WaitGot());
  b->Release();
}

// Jobs that each run `iterations` iterations of two compute phases with a
// wait between them, recording who is inside an iteration.
struct IterationLog {
  std::mutex mu;
  std::vector<std::string> events;  // "a+" iteration begins, "a-" ends
  int inside = 0, most_inside = 0;
  void Add(const std::string& e, int delta) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(e);
    inside += delta;
    most_inside = std::max(most_inside, inside);
  }
};

void RunIterations(DevicePolicy& device, const std::string& job, int iterations,
                   IterationLog& log) {
  for (int i = 0; i < iterations; ++i) {
    device.Acquire();
    log.Add(job + "+", 1);
    device.Release();
    std::this_thread::sleep_for(5ms);  // a wait on peers
    device.Acquire();
    std::this_thread::sleep_for(1ms);
    log.Add(job + "-", -1);
    device.Release();
    device.IterationEnds();
  }
}

TEST(ExclusiveTest, JobsTakeTurnsByWholeIterationsInJobOrder) {
  DeviceArbiter arbiter(SharingPolicy::kExclusive, {{"a"}, {"b"}});
  IterationLog log;
  {
    auto a = arbiter.ForJob(0), b = arbiter.ForJob(1);
    std::thread tb(RunIterations, std::ref(*b), "b", 3, std::ref(log));  // b starts first
    ASSERT_TRUE(BlocksInAcquire(arbiter, 1));  // and waits for a's turn
    std::thread ta(RunIterations, std::ref(*a), "a", 3, std::ref(log));
    ta.join();
    tb.join();
  }
  // No overlap, even across the waits inside an iteration; a first (job
  // order), then strictly alternating.
  EXPECT_EQ(log.most_inside, 1);
  EXPECT_EQ(log.events, (std::vector<std::string>{"a+", "a-", "b+", "b-", "a+", "a-", "b+", "b-",
                                                  "a+", "a-", "b+", "b-"}));
}

TEST(ExclusiveTest, AJobThatLeavesNeverBlocksTheOthers) {
  DeviceArbiter arbiter(SharingPolicy::kExclusive, {{"a"}, {"b"}});
  IterationLog log;
  auto a = arbiter.ForJob(0);
  auto b = arbiter.ForJob(1);
  std::thread ta([&] {
    RunIterations(*a, "a", 1, log);
    a.reset();  // a finished (or failed): it leaves
  });
  std::thread tb(RunIterations, std::ref(*b), "b", 3, std::ref(log));
  ta.join();
  tb.join();
  EXPECT_EQ(log.events, (std::vector<std::string>{"a+", "a-", "b+", "b-", "b+", "b-", "b+", "b-"}));
}

// Two processes, two jobs, each job with one worker on each process that
// meets its peer every iteration (a BSP exchange). Exclusive turns in the
// same order on both processes always finish; were each process to let
// whichever job came first hold its device, job b could hold process 1
// while job a holds process 0, each waiting for its peer: a deadlock.
TEST(ExclusiveTest, TwoProcessesSharingTwoJobsNeverDeadlock) {
  struct Rendezvous {  // both workers of a job meet once per iteration
    std::mutex mu;
    std::condition_variable cv;
    int arrived = 0;
    int64_t generation = 0;
    bool Meet() {
      std::unique_lock<std::mutex> lock(mu);
      const int64_t g = generation;
      if (++arrived == 2) {
        arrived = 0;
        ++generation;
        cv.notify_all();
        return true;
      }
      return cv.wait_for(lock, 5s, [&] { return generation != g; });
    }
  };
  DeviceArbiter p0(SharingPolicy::kExclusive, {{"a"}, {"b"}});
  DeviceArbiter p1(SharingPolicy::kExclusive, {{"a"}, {"b"}});
  Rendezvous meet[2];
  std::atomic<int> missed{0};
  auto worker = [&](DeviceArbiter& process, int job, int delay_ms) {
    auto device = process.ForJob(job);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    for (int i = 0; i < 5; ++i) {
      device->Acquire();
      device->Release();  // the exchange: a wait on the peer
      if (!meet[job].Meet()) ++missed;
      device->Acquire();
      device->Release();
      device->IterationEnds();
    }
  };
  // b reaches process 1 first, a reaches process 0 first.
  std::thread a0(worker, std::ref(p0), 0, 0), b0(worker, std::ref(p0), 1, 30),
      a1(worker, std::ref(p1), 0, 30), b1(worker, std::ref(p1), 1, 0);
  a0.join();
  b0.join();
  a1.join();
  b1.join();
  EXPECT_EQ(missed.load(), 0);
}

TEST(NaiveTest, JobsComputeAtOnce) {
  DeviceArbiter arbiter(SharingPolicy::kNaive, {{"a"}, {"b"}});
  auto a = arbiter.ForJob(0), b = arbiter.ForJob(1);
  a->Acquire();
  Acquirer b_wants(*b);
  EXPECT_TRUE(b_wants.WaitGot());  // no waiting for a
  a->Release();
  b->Release();
}

TEST(CrossoverTest, AJobThatLeavesWhileHoldingTheTokenLetsTheOthersOn) {
  DeviceArbiter arbiter(SharingPolicy::kCrossover, {{"a"}, {"b"}});
  auto a = arbiter.ForJob(0), b = arbiter.ForJob(1);
  a->Acquire();
  Acquirer b_wants(*b);
  ASSERT_TRUE(BlocksInAcquire(arbiter, 1));
  a.reset();  // a failed mid-phase
  EXPECT_TRUE(b_wants.WaitGot());
  b->Release();
}

TEST(CrossoverTest, AJobOutOfTheTurnsComputesAtOnceAndTheOthersStillTakeTurns) {
  DeviceArbiter arbiter(SharingPolicy::kCrossover, {{"a"}, {"b"}, {"c"}});
  auto a = arbiter.ForJob(0), b = arbiter.ForJob(1), c = arbiter.ForJob(2);
  EXPECT_TRUE(a->TakesTurns());
  c->SetTakesTurns(false);  // device.sharing=naive, between c's iterations
  a->Acquire();
  {
    Acquirer c_wants(*c);
    EXPECT_TRUE(c_wants.WaitGot()) << "c waited for a though it left the turns";
    Acquirer b_wants(*b);  // b still takes turns: a holds the token
    ASSERT_TRUE(BlocksInAcquire(arbiter, 1)) << "b computed while a held the token";
    c->Release();  // c's release hands nothing on
    Settle();
    EXPECT_TRUE(arbiter.Waiting(1));
    a->Release();
    EXPECT_TRUE(b_wants.WaitGot());
  }
  // c back in the turns: it waits for b's token.
  c->SetTakesTurns(true);
  {
    Acquirer c_wants(*c);
    ASSERT_TRUE(BlocksInAcquire(arbiter, 2)) << "c computed while b held the token";
    b->Release();
    EXPECT_TRUE(c_wants.WaitGot());
  }
  c->Release();
  const auto usage = arbiter.usage();
  EXPECT_EQ(usage[2].grants, 2);
}

TEST(SharingPolicyTest, OnlyCrossoverHasTurnsToLeave) {
  for (SharingPolicy p : {SharingPolicy::kExclusive, SharingPolicy::kNaive}) {
    DeviceArbiter arbiter(p, {{"a"}, {"b"}});
    EXPECT_FALSE(arbiter.ForJob(0)->TakesTurns()) << SharingPolicyName(p);
  }
  EXPECT_FALSE(AlwaysHeldDevice().TakesTurns());
}

}  // namespace
}  // namespace strata
