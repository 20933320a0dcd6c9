// Knob variants for `strata_bench train --knob`: what parses, what is
// refused (named), and where each knob's start value lands in a config.
#include "tools/launch/knob_variants.h"

#include <gtest/gtest.h>

#include "moe/moe_layer_type.h"

namespace strata::bench {
namespace {

class KnobVariantsTest : public ::testing::Test {
 protected:
  void SetUp() override { moe::RegisterMoe(); }
};

TEST_F(KnobVariantsTest, ParsesAKnobAndItsValues) {
  absl::StatusOr<KnobValues> k = ParseKnobValues("wire.format=fp32,bf16");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->name, "wire.format");
  EXPECT_EQ(k->values, (std::vector<std::string>{"fp32", "bf16"}));
  k = ParseKnobValues("moe.pipeline_chunks=1,2,4");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->values.size(), 3u);
}

TEST_F(KnobVariantsTest, RefusesWhatNoJobCanStartWith) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"wire.format", "use NAME=V1,V2"},
      {"speed=fast",
       "unknown knob \"speed\" (a job can start with wire.format, batch.shares, fc.batching, "
       "moe.pipeline_chunks, moe.parallelism)"},
      {"fc.batching=gathered,each", "fc.batching=each"},
      {"batch.shares=3:1,3:x", "batch.shares=3:x"},
      {"wire.format=", "lists no value"},
      {"wire.format=fp32,fp8", "fp8"},
      {"moe.pipeline_chunks=0", "moe.pipeline_chunks"},
  };
  for (const auto& [text, why] : cases) {
    absl::StatusOr<KnobValues> k = ParseKnobValues(text);
    ASSERT_FALSE(k.ok()) << text;
    EXPECT_TRUE(absl::IsInvalidArgument(k.status())) << k.status();
    EXPECT_NE(k.status().message().find(why), std::string::npos) << k.status();
  }
}

TEST_F(KnobVariantsTest, EachKnobStartsWhereTheConfigSaysIt) {
  const nlohmann::json config = {
      {"cluster", {{"mode", "stanza"}}},
      {"model",
       {{"layers",
         {{{"type", "linear"}, {"name", "fc1"}},
          {{"type", "moe"}, {"name", "experts"}, {"pipeline_chunks", 1}}}}}}};
  absl::StatusOr<nlohmann::json> bf16 = ConfigStartingWith(config, "wire.format", "bf16");
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ((*bf16)["cluster"]["wire_format"], "bf16");
  EXPECT_EQ((*bf16)["cluster"]["mode"], "stanza");

  absl::StatusOr<nlohmann::json> shares = ConfigStartingWith(config, "batch.shares", "3:1");
  ASSERT_TRUE(shares.ok()) << shares.status();
  EXPECT_EQ((*shares)["cluster"]["batch_shares"], "3:1");

  absl::StatusOr<nlohmann::json> arrival = ConfigStartingWith(config, "fc.batching", "arrival");
  ASSERT_TRUE(arrival.ok()) << arrival.status();
  EXPECT_EQ((*arrival)["cluster"]["fc_batching"], "arrival");

  absl::StatusOr<nlohmann::json> d4 = ConfigStartingWith(config, "moe.pipeline_chunks", "4");
  ASSERT_TRUE(d4.ok()) << d4.status();
  EXPECT_EQ((*d4)["model"]["layers"][1]["pipeline_chunks"], 4);
  EXPECT_FALSE((*d4)["model"]["layers"][0].contains("pipeline_chunks"));

  absl::StatusOr<nlohmann::json> data = ConfigStartingWith(config, "moe.parallelism", "data");
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ((*data)["model"]["layers"][1]["parallelism"], "data");

  const nlohmann::json plain = {{"model", {{"layers", {{{"type", "linear"}}}}}}};
  absl::StatusOr<nlohmann::json> none = ConfigStartingWith(plain, "moe.pipeline_chunks", "4");
  EXPECT_TRUE(absl::IsInvalidArgument(none.status()));
  EXPECT_NE(none.status().message().find("this model has none"), std::string::npos);
}

}  // namespace
}  // namespace strata::bench
