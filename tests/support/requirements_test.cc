#include "tests/support/requirements.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

namespace strata::testing {
namespace {

// Sets STRATA_TEST_REQUIRE for one test and restores it after.
class RequirementsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* before = std::getenv("STRATA_TEST_REQUIRE");
    had_value_ = before != nullptr;
    if (had_value_) before_ = before;
  }
  void TearDown() override {
    if (had_value_) {
      ::setenv("STRATA_TEST_REQUIRE", before_.c_str(), 1);
    } else {
      ::unsetenv("STRATA_TEST_REQUIRE");
    }
  }
  static void Require(const char* listed) { ::setenv("STRATA_TEST_REQUIRE", listed, 1); }

 private:
  bool had_value_ = false;
  std::string before_;
};

TEST_F(RequirementsTest, ARequirementNotListedSkips) {
  ::unsetenv("STRATA_TEST_REQUIRE");
  EXPECT_FALSE(IsRequired("root"));
  EXPECT_EQ(OutcomeWithout("root"), ::testing::TestPartResult::kSkip);
  EXPECT_EQ(MissingRequirementMessage("root"), "skipped: this machine lacks \"root\"");
}

TEST_F(RequirementsTest, AListedRequirementFails) {
  Require(" netns , root");
  EXPECT_TRUE(IsRequired("root"));
  EXPECT_TRUE(IsRequired("netns"));
  EXPECT_FALSE(IsRequired("torch"));
  EXPECT_EQ(OutcomeWithout("netns"), ::testing::TestPartResult::kFatalFailure);
  EXPECT_EQ(OutcomeWithout("torch"), ::testing::TestPartResult::kSkip);
  EXPECT_EQ(MissingRequirementMessage("root"),
            "STRATA_TEST_REQUIRE lists \"root\" but this machine lacks it");
  EXPECT_TRUE(UnknownRequirements().empty());
}

TEST_F(RequirementsTest, UnknownNamesAreFoundAndNeverSkip) {
  Require("root,netn,,cuda");
  EXPECT_EQ(UnknownRequirements(), std::vector<std::string>{"netn"});
  // A test naming a requirement that does not exist fails rather than
  // skipping forever.
  EXPECT_EQ(OutcomeWithout("gpu"), ::testing::TestPartResult::kFatalFailure);
  EXPECT_EQ(MissingRequirementMessage("gpu"), "the test names an unknown requirement \"gpu\"");
}

}  // namespace
}  // namespace strata::testing
