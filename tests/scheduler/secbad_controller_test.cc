// The controllers that re-tune a running job (scheduler/secbad): a knob's
// cost model fitted to measured iterations, and the change-point
// controller driven by iteration records of a simulated job whose link
// changes rate, with the coordinator's delay between a proposal and the
// iteration it takes effect at.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "core/util/rng.h"
#include "scheduler/secbad/changepoint_controller.h"
#include "scheduler/secbad/knob_cost_model.h"
#include "scheduler/secbad/link_rate_context.h"

namespace strata::secbad {
namespace {

// fp32 sends twice the bytes; bf16 pays its conversions whatever the link.
// They cost the same at 4 Gbit/s: 0.005 + 0.2 / 4 = 0.03 + 0.1 / 4.
const ValueCost kFp32{0.05, 0.005, 0.2};
const ValueCost kBf16{0.05, 0.03, 0.1};

double Communication(const ValueCost& c, double rate) {
  return c.fixed_seconds + c.transfer_seconds_at_1gbit / rate;
}

KnobCostModel TrueModel() {
  std::vector<CostSample> samples;
  for (double rate : {0.1, 1.0, 10.0}) {
    samples.push_back({"fp32", rate, kFp32.local_seconds, Communication(kFp32, rate)});
    samples.push_back({"bf16", rate, kBf16.local_seconds, Communication(kBf16, rate)});
  }
  return *KnobCostModel::Fit("wire.format", "ps", samples);
}

std::shared_ptr<const KnobContext> TrueContext() {
  return std::make_shared<LinkRateContext>(TrueModel());
}

TEST(KnobCostModelTest, TheFitRecoversTheCostsOfEachValue) {
  const KnobCostModel model = TrueModel();
  ASSERT_EQ(model.values().size(), 2u);
  const ValueCost& fp32 = model.values().at("fp32");
  EXPECT_NEAR(fp32.local_seconds, 0.05, 1e-12);
  EXPECT_NEAR(fp32.fixed_seconds, 0.005, 1e-12);
  EXPECT_NEAR(fp32.transfer_seconds_at_1gbit, 0.2, 1e-12);
  EXPECT_NEAR(model.values().at("bf16").fixed_seconds, 0.03, 1e-12);
  // Fastest below the break-even rate of 4 Gbit/s: bf16; above: fp32.
  EXPECT_EQ(model.Best(0.1), "bf16");
  EXPECT_EQ(model.Best(3.5), "bf16");
  EXPECT_EQ(model.Best(4.5), "fp32");
  EXPECT_EQ(model.Best(100), "fp32");
  EXPECT_NEAR(model.IterationSeconds("bf16", 0.1), 0.05 + 0.03 + 1.0, 1e-12);
  // The rate behind a communication time, under either value.
  EXPECT_NEAR(model.InferRate("fp32", Communication(kFp32, 0.25)), 0.25, 1e-9);
  EXPECT_NEAR(model.InferRate("bf16", Communication(kBf16, 7.0)), 7.0, 1e-9);
  // Less than the fixed part: as fast as the model reasons about.
  EXPECT_EQ(model.InferRate("bf16", 0.01), KnobCostModel::kFastestRateGbit);
}

TEST(KnobCostModelTest, AFitNeverGivesNegativeSeconds) {
  // Communication that grows with the rate (noise): no transfer term.
  const KnobCostModel model = *KnobCostModel::Fit(
      "wire.format", "ps",
      {{"fp32", 1, 0.1, 0.02}, {"fp32", 10, 0.1, 0.03}, {"bf16", 1, 0.1, 0.05}});
  EXPECT_EQ(model.values().at("fp32").transfer_seconds_at_1gbit, 0);
  EXPECT_NEAR(model.values().at("fp32").fixed_seconds, 0.025, 1e-12);
  // One rate: all of it is transfer.
  EXPECT_EQ(model.values().at("bf16").fixed_seconds, 0);
  EXPECT_NEAR(model.values().at("bf16").transfer_seconds_at_1gbit, 0.05, 1e-12);
}

TEST(KnobCostModelTest, BadSamplesAndFilesAreRefusedByName) {
  EXPECT_EQ(KnobCostModel::Fit("wire.format", "ps", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status one_value =
      KnobCostModel::Fit("wire.format", "ps", {{"fp32", 1, 0.1, 0.2}}).status();
  EXPECT_NE(one_value.message().find("one value only"), std::string::npos) << one_value;
  const absl::Status no_rate =
      KnobCostModel::Fit("wire.format", "ps", {{"fp32", 0, 0.1, 0.2}, {"bf16", 1, 0.1, 0.1}})
          .status();
  EXPECT_NE(no_rate.message().find("link rate of 0"), std::string::npos) << no_rate;

  const KnobCostModel model = TrueModel();
  const KnobCostModel again = *KnobCostModel::FromJson(model.ToJson(), "cost.json");
  EXPECT_EQ(again.knob(), "wire.format");
  EXPECT_EQ(again.mode(), "ps");
  EXPECT_NEAR(again.values().at("bf16").transfer_seconds_at_1gbit, 0.1, 1e-7);

  nlohmann::json missing = model.ToJson();
  missing["values"]["bf16"].erase("fixed_seconds");
  const absl::Status m = KnobCostModel::FromJson(missing, "cost.json").status();
  EXPECT_EQ(m.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.message().find("cost.json.values.bf16.fixed_seconds"), std::string::npos) << m;
  nlohmann::json negative = model.ToJson();
  negative["values"]["fp32"]["local_seconds"] = -1;
  EXPECT_NE(KnobCostModel::FromJson(negative, "cost.json").status().message().find(">= 0"),
            std::string::npos);
  nlohmann::json lonely = model.ToJson();
  lonely["values"].erase("fp32");
  EXPECT_NE(KnobCostModel::FromJson(lonely, "cost.json").status().message().find("two or more"),
            std::string::npos);
  nlohmann::json extra = model.ToJson();
  extra["colour"] = "blue";
  EXPECT_NE(KnobCostModel::FromJson(extra, "cost.json").status().message().find("colour"),
            std::string::npos);
}

TEST(LinkRateTraceTest, TheFitFindsTheReadingNoiseAndTheShareOfStalls) {
  // Four runs at rates that held, 3% of iterations stalled (reading a
  // link 8 times slower), the readings otherwise off in ln(rate) by
  // height x rate^0.5: a fast link's stray more (fp32: 0.1 at 1 Gbit/s,
  // 0.28 at 8), and bf16's more than fp32's (height 0.25 against 0.1).
  const KnobCostModel model = TrueModel();
  Rng rng(5);
  std::vector<LinkRateRun> runs;
  int stalls = 0, readings = 0;
  for (const auto& [value, cost, rate, height] :
       {std::tuple{"fp32", kFp32, 1.0, 0.1}, std::tuple{"bf16", kBf16, 0.3, 0.25},
        std::tuple{"fp32", kFp32, 8.0, 0.1}, std::tuple{"bf16", kBf16, 2.0, 0.25}}) {
    const double noise = height * std::sqrt(rate);
    LinkRateRun run{value, {}};
    for (int i = 0; i < 1000; ++i) {
      double seen = rate * std::exp(noise * rng.Normal());
      if (rng.Uniform() < 0.03) {
        seen /= 8;
        ++stalls;
      }
      run.communication_seconds.push_back(Communication(cost, seen));
      ++readings;
    }
    runs.push_back(std::move(run));
  }
  std::vector<LinkRateRunReadings> read;
  const LinkRateTrace trace = *FitLinkRateTrace(model, runs, &read);
  ASSERT_EQ(read.size(), 4u);
  EXPECT_EQ(read[1].value, "bf16");
  EXPECT_NEAR(read[1].median_rate_gbit, 0.3, 0.01);
  EXPECT_NEAR(read[1].noise, 0.25 * std::sqrt(0.3), 0.01);
  EXPECT_EQ(read[1].readings, 1000u);
  // One slope, a height per value (one line through all four runs would
  // give a slope of 0.2 and one height).
  EXPECT_NEAR(trace.noise_slope, 0.5, 0.05);
  EXPECT_NEAR(trace.value_noise.at("fp32"), 0.1, 0.01);  // at 1 Gbit/s
  EXPECT_NEAR(trace.value_noise.at("bf16"), 0.25, 0.025);
  EXPECT_NEAR(trace.NoiseAt("fp32", std::log(8.0)), 0.28, 0.02);
  // A value without runs: the median run's noise at 1 Gbit/s.
  EXPECT_NEAR(trace.NoiseAt("int8", 0), 0.175, 0.02);
  // Every stall (ln 8 = 2.1: 6 noises out even in the noisiest run) and a
  // Gaussian's share past 4 noises.
  EXPECT_NEAR(trace.outliers, static_cast<double>(stalls) / readings, 0.002);
  EXPECT_GT(stalls, 40);
  EXPECT_EQ(trace.min_rate_gbit, LinkRateTrace{}.min_rate_gbit);

  // Each value's runs at one rate say nothing of a slope: each value's
  // noise is its median run's.
  const LinkRateTrace flat = *FitLinkRateTrace(model, {runs[0], runs[1], runs[0]});
  EXPECT_EQ(flat.noise_slope, 0.0);
  EXPECT_NEAR(flat.value_noise.at("fp32"), 0.1, 0.01);
  EXPECT_NEAR(flat.value_noise.at("bf16"), 0.25 * std::sqrt(0.3), 0.01);

  EXPECT_EQ(FitLinkRateTrace(model, {{"int8", {0.1}}}).status().message(),
            "fitting the link-rate trace: the cost model of wire.format has no value \"int8\"");
  EXPECT_EQ(FitLinkRateTrace(model, {{"fp32", {0.1, 0.2}}}).status().message(),
            "fitting the link-rate trace: 2 readings of iterations, fewer than 20");
}

// A job whose conv worker sees `rates[i]` during iteration i, with the
// coordinator putting a proposal in force `lag` iterations later, and
// communication times off the model by `noise` (relative, Gaussian).
struct SimulatedJob {
  std::vector<double> rates;
  int lag = 3;
  double noise = 0.1;
  uint64_t seed = 1;
  // Iterations stalled by a hiccup: their communication takes `stall`
  // times as long, whatever the link.
  std::vector<int64_t> stalled;
  double stall = 8;

  struct Outcome {
    std::vector<std::string> in_force;  // per iteration
    std::vector<int64_t> proposals_at;
    std::vector<ControllerEvent> events;
  };

  Outcome Run(Controller& controller) const {
    Rng rng(seed);
    Outcome out;
    std::string value = "fp32";
    std::vector<std::pair<int64_t, std::string>> scheduled;
    for (int64_t i = 0; i < static_cast<int64_t>(rates.size()); ++i) {
      for (const auto& [at, v] : scheduled) {
        if (at == i) value = v;
      }
      out.in_force.push_back(value);
      IterationRecord record;
      record.process = "conv worker 0";
      record.iteration = i;
      record.knobs["wire.format"] = value;
      const ValueCost& cost = value == "fp32" ? kFp32 : kBf16;
      record.communication_seconds =
          Communication(cost, rates[i]) * std::max(0.2, 1 + noise * rng.Normal());
      if (std::find(stalled.begin(), stalled.end(), i) != stalled.end()) {
        record.communication_seconds *= stall;
      }
      for (const KnobProposal& p : controller.Observe(record)) {
        EXPECT_EQ(p.name, "wire.format");
        scheduled.push_back({i + lag, p.value});
        out.proposals_at.push_back(i);
      }
    }
    out.events = controller.events();
    return out;
  }
};

std::vector<double> Phases(const std::vector<std::pair<double, int>>& phases) {
  std::vector<double> rates;
  for (const auto& [rate, n] : phases) rates.insert(rates.end(), n, rate);
  return rates;
}

// The first iteration at or after `from` that runs `value`.
int64_t FirstRunning(const std::vector<std::string>& in_force, int64_t from,
                     const std::string& value) {
  for (int64_t i = from; i < static_cast<int64_t>(in_force.size()); ++i) {
    if (in_force[i] == value) return i;
  }
  return -1;
}

TEST(ChangepointControllerTest, ItRetunesWithinFiveIterationsOfEachChange) {
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    SimulatedJob job;
    job.rates = Phases({{10, 60}, {0.1, 60}, {10, 60}, {0.5, 60}});
    job.seed = seed;
    auto controller = *ChangepointController::Create(TrueContext());
    const SimulatedJob::Outcome out = job.Run(*controller);
    // Each change reaches the job (proposal + lag) within 5 iterations.
    const int64_t to_bf16 = FirstRunning(out.in_force, 60, "bf16");
    const int64_t to_fp32 = FirstRunning(out.in_force, 120, "fp32");
    const int64_t again_bf16 = FirstRunning(out.in_force, 180, "bf16");
    EXPECT_GE(to_bf16, 60) << "seed " << seed;
    EXPECT_LE(to_bf16 - 60, 5) << "seed " << seed;
    EXPECT_LE(to_fp32 - 120, 5) << "seed " << seed;
    EXPECT_LE(again_bf16 - 180, 5) << "seed " << seed;
    // And nothing else: three proposals, no flapping inside a phase.
    EXPECT_EQ(out.proposals_at.size(), 3u) << "seed " << seed;
    for (int64_t i = 0; i < 60; ++i) EXPECT_EQ(out.in_force[i], "fp32") << i;
    EXPECT_EQ(out.in_force.back(), "bf16");
    int change_points = 0;
    for (const ControllerEvent& e : out.events) change_points += e.kind == "change point";
    EXPECT_GE(change_points, 3) << "seed " << seed;
    EXPECT_NEAR(std::exp(controller->believed_context()[0]), 0.5, 0.1) << "seed " << seed;
  }
}

TEST(ChangepointControllerTest, AStableLinkGetsNoProposalAndFewFalseAlarms) {
  SimulatedJob job;
  job.rates = Phases({{1.0, 1000}});
  job.noise = 0.15;
  auto controller = *ChangepointController::Create(TrueContext());
  const SimulatedJob::Outcome out = job.Run(*controller);
  // fp32 loses at 1 Gbit/s (0.255 s against 0.18 s): one proposal, early.
  ASSERT_EQ(out.proposals_at.size(), 1u);
  EXPECT_LE(out.proposals_at[0], 4);
  int false_alarms = 0;
  for (const ControllerEvent& e : out.events) false_alarms += e.kind == "change point";
  // The switch itself changes what is observed only through the model.
  EXPECT_LE(false_alarms, 5);
}

// Stalls of single iterations (30 times as long) on a fast link: under a
// cost model that expects no outliers, the inference takes each for a
// change of the link; under one that expects 2% of readings to be
// outliers, it takes none for one, and the controller still re-tunes
// within five iterations when the link does slow down.
TEST(ChangepointControllerTest, ACostModelThatExpectsOutliersRidesOutStallsButNotAChange) {
  SimulatedJob job;
  job.rates = Phases({{10, 300}, {0.1, 60}});
  for (int64_t i = 20; i < 300; i += 23) job.stalled.push_back(i);
  job.stall = 30;
  auto change_points_before = [](const SimulatedJob::Outcome& out, int64_t iteration) {
    int n = 0;
    for (const ControllerEvent& e : out.events) {
      n += e.kind == "change point" && e.iteration < iteration;
    }
    return n;
  };
  LinkRateTrace trace;
  trace.outliers = 0.02;
  auto expecting =
      *ChangepointController::Create(std::make_shared<LinkRateContext>(TrueModel(), trace));
  const SimulatedJob::Outcome out = job.Run(*expecting);
  EXPECT_EQ(change_points_before(out, 300), 0);
  ASSERT_EQ(out.proposals_at.size(), 1u);
  EXPECT_EQ(FirstRunning(out.in_force, 0, "bf16"), FirstRunning(out.in_force, 300, "bf16"));
  EXPECT_LE(FirstRunning(out.in_force, 300, "bf16") - 300, 5);

  auto gaussian = *ChangepointController::Create(TrueContext());
  EXPECT_GE(change_points_before(job.Run(*gaussian), 300), static_cast<int>(job.stalled.size()));
}

TEST(ChangepointControllerTest, AGainBelowTheThresholdIsNotWorthAChange) {
  SimulatedJob job;
  job.rates = Phases({{4.2, 200}});  // fp32 ahead of bf16 by under 1%
  job.noise = 0.02;
  auto controller = *ChangepointController::Create(TrueContext());
  EXPECT_TRUE(job.Run(*controller).proposals_at.empty());
}

TEST(ChangepointControllerTest, RecordsItCannotReadAreNotObserved) {
  auto controller = *ChangepointController::Create(TrueContext());
  IterationRecord record;
  record.communication_seconds = 2.0;  // would be 0.1 Gbit/s
  for (int64_t i = 0; i < 10; ++i) {
    record.iteration = i;
    record.knobs["wire.format"] = "fp16";  // not in the model
    EXPECT_TRUE(controller->Observe(record).empty());
  }
  EXPECT_EQ(controller->inference().steps(), 0);
  record.knobs["wire.format"] = "fp32";
  record.completed = false;
  EXPECT_TRUE(controller->Observe(record).empty());
  EXPECT_EQ(controller->inference().steps(), 0);
}

TEST(ChangepointControllerTest, OptionsOutOfRangeAreRefusedByName) {
  ChangepointControllerOptions options;
  options.settle = 0;
  EXPECT_NE(ChangepointController::Create(TrueContext(), options).status().message().find("settle"),
            std::string::npos);
  options = {};
  options.min_gain = -1;
  EXPECT_NE(
      ChangepointController::Create(TrueContext(), options).status().message().find("min_gain"),
      std::string::npos);
}

}  // namespace
}  // namespace strata::secbad
