// strata_fit and its inputs: what strata_bench train --knob records for a
// cost model survives a trip through its report's JSON, and strata_fit
// fits the model again from a saved report alone.
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/util/json_file.h"
#include "scheduler/secbad/link_rate_context.h"
#include "tests/support/cluster_fixture.h"
#include "tools/fit/fit_inputs.h"

namespace strata {
namespace {

using fit::FitInputs;

// A knob whose values follow T = local + fixed + transfer / rate exactly:
// fp32 sends twice bf16's bytes, bf16 pays a conversion in fixed time.
struct Truth {
  const char* value;
  double local, fixed, transfer;
};
constexpr Truth kTruth[] = {{"fp32", 0.05, 0.01, 0.20}, {"bf16", 0.06, 0.02, 0.10}};

FitInputs WireFormatRuns() {
  FitInputs in;
  in.knob = "wire.format";
  in.mode = "ps";
  in.batch = 64;
  in.conv_workers = 2;
  for (const Truth& t : kTruth) {
    for (double rate : {0.5, 1.0, 2.0, 5.0}) {
      in.cost_samples.push_back({t.value, rate, t.local, t.fixed + t.transfer / rate});
    }
    // One run at 1 Gbit/s whose iterations' communication wobbles by a
    // few percent, as a real link's readings do.
    secbad::LinkRateRun run{t.value, {}};
    for (int i = 0; i < 40; ++i) {
      run.communication_seconds.push_back((t.fixed + t.transfer) * (1 + 0.03 * std::sin(i)));
    }
    in.link_runs.push_back(run);
  }
  // batch.shares' readings: two runs at "1,1", of two iterations and one.
  const secbad::SpeedSample first{{0.10, 0.12}, {32, 32}, 0.15};
  const secbad::SpeedSample second{{0.11, 0.12}, {32, 32}, 0.16};
  in.speed_runs["1,1"] = {{first, second}, {second}};
  return in;
}

TEST(FitInputsTest, EveryFieldRoundTripsThroughJson) {
  const FitInputs in = WireFormatRuns();
  const absl::StatusOr<FitInputs> back = FitInputs::FromJson(in.ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->knob, "wire.format");
  EXPECT_EQ(back->mode, "ps");
  EXPECT_EQ(back->batch, 64);
  EXPECT_EQ(back->conv_workers, 2);
  ASSERT_EQ(back->cost_samples.size(), 8u);
  EXPECT_EQ(back->cost_samples[1].value, "fp32");
  EXPECT_DOUBLE_EQ(back->cost_samples[1].rate_gbit, 1.0);
  EXPECT_DOUBLE_EQ(back->cost_samples[1].communication_seconds, 0.21);
  ASSERT_EQ(back->link_runs.size(), 2u);
  EXPECT_EQ(back->link_runs[1].value, "bf16");
  EXPECT_EQ(back->link_runs[1].communication_seconds, in.link_runs[1].communication_seconds);
  ASSERT_EQ(back->speed_runs.at("1,1").size(), 2u);
  ASSERT_EQ(back->speed_runs.at("1,1")[0].size(), 2u);
  EXPECT_EQ(back->speed_runs.at("1,1")[1][0].rows, (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(back->speed_runs.at("1,1")[0][1].compute_seconds, (std::vector<double>{0.11, 0.12}));
  EXPECT_DOUBLE_EQ(back->speed_runs.at("1,1")[0][1].wall_seconds, 0.16);
}

TEST(FitInputsTest, AMissingOrMistypedFieldIsNamed) {
  nlohmann::json j = WireFormatRuns().ToJson();
  j.erase("link_runs");
  absl::StatusOr<FitInputs> in = FitInputs::FromJson(j);
  EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(in.status().message().find("link_runs"), std::string::npos) << in.status();

  j = WireFormatRuns().ToJson();
  j["batch"] = "sixty-four";
  in = FitInputs::FromJson(j);
  EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument) << in.status();
}

class StrataFitTest : public testing::ClusterTest {};

TEST_F(StrataFitTest, FitsAKnobsModelFromASavedReportAlone) {
  const std::string report = dir_ + "/train.json";
  ASSERT_TRUE(
      WriteJsonFile(report, {{"benchmark", "train"}, {"fit_inputs", WireFormatRuns().ToJson()}})
          .ok());
  const std::string model_path = dir_ + "/model.json";
  const auto [code, out] = testing::RunCommand(
      absl::StrCat(testing::kBin, "strata_fit --report ", report, " --out ", model_path));
  ASSERT_EQ(code, 0) << out;
  const absl::StatusOr<nlohmann::json> json = ReadJsonFile(model_path);
  ASSERT_TRUE(json.ok()) << json.status();
  const auto context = secbad::LinkRateContext::FromJson(*json, model_path);
  ASSERT_TRUE(context.ok()) << context.status();
  const secbad::KnobCostModel& model = (*context)->model();
  EXPECT_EQ(model.knob(), "wire.format");
  EXPECT_EQ(model.mode(), "ps");
  // Exact samples fit exactly; the model file keeps float precision.
  for (const Truth& t : kTruth) {
    const secbad::ValueCost& cost = model.values().at(t.value);
    EXPECT_NEAR(cost.local_seconds, t.local, 1e-6) << t.value;
    EXPECT_NEAR(cost.fixed_seconds, t.fixed, 1e-6) << t.value;
    EXPECT_NEAR(cost.transfer_seconds_at_1gbit, t.transfer, 1e-6) << t.value;
  }
  // At 1 Gbit/s fp32 takes 0.26 s and bf16 0.18 s; at 100 Gbit/s the
  // conversion costs more than the bytes save.
  EXPECT_EQ(model.Best(1.0), "bf16");
  EXPECT_EQ(model.Best(100.0), "fp32");
}

TEST_F(StrataFitTest, AReportWithoutFitInputsIsRefusedWithWhatRecordsThem) {
  const std::string report = dir_ + "/moe.json";
  ASSERT_TRUE(WriteJsonFile(report, {{"benchmark", "moe"}}).ok());
  const auto [code, out] = testing::RunCommand(
      absl::StrCat(testing::kBin, "strata_fit --report ", report, " --out ", dir_, "/m.json"));
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("has no fit_inputs"), std::string::npos) << out;
  EXPECT_NE(out.find("--knob"), std::string::npos) << out;
}

}  // namespace
}  // namespace strata
