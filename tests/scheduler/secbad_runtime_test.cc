// SeCBAD on a running job's knobs (scheduler/secbad): the worker-speed
// context of batch.shares (its fit, file, reader and cost model), the
// runtime environment its policies train in, knob policy files and their
// refusals, and the controllers on simulated stragglers: each re-tunes the
// shares soon after a conv worker slows down and again when it recovers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/ops/cpu/dnnl_runtime.h"
#include "core/util/rng.h"
#include "scheduler/secbad/changepoint_controller.h"
#include "scheduler/secbad/knob_policy.h"
#include "scheduler/secbad/link_rate_context.h"
#include "scheduler/secbad/runtime_environment.h"
#include "scheduler/secbad/secbad_controller.h"
#include "scheduler/secbad/worker_speed_context.h"

namespace strata::secbad {
namespace {

// Two conv workers at 0.5 ms per row (each reading 10% off), iterations
// of `shares` over a global batch of 64, conv worker 1 `slowdown` times
// slower; 3 ms of overhead.
std::vector<SpeedSample> Iterations(const std::string& shares, double slowdown, int n,
                                    uint64_t seed) {
  Rng rng(seed);
  const std::vector<int64_t> rows = shares == "1:1"   ? std::vector<int64_t>{32, 32}
                                    : shares == "3:1" ? std::vector<int64_t>{48, 16}
                                                      : std::vector<int64_t>{16, 48};
  std::vector<SpeedSample> out;
  for (int i = 0; i < n; ++i) {
    SpeedSample s;
    s.rows = rows;
    for (int r = 0; r < 2; ++r) {
      const double per_row = 0.0005 * (r == 1 ? slowdown : 1.0) * std::exp(0.1 * rng.Normal());
      s.compute_seconds.push_back(per_row * static_cast<double>(rows[r]));
    }
    s.wall_seconds = std::max(s.compute_seconds[0], s.compute_seconds[1]) + 0.003;
    out.push_back(s);
  }
  return out;
}

std::shared_ptr<const WorkerSpeedContext> FittedShares() {
  std::map<std::string, std::vector<std::vector<SpeedSample>>> runs;
  uint64_t seed = 1;
  for (const std::string value : {"1:1", "3:1", "1:3"}) {
    runs[value].push_back(Iterations(value, 1.0, 60, seed++));
    runs[value].push_back(Iterations(value, 4.0, 60, seed++));
  }
  absl::StatusOr<std::shared_ptr<const WorkerSpeedContext>> c =
      WorkerSpeedContext::Fit("ps", 64, 2, runs);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(WorkerSpeedContextTest, TheFitRecoversSpeedOverheadAndNoiseAndPicksTheShares) {
  const auto c = FittedShares();
  EXPECT_NEAR(c->overhead_seconds("1:1"), 0.003, 1e-9);
  // The lower quartile of every reading: the unslowed workers' speed.
  EXPECT_NEAR(c->seconds_per_row(), 0.0005, 0.0001);
  EXPECT_NEAR(c->noise(), 0.1, 0.03);
  EXPECT_EQ(c->values(), (std::vector<std::string>{"1:1", "1:3", "3:1"}));
  EXPECT_EQ(c->rows("3:1"), (std::vector<int64_t>{48, 16}));
  const double normal = std::log(0.0005);
  // max(32, 32) x 0.5 ms + 3 ms; conv worker 1 four times slower: 3:1 wins.
  EXPECT_NEAR(c->IterationSeconds("1:1", {normal, normal}), 0.019, 1e-9);
  EXPECT_EQ(c->Best({normal, normal}), "1:1");
  EXPECT_EQ(c->Best({normal, normal + std::log(4.0)}), "3:1");
  EXPECT_EQ(c->Best({normal + std::log(4.0), normal}), "1:3");
  // The file reads back as the same model.
  auto again = KnobContextFromJson(c->ToJson(), "shares.json");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->kind(), "worker-speed");
  EXPECT_EQ((*again)->ToJson(), c->ToJson());
}

// Iterations in which one conv worker hiccuped (five times as long, once)
// are the outliers the fit counts, and the file keeps their share; runs
// without any have none.
TEST(WorkerSpeedContextTest, TheFitCountsIterationsWithAHiccupAsOutliers) {
  EXPECT_EQ(FittedShares()->trace().outliers, 0.0);
  EXPECT_EQ(FittedShares()->outliers().rate, 0.0);
  std::map<std::string, std::vector<std::vector<SpeedSample>>> runs;
  uint64_t seed = 1;
  for (const std::string value : {"1:1", "3:1", "1:3"}) {
    runs[value].push_back(Iterations(value, 1.0, 60, seed++));
    runs[value].push_back(Iterations(value, 4.0, 60, seed++));
  }
  for (auto [value, run, iteration, worker] :
       {std::tuple{"1:1", 0, 10, 1}, {"1:1", 1, 40, 0}, {"3:1", 0, 25, 0}}) {
    runs[value][run][iteration].compute_seconds[worker] *= 5;
  }
  auto c = *WorkerSpeedContext::Fit("ps", 64, 2, runs);
  EXPECT_DOUBLE_EQ(c->trace().outliers, 3.0 / 360);  // 3 of 6 runs x 60 iterations
  const OutlierModel outliers = c->outliers();
  EXPECT_DOUBLE_EQ(outliers.rate, 3.0 / 360);
  const double usual = std::log(c->seconds_per_row());
  EXPECT_EQ(outliers.low, std::vector<double>(2, usual - kOutlierSpread));
  EXPECT_EQ(outliers.high, std::vector<double>(2, usual + kOutlierSpread));
  auto again = KnobContextFromJson(c->ToJson(), "shares.json");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_DOUBLE_EQ((*again)->outliers().rate, 3.0 / 360);
}

TEST(WorkerSpeedContextTest, BadFilesAndSamplesAreRefusedByName) {
  nlohmann::json j = FittedShares()->ToJson();
  j["values"]["1:1:1"] = {{"overhead_seconds", 0.003}};
  EXPECT_EQ(KnobContextFromJson(j, "shares.json").status().message(),
            "shares.json: values.1:1:1: batch shares 1:1:1 give 3 weights for 2 conv workers "
            "(one each)");
  j = FittedShares()->ToJson();
  j["values"]["3:1"]["overhead_seconds"] = -1;
  EXPECT_NE(KnobContextFromJson(j, "shares.json").status().message().find(">= 0"),
            std::string::npos);
  j = FittedShares()->ToJson();
  j.erase("seconds_per_row");
  EXPECT_EQ(KnobContextFromJson(j, "shares.json").status().message(),
            "shares.json.seconds_per_row: missing field");
  j = FittedShares()->ToJson();
  j["context"] = "weather";
  EXPECT_EQ(KnobContextFromJson(j, "shares.json").status().message(),
            "shares.json.context: unknown kind \"weather\" (link-rate or worker-speed)");
  j = FittedShares()->ToJson();
  j["trace"]["spread"] = 0.5;
  EXPECT_NE(KnobContextFromJson(j, "shares.json").status().message().find("the spread in [1, 10]"),
            std::string::npos);
  j = FittedShares()->ToJson();
  j["trace"]["outliers"] = 1;
  EXPECT_EQ(KnobContextFromJson(j, "shares.json").status().message(),
            "shares.json: trace: slow_probability must be in [0, 1], 1 <= min_slowdown <= "
            "max_slowdown, the spread in [1, 10], and the outliers in [0, 1)");
  std::map<std::string, std::vector<std::vector<SpeedSample>>> one = {
      {"1:1", {Iterations("1:1", 1.0, 10, 1)}}};
  EXPECT_NE(WorkerSpeedContext::Fit("ps", 64, 2, one).status().message().find("two or more"),
            std::string::npos);
  one["3:1"] = {{SpeedSample{{0.01}, {48}, 0.02}}};
  EXPECT_NE(WorkerSpeedContext::Fit("ps", 64, 2, one).status().message().find("one compute time"),
            std::string::npos);
}

TEST(WorkerSpeedContextTest, SegmentsSpreadEveryWorkersSpeedAboutTheUsualOne) {
  nlohmann::json j = FittedShares()->ToJson();
  j["trace"]["slow_probability"] = 0;  // the spread alone
  j["trace"]["spread"] = 1.25;
  auto context = *KnobContextFromJson(j, "shares.json");
  EXPECT_EQ(context->ToJson()["trace"]["spread"], 1.25);
  const double usual = std::log(FittedShares()->seconds_per_row());
  Rng rng(3);
  double lowest = 1e9, highest = -1e9;
  for (int k = 0; k < 2000; ++k) {
    for (double c : context->SampleContext(rng)) {
      lowest = std::min(lowest, c - usual);
      highest = std::max(highest, c - usual);
    }
  }
  EXPECT_GE(lowest, -std::log(1.25));
  EXPECT_LE(highest, std::log(1.25));
  EXPECT_LT(lowest, -0.9 * std::log(1.25));  // the whole range is drawn
  EXPECT_GT(highest, 0.9 * std::log(1.25));
  j["trace"]["spread"] = 1;  // every worker at the usual speed
  context = *KnobContextFromJson(j, "shares.json");
  for (double c : context->SampleContext(rng)) EXPECT_DOUBLE_EQ(c, usual);
}

IterationRecord Record(int rank, int64_t iteration, double compute, int64_t rows,
                       const std::string& shares = "") {
  IterationRecord r;
  r.process = "conv worker " + std::to_string(rank);
  r.iteration = iteration;
  r.compute_seconds = compute;
  r.rows = rows;
  if (!shares.empty()) r.knobs["batch.shares"] = shares;
  return r;
}

TEST(WorkerSpeedContextTest, TheReaderWaitsForEveryConvWorkerAndSkipsNewBatchSizes) {
  auto reader = FittedShares()->NewReader();
  // Each worker's first two iterations are start-up.
  for (int64_t i : {0, 1}) {
    EXPECT_FALSE(reader->Take(Record(0, i, 0.032, 32, "1:1")).has_value());
    EXPECT_FALSE(reader->Take(Record(1, i, 0.032, 32)).has_value());
  }
  // Iteration 2: conv worker 1's record comes later (relayed).
  EXPECT_FALSE(reader->Take(Record(0, 2, 0.016, 32, "1:1")).has_value());
  EXPECT_FALSE(reader->Take(Record(0, 3, 0.016, 32, "1:1")).has_value());
  auto seen = reader->Take(Record(1, 2, 0.064, 32));
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->iteration, 2);
  EXPECT_EQ(seen->in_force, "1:1");
  EXPECT_NEAR(seen->values[0], std::log(0.0005), 1e-12);
  EXPECT_NEAR(seen->values[1], std::log(0.002), 1e-12);
  // A worker whose rows changed (3:1 from iteration 4) is not read that once.
  EXPECT_TRUE(reader->Take(Record(1, 3, 0.064, 32)).has_value());
  EXPECT_FALSE(reader->Take(Record(0, 4, 0.024, 48, "3:1")).has_value());
  EXPECT_FALSE(reader->Take(Record(1, 4, 0.032, 16)).has_value());
  EXPECT_FALSE(reader->Take(Record(0, 5, 0.024, 48, "3:1")).has_value());
  EXPECT_TRUE(reader->Take(Record(1, 5, 0.032, 16)).has_value());
  // A record for an iteration already read, and another process's, are not.
  EXPECT_FALSE(reader->Take(Record(1, 5, 0.032, 16)).has_value());
  IterationRecord fc = Record(0, 6, 0.01, 64);
  fc.process = "fc worker 0";
  EXPECT_FALSE(reader->Take(fc).has_value());
}

TEST(RuntimeEnvironmentTest, TracesFollowTheSeedAndARequestTakesForceAfterTheLag) {
  RuntimeEnvironmentOptions o;
  o.episode_iterations = 400;
  o.lag = 3;
  auto a = *RuntimeEnvironment::Create(FittedShares(), o, 7);
  auto b = *RuntimeEnvironment::Create(FittedShares(), o, 7);
  const int start = a->in_force();
  const int other = (start + 1) % 3;
  // Whatever is asked for, the contexts (and their changes) are the seed's.
  for (int t = 0; t < 400; ++t) {
    EXPECT_EQ(a->context(), b->context()) << t;
    const RuntimeEnvironment::Outcome oa = a->Step(t >= 10 ? other : start);
    b->Step(start);
    EXPECT_EQ(a->in_force(), t < 13 ? start : other) << t;
    EXPECT_GT(oa.efficiency, 0);
    EXPECT_LE(oa.efficiency, 1 + 1e-12);
    EXPECT_EQ(oa.done, t == 399);
  }
  EXPECT_EQ(a->changes(), b->changes());
  EXPECT_FALSE(a->changes().empty());
  // The fastest value in force is efficiency 1.
  a->Reset();
  const std::string best = FittedShares()->Best(a->context());
  const int best_index = FittedShares()->IndexOf(best);
  for (int t = 0; t < 4; ++t) a->Step(best_index);
  EXPECT_EQ(a->in_force(), best_index);
}

// A link-rate cost model file of wire.format (fp32 and bf16) with `trace`.
nlohmann::json WireFormatCostModel(const nlohmann::json& trace) {
  return {
      {"context", "link-rate"},
      {"knob", "wire.format"},
      {"mode", "ps"},
      {"trace", trace},
      {"values",
       {{"fp32",
         {{"local_seconds", 0.05}, {"fixed_seconds", 0.005}, {"transfer_seconds_at_1gbit", 0.2}}},
        {"bf16",
         {{"local_seconds", 0.05}, {"fixed_seconds", 0.03}, {"transfer_seconds_at_1gbit", 0.1}}}}}};
}

// A link-rate cost model whose trace says 5% of readings are outliers:
// the file keeps it, the runtime environment draws that share of readings
// from anywhere in the range the cost model reads, and a share out of
// [0, 1) is refused by name.
TEST(RuntimeEnvironmentTest, ALinkRateTraceWithOutliersDrawsThemAndKeepsThemInItsFile) {
  nlohmann::json file = WireFormatCostModel(
      {{"min_rate_gbit", 0.5}, {"max_rate_gbit", 2.0}, {"noise", 0.05}, {"outliers", 0.05}});
  absl::StatusOr<std::shared_ptr<const KnobContext>> context = KnobContextFromJson(file, "c.json");
  ASSERT_TRUE(context.ok()) << context.status();
  EXPECT_EQ((*context)->ToJson()["trace"]["outliers"], 0.05);
  const OutlierModel outliers = (*context)->outliers();
  EXPECT_EQ(outliers.rate, 0.05);
  EXPECT_NEAR(outliers.low[0], std::log(KnobCostModel::kSlowestRateGbit), 1e-12);
  EXPECT_NEAR(outliers.high[0], std::log(KnobCostModel::kFastestRateGbit), 1e-12);

  RuntimeEnvironmentOptions o;
  o.episode_iterations = 20000;
  auto env = *RuntimeEnvironment::Create(*context, o, 3);
  int far = 0;
  for (int t = 0; t < 20000; ++t) {
    const double truth = env->context()[0];
    // Normal readings stay within 6 noise deviations; a uniform one over
    // [ln 0.001, ln 1000] lands that far from the truth 97% of the time.
    far += std::abs(env->Step(-1).seen[0] - truth) > 0.3;
  }
  EXPECT_NEAR(far / 20000.0, 0.05 * 0.97, 0.006);

  file["trace"]["outliers"] = 1.0;
  EXPECT_EQ(KnobContextFromJson(file, "c.json").status().message(),
            "c.json: trace: rates must be > 0 with min <= max, the noise > 0, its slope in [-2, "
            "2], and the outliers in [0, 1)");
}

// Readings of a fast link stray more (its communication hardly depends on
// the rate), and under one value more than another: a trace whose noise
// grows with the rate as rate^0.5, from 0.1 at 1 Gbit/s under fp32 and 0.3
// under bf16, draws each reading with the noise of its segment's rate and
// the value in force, keeps both in its file, and refuses a slope steeper
// than 2 and a noise for a value the cost model lacks by name.
TEST(RuntimeEnvironmentTest, ALinkRateTraceWhoseNoiseGrowsWithTheRateDrawsReadingsThatNoisy) {
  nlohmann::json file = WireFormatCostModel({{"min_rate_gbit", 0.1},
                                             {"max_rate_gbit", 10.0},
                                             {"noise", 0.1},
                                             {"value_noise", {{"bf16", 0.3}}},
                                             {"noise_slope", 0.5}});
  absl::StatusOr<std::shared_ptr<const KnobContext>> context = KnobContextFromJson(file, "c.json");
  ASSERT_TRUE(context.ok()) << context.status();
  EXPECT_EQ((*context)->ToJson()["trace"]["noise_slope"], 0.5);
  EXPECT_NEAR((*context)->ObservationNoise("fp32", {std::log(4.0)}), 0.2, 1e-12);
  EXPECT_NEAR((*context)->ObservationNoise("fp32", {std::log(0.25)}), 0.05, 1e-12);
  EXPECT_NEAR((*context)->ObservationNoise("bf16", {std::log(4.0)}), 0.6, 1e-12);
  EXPECT_EQ((*context)->ToJson()["trace"]["value_noise"]["bf16"], 0.3);

  RuntimeEnvironmentOptions o;
  o.episode_iterations = 40000;
  auto env = *RuntimeEnvironment::Create(*context, o, 3);
  // Each reading's error over the noise at its rate under the value in
  // force (fp32 and bf16 by turns), and its error alone under fp32 on
  // links under 0.3 Gbit/s and over 3 Gbit/s.
  double scaled = 0, slow = 0, fast = 0;
  int slow_n = 0, fast_n = 0, bf16_n = 0;
  for (int t = 0; t < o.episode_iterations; ++t) {
    const double truth = env->context()[0];
    const double error = env->Step((t / 1000) % 2).seen[0] - truth;
    const bool bf16 = (*context)->values()[env->in_force()] == "bf16";
    bf16_n += bf16;
    scaled += std::pow(error / ((bf16 ? 0.3 : 0.1) * std::exp(0.5 * truth)), 2);
    if (bf16) continue;
    if (truth < std::log(0.3)) slow += error * error, ++slow_n;
    if (truth > std::log(3.0)) fast += error * error, ++fast_n;
  }
  EXPECT_NEAR(std::sqrt(scaled / o.episode_iterations), 1.0, 0.03);
  EXPECT_NEAR(bf16_n, o.episode_iterations / 2, 10);
  ASSERT_GT(slow_n, 500);
  ASSERT_GT(fast_n, 500);
  // About 0.04 against 0.24; one noise for every rate gives a ratio of 1.
  EXPECT_GT(std::sqrt(fast / fast_n) / std::sqrt(slow / slow_n), 4.0);

  file["trace"]["value_noise"] = {{"int8", 0.3}};
  EXPECT_EQ(KnobContextFromJson(file, "c.json").status().message(),
            "c.json: trace.value_noise: the cost model of wire.format has no value \"int8\"");
  file["trace"]["value_noise"] = {{"bf16", 0}};
  EXPECT_EQ(KnobContextFromJson(file, "c.json").status().message(),
            "c.json: trace.value_noise: bf16's noise must be > 0");
  file["trace"]["value_noise"] = 0.3;
  EXPECT_NE(KnobContextFromJson(file, "c.json").status().message().find("trace.value_noise"),
            std::string::npos);
  file["trace"].erase("value_noise");

  file["trace"]["noise_slope"] = 2.5;
  EXPECT_EQ(KnobContextFromJson(file, "c.json").status().message(),
            "c.json: trace: rates must be > 0 with min <= max, the noise > 0, its slope in [-2, "
            "2], and the outliers in [0, 1)");
}

// A job of two conv workers, conv worker 1 slowed by `slowdown[i]` at
// iteration i, whose records a controller reads (conv worker 1's one
// iteration late, as the coordinator relays them), and whose coordinator
// puts a proposal in force `lag` iterations after it is made.
std::vector<std::string> RunJob(Controller& controller, const std::vector<double>& slowdown,
                                int lag, uint64_t seed) {
  Rng rng(seed);
  std::string in_force = "1:1";
  std::map<int64_t, std::string> scheduled;
  std::vector<std::string> history;
  IterationRecord late;  // conv worker 1's previous record
  for (int64_t i = 0; i < static_cast<int64_t>(slowdown.size()); ++i) {
    if (scheduled.count(i) != 0) in_force = scheduled[i];
    history.push_back(in_force);
    const std::vector<int64_t> rows = in_force == "1:1"   ? std::vector<int64_t>{32, 32}
                                      : in_force == "3:1" ? std::vector<int64_t>{48, 16}
                                                          : std::vector<int64_t>{16, 48};
    std::vector<IterationRecord> seen = {
        Record(0, i, 0.0005 * rows[0] * std::exp(0.1 * rng.Normal()), rows[0], in_force)};
    if (i > 0) seen.push_back(late);
    late = Record(1, i, 0.0005 * slowdown[i] * rows[1] * std::exp(0.1 * rng.Normal()), rows[1]);
    for (const IterationRecord& r : seen) {
      for (const KnobProposal& p : controller.Observe(r)) {
        EXPECT_EQ(p.name, "batch.shares");
        scheduled[i + lag] = p.value;
      }
    }
  }
  return history;
}

std::vector<double> Slowdowns(const std::vector<std::pair<double, int>>& phases) {
  std::vector<double> out;
  for (const auto& [s, n] : phases) out.insert(out.end(), n, s);
  return out;
}

// The first iteration from `from` on that runs `value`.
int64_t FirstRunning(const std::vector<std::string>& history, int64_t from,
                     const std::string& value) {
  for (int64_t i = from; i < static_cast<int64_t>(history.size()); ++i) {
    if (history[i] == value) return i;
  }
  return -1;
}

TEST(ChangepointControllerTest, AStragglerGetsASmallerShareAndItsShareBackWhenItRecovers) {
  for (uint64_t seed : {1, 2, 3}) {
    auto controller = *ChangepointController::Create(FittedShares());
    EXPECT_TRUE(controller->reads_every_process());
    const auto history = RunJob(*controller, Slowdowns({{1, 100}, {4, 100}, {1, 100}}), 2, seed);
    for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(history[i], "1:1") << "seed " << seed << " " << i;
    // Read one iteration late, two to settle, two of lag: within 7.
    EXPECT_LE(FirstRunning(history, 100, "3:1") - 100, 7) << "seed " << seed;
    EXPECT_LE(FirstRunning(history, 200, "1:1") - 200, 7) << "seed " << seed;
    EXPECT_EQ(history.back(), "1:1");
  }
}

// A conv worker that hiccups now and then (one iteration five times as
// long) on a machine shared with others: under a cost model that expects
// 2% of iterations to be outliers, the inference finds no change at any
// hiccup, the shares stay even, and they still move within 7 iterations
// when the worker really slows down; under one that expects none, every
// hiccup is taken for a change of the worker's speed.
TEST(ChangepointControllerTest, ACostModelThatExpectsOutliersRidesOutHiccupsButNotAStraggler) {
  std::vector<double> slowdown = Slowdowns({{1, 200}, {4, 60}});
  const std::vector<int64_t> hiccups = {30, 77, 130, 171};
  for (int64_t i : hiccups) slowdown[i] = 5;
  // Hiccups followed by a change point within the iterations it takes to
  // read them (conv worker 1's records come an iteration late).
  auto hiccups_taken_for_changes = [&](const Controller& controller) {
    int n = 0;
    for (int64_t h : hiccups) {
      n += std::any_of(
          controller.events().begin(), controller.events().end(), [&](const ControllerEvent& e) {
            return e.kind == "change point" && e.iteration >= h && e.iteration <= h + 3;
          });
    }
    return n;
  };
  nlohmann::json file = FittedShares()->ToJson();
  file["trace"]["outliers"] = 0.02;
  const auto expecting_outliers = *KnobContextFromJson(file, "shares.json");
  for (uint64_t seed : {1, 2, 3}) {
    auto controller = *ChangepointController::Create(expecting_outliers);
    const auto history = RunJob(*controller, slowdown, 2, seed);
    EXPECT_EQ(hiccups_taken_for_changes(*controller), 0) << "seed " << seed;
    for (int64_t i = 0; i < 200; ++i) EXPECT_EQ(history[i], "1:1") << "seed " << seed << " " << i;
    EXPECT_LE(FirstRunning(history, 200, "3:1") - 200, 7) << "seed " << seed;
    EXPECT_EQ(history.back(), "3:1");
  }
  auto gaussian = *ChangepointController::Create(FittedShares());
  RunJob(*gaussian, slowdown, 2, 1);
  EXPECT_EQ(hiccups_taken_for_changes(*gaussian), static_cast<int>(hiccups.size()));
}

TEST(KnobPolicyTest, APolicyFileReadsBackAndOneForAnotherKnobIsRefusedByName) {
  const std::string dir = ::testing::TempDir() + "/knob_policy_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto policy = *KnobPolicy::Create(FittedShares(), KnobPolicySpec{}, 3);
  EXPECT_EQ(policy->inputs(), 2 * 2 + 3);  // mean and std per conv worker, one-hot of 3 values
  ASSERT_TRUE(policy->Save(dir + "/p.bin").ok());
  auto again = KnobPolicy::Load(dir + "/p.bin", FittedShares());
  ASSERT_TRUE(again.ok()) << again.status();
  // The same networks: the same choice in every state.
  std::vector<float> state(policy->inputs());
  Rng rng(5);
  for (int k = 0; k < 20; ++k) {
    for (float& x : state) x = static_cast<float>(rng.Normal());
    EXPECT_EQ((*again)->Choose(state.data()), policy->Choose(state.data()));
  }
  EXPECT_EQ((*again)->spec().segment_mean, KnobPolicySpec{}.segment_mean);

  // Made for other values of the knob, or another knob: refused, naming it.
  nlohmann::json fewer = FittedShares()->ToJson();
  fewer["values"].erase("1:3");
  auto two_values = *KnobContextFromJson(fewer, "fewer.json");
  EXPECT_EQ(KnobPolicy::Load(dir + "/p.bin", two_values).status().message(),
            "--policy-file " + dir +
                "/p.bin: trained for values [\"1:1\",\"1:3\",\"3:1\"]; this job's is "
                "[\"1:1\",\"3:1\"]");
  KnobCostModel wire =
      *KnobCostModel::Fit("wire.format", "ps", {{"fp32", 1, 0.01, 0.1}, {"bf16", 1, 0.01, 0.05}});
  EXPECT_NE(KnobPolicy::Load(dir + "/p.bin", std::make_shared<LinkRateContext>(wire))
                .status()
                .message()
                .find("trained for knob \"batch.shares\"; this job's is \"wire.format\""),
            std::string::npos);
  // A corrupt file, and one that is no policy.
  std::ofstream(dir + "/corrupt.bin") << "STRATA-CKPT garbage";
  EXPECT_NE(KnobPolicy::Load(dir + "/corrupt.bin", FittedShares())
                .status()
                .message()
                .find("--policy-file " + dir + "/corrupt.bin"),
            std::string::npos);
  EXPECT_EQ(KnobPolicy::Load(dir + "/missing.bin", FittedShares()).status().code(),
            absl::StatusCode::kNotFound);
  // The oracle's policy needs the true context: no live job can run it.
  KnobPolicySpec oracle;
  oracle.belief = "oracle";
  EXPECT_EQ(
      SecbadController::Create(*KnobPolicy::Create(FittedShares(), oracle, 1)).status().code(),
      absl::StatusCode::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST(KnobDecisionTest, AValueMovesOnceItsLeadsOverTheHeldOneAddUpToTheMargin) {
  KnobDecision decision(0.3);
  EXPECT_EQ(decision.Next({0.2, 0.5, 0.3}, -1), 1);  // nothing held: the likeliest
  EXPECT_EQ(decision.Next({0.3, 0.7, 0.0}, 0), 1);   // a lead of 0.4: at once
  // Leads of 0.2 from the same value: on the second.
  EXPECT_EQ(decision.Next({0.4, 0.0, 0.6}, 0), 0);
  EXPECT_EQ(decision.Next({0.4, 0.0, 0.6}, 0), 2);
  // A preference that comes and goes never adds up: another value leads,
  // or the held one is the likeliest again.
  decision.Reset();
  for (int k = 0; k < 10; ++k) {
    EXPECT_EQ(decision.Next({0.4, 0.6, 0.0}, 0), 0) << k;
    EXPECT_EQ(decision.Next({0.4, 0.0, 0.6}, 0), 0) << k;
    EXPECT_EQ(decision.Next({0.6, 0.4, 0.0}, 0), 0) << k;
  }
  // No margin: the likeliest, always.
  KnobDecision greedy(0);
  EXPECT_EQ(greedy.Next({0.49, 0.51, 0.0}, 0), 1);
  EXPECT_EQ(greedy.Next({0.51, 0.49, 0.0}, 1), 0);
}

TEST(KnobPolicyTest, ItsDecisionMarginIsSavedWithItAndChecked) {
  KnobPolicySpec spec;
  spec.decision_margin = 0.25;
  auto policy = *KnobPolicy::Create(FittedShares(), spec, 3);
  std::vector<float> state(policy->inputs());
  Rng rng(7);
  for (float& x : state) x = static_cast<float>(20 * rng.Normal());
  const std::vector<double> p = policy->Probabilities(state.data());
  ASSERT_EQ(p.size(), 3u);
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0, 1e-9);
  EXPECT_EQ(policy->Choose(state.data()),
            static_cast<int>(std::max_element(p.begin(), p.end()) - p.begin()));

  const std::string dir = ::testing::TempDir() + "/knob_margin_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(policy->Save(dir + "/p.bin").ok());
  auto again = *KnobPolicy::Load(dir + "/p.bin", FittedShares());
  EXPECT_DOUBLE_EQ(again->spec().decision_margin, 0.25);
  std::filesystem::remove_all(dir);

  spec.decision_margin = -0.5;
  EXPECT_EQ(KnobPolicy::Create(FittedShares(), spec, 3).status().message(),
            "a knob policy's decision margin must be in [0, 10], got -0.5");
}

TEST(SecbadControllerTest, AMarginAsWideAsThePolicysDoubtsProposesNothing) {
  // An untrained policy is unsure of everything: with no margin it follows
  // its whims, with one wider than they add up to in the run it keeps the
  // start value.
  auto proposals = [](double margin) {
    KnobPolicySpec spec;
    spec.decision_margin = margin;
    auto controller = *SecbadController::Create(*KnobPolicy::Create(FittedShares(), spec, 3));
    controller->set_logging(false);
    const auto history = RunJob(*controller, Slowdowns({{1, 100}, {4, 100}}), 2, 1);
    EXPECT_EQ(history.size(), 200u);
    int n = 0;
    for (const ControllerEvent& e : controller->events()) n += e.kind == "proposal";
    return n;
  };
  EXPECT_GT(proposals(0), 0);
  EXPECT_EQ(proposals(0.9), 0);
}

TEST(RuntimeExperimentTest, SecbadLearnsToMoveRowsOffAStragglerAndPlainPpoCannot) {
  RuntimeExperimentOptions o;
  o.env.episode_iterations = 400;
  o.env.segment_mean = 100;
  o.env.segment_stddev = 25;
  o.policy.window = 200;
  o.training_steps = 160'000;
  o.evaluation_episodes = 10;
  RuntimeExperiment experiment(FittedShares(), o);
  SetCpuThreads(1);  // small networks: a second thread only waits at every layer
  const double secbad = experiment.Run("secbad", 1)->efficiency;
  const double plain = experiment.Run("plain", 1)->efficiency;
  const double changepoint = experiment.Run("changepoint", 1)->efficiency;
  EXPECT_GT(secbad, 0.95);
  EXPECT_GT(changepoint, 0.95);
  // Without a belief the policy cannot tell which worker straggles.
  EXPECT_LT(plain, secbad - 0.05);
  EXPECT_EQ(experiment.Run("psychic", 1).status().message(),
            "unknown contender \"psychic\" (use secbad, constant-hazard, whole-history, plain, "
            "oracle, changepoint)");
}

}  // namespace
}  // namespace strata::secbad
