#include "core/control/knobs.h"

#include <gtest/gtest.h>

#include "absl/strings/numbers.h"

namespace strata {
namespace {

KnobSpec PositiveInt(const std::string& name) {
  KnobSpec spec;
  spec.name = name;
  spec.validate = [](const std::string& v) {
    int n = 0;
    if (!absl::SimpleAtoi(v, &n) || n < 1)
      return absl::InvalidArgumentError("must be an integer >= 1");
    return absl::OkStatus();
  };
  return spec;
}

TEST(KnobCatalogTest, ValidatesByNameAndNamesTheKnownOnes) {
  KnobCatalog catalog;
  ASSERT_TRUE(catalog.Register(PositiveInt("b.chunks")).ok());
  ASSERT_TRUE(catalog.Register(PositiveInt("a.depth")).ok());
  EXPECT_EQ(catalog.Register(PositiveInt("a.depth")).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(catalog.Validate("b.chunks", "4").ok());
  const absl::Status bad = catalog.Validate("b.chunks", "0");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "b.chunks=0: must be an integer >= 1");
  const absl::Status unknown = catalog.Validate("c", "1");
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.message(), "unknown knob \"c\" (known: a.depth, b.chunks)");
}

TEST(JobKnobsTest, AppliesChangesInIterationOrderOnceEach) {
  JobKnobs knobs;
  std::vector<std::string> applied;
  knobs.Declare("x", "1", [&](const std::string& v) {
    applied.push_back(v);
    return absl::OkStatus();
  });
  knobs.Schedule({{"x", "3", 20}, {"x", "2", 10}});
  ASSERT_TRUE(knobs.ApplyUpTo(9).ok());
  EXPECT_EQ(knobs.values().at("x"), "1");
  ASSERT_TRUE(knobs.ApplyUpTo(10).ok());
  EXPECT_EQ(knobs.values().at("x"), "2");
  knobs.Schedule({{"x", "2", 10}, {"x", "3", 20}});  // the whole schedule again
  ASSERT_TRUE(knobs.ApplyUpTo(25).ok());
  EXPECT_EQ(applied, (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(knobs.declared().at("x"), "1");
}

TEST(JobKnobsTest, AKnobThisProcessDoesNotApplyIsTrackedAndAFailedApplyIsNamed) {
  JobKnobs knobs;
  knobs.Declare("y", "a", [](const std::string&) { return absl::InternalError("busy"); });
  knobs.Schedule({{"z", "7", 0}, {"y", "b", 3}});
  ASSERT_TRUE(knobs.ApplyUpTo(0).ok());
  EXPECT_EQ(knobs.values().at("z"), "7");
  const absl::Status s = knobs.ApplyUpTo(3);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "applying y=b at iteration 3: busy");
}

}  // namespace
}  // namespace strata
