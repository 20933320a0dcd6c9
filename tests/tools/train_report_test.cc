// strata_bench train's report writers (table, JSON, CSV), its plot, and a
// real two-point sweep end to end.
#include "tools/bench/harness/report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_split.h"
#include "tests/support/cluster_fixture.h"
#include "tools/bench/throughput_plot.h"

namespace strata::bench {
namespace {

using strata::testing::ReadFile;
using strata::testing::RunCommand;

BenchReport TwoPointReport() {
  BenchReport r;
  r.sweep_parameter = "bandwidth";
  r.facts = {{"config", "c.json"}, {"title", "two points"}};
  SweepPoint slow;
  slow.value = "100mbit";
  slow.numeric = 1e8;
  slow.contenders.push_back({"strata ps", {10, 30, 20}, 2.5e6, {}});
  slow.contenders.push_back({"strata stanza",
                             {80, 100, 90},
                             1e5,
                             {{"compute", 0.5}, {"communication", 0.25}, {"waiting", 0.125}}});
  SweepPoint fast = slow;
  fast.value = "1gbit";
  fast.numeric = 1e9;
  fast.contenders[0].runs = {50};
  r.points = {slow, fast};
  return r;
}

TEST(TrainReportTest, CsvHasOneRowPerPointAndContender) {
  const std::string csv = ReportToCsv(TwoPointReport());
  const std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0],
            "sweep,value,contender,median_images_per_sec,min,max,runs,ratio_to_first,"
            "mb_per_iteration,compute_s,communication_s,waiting_s");
  EXPECT_EQ(lines[1], "bandwidth,100mbit,strata ps,20.0,10.0,30.0,3,1.0000,2.500000,,,");
  EXPECT_EQ(lines[2],
            "bandwidth,100mbit,strata stanza,90.0,80.0,100.0,3,4.5000,0.100000,0.500000,"
            "0.250000,0.125000");
  EXPECT_EQ(lines[3], "bandwidth,1gbit,strata ps,50.0,50.0,50.0,1,1.0000,2.500000,,,");
  EXPECT_EQ(lines[4],
            "bandwidth,1gbit,strata stanza,90.0,80.0,100.0,3,1.8000,0.100000,0.500000,"
            "0.250000,0.125000");
}

TEST(TrainReportTest, JsonKeepsFactsRunsMediansAndRatios) {
  const nlohmann::json j = ReportToJson(TwoPointReport());
  EXPECT_EQ(j["benchmark"], "train");
  EXPECT_EQ(j["config"], "c.json");
  EXPECT_EQ(j["sweep"], "bandwidth");
  ASSERT_EQ(j["points"].size(), 2u);
  const auto& stanza = j["points"][0]["contenders"][1];
  EXPECT_EQ(stanza["label"], "strata stanza");
  EXPECT_DOUBLE_EQ(stanza["median_images_per_sec"].get<double>(), 90.0);
  EXPECT_DOUBLE_EQ(stanza["ratio_to_first"].get<double>(), 4.5);
  EXPECT_EQ(stanza["runs"], nlohmann::json({80, 100, 90}));
  EXPECT_DOUBLE_EQ(stanza["seconds_per_iteration"]["communication"].get<double>(), 0.25);
  EXPECT_FALSE(j["points"][0]["contenders"][0].contains("seconds_per_iteration"));
}

TEST(TrainReportTest, TableShowsMediansBreakdownAndRatio) {
  const std::string table = FormatPointTable(TwoPointReport().points[0]);
  EXPECT_NE(table.find("strata stanza"), std::string::npos) << table;
  EXPECT_NE(table.find("0.500s"), std::string::npos) << table;
  EXPECT_NE(table.find("4.50x"), std::string::npos) << table;
  EXPECT_NE(table.find("2.500"), std::string::npos) << table;  // MB per iteration of ps
}

class PlotTest : public strata::testing::ClusterTest {};

TEST_F(PlotTest, ASweepDrawsAPng) {
  const std::string png = dir_ + "/sweep.png";
  ASSERT_TRUE(WriteThroughputPlot(TwoPointReport(), png).ok());
  const std::string bytes = ReadFile(png);
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
}

TEST_F(PlotTest, APlotNeedsASweep) {
  BenchReport r = TwoPointReport();
  r.sweep_parameter.clear();
  EXPECT_EQ(WriteThroughputPlot(r, dir_ + "/x.png").code(), absl::StatusCode::kInvalidArgument);
}

// The whole tool: two bandwidths, ps mode, a plot, CSV and JSON.
TEST_F(PlotTest, TwoPointSweepOfARealClusterProducesPlotCsvAndJson) {
  const std::string png = dir_ + "/sweep.png";
  const auto [code, out] =
      RunCommand(strata::testing::kBin + "strata_bench train --config " + strata::testing::kConfig +
                 " --modes ps --conv-workers 2 --sweep bandwidth=100mbit,1gbit --steps 4 --repeat 1"
                 " --peer=false --threads 1 --plot " +
                 png + " --csv " + dir_ + "/s.csv --json " + dir_ + "/s.json");
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(ReadFile(png).substr(1, 3), "PNG");
  const std::vector<std::string> rows =
      absl::StrSplit(ReadFile(dir_ + "/s.csv"), '\n', absl::SkipEmpty());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].rfind("bandwidth,100mbit,strata ps,", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind("bandwidth,1gbit,strata ps,", 0), 0u) << rows[2];
  const nlohmann::json j = Summary(dir_ + "/s.json");
  ASSERT_EQ(j["points"].size(), 2u);
  const auto& ps = j["points"][0]["contenders"][0];
  EXPECT_GT(ps["median_images_per_sec"].get<double>(), 0.0);
  EXPECT_GT(ps["bytes_per_iteration"].get<double>(), 0.0);
  EXPECT_EQ(ps["seconds_per_iteration"].size(), 3u);
}

// --models: each config benchmarked in turn, then one row per model with
// its FC share, traffic, throughput and the plan's prediction.
TEST_F(PlotTest, AModelTableRunsEveryModelAndSetsThePlanBesideIt) {
  const auto [code, out] = RunCommand(
      strata::testing::kBin + "strata_bench train --models resnet20_cifar," +
      strata::testing::kConfig +
      " --modes ps,stanza --conv-workers 2 --steps 3 --repeat 1 --batch-size 16 --peer=false "
      "--threads 1 --json " +
      dir_ + "/t.json");
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json j = Summary(dir_ + "/t.json");
  ASSERT_EQ(j["models"].size(), 2u);
  ASSERT_EQ(j["reports"].size(), 2u);
  const auto& resnet = j["models"][0];
  EXPECT_EQ(resnet["model"], "resnet20_cifar");
  EXPECT_NEAR(resnet["fc_share"].get<double>(), 650.0 / 272474, 1e-9);  // fc: 64x10 + 10
  EXPECT_EQ(j["models"][1]["model"], "fashion_mnist");
  for (const auto& row : j["models"]) {
    EXPECT_GT(row["ps"]["images_per_sec"].get<double>(), 0.0);
    EXPECT_GT(row["stanza"]["bytes_per_iteration"].get<double>(), 0.0);
    EXPECT_GT(row["stanza_over_ps"]["planned"].get<double>(), 0.0);
    EXPECT_GT(row["stanza_over_ps"]["measured_per_iteration"].get<double>(), 0.0);
    EXPECT_EQ(row["ddp"]["images_per_sec"].get<double>(), 0.0);  // --peer=false
  }
  EXPECT_NE(out.find("resnet20_cifar       0.2%"), std::string::npos) << out;
}

TEST_F(PlotTest, BadSweepIsRefused) {
  const auto [code, out] = RunCommand(strata::testing::kBin + "strata_bench train --config " +
                                      strata::testing::kConfig + " --modes ps --sweep speed=1,2");
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("--sweep speed=1,2: use bandwidth="), std::string::npos) << out;
}

}  // namespace
}  // namespace strata::bench
