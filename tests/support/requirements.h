// What a test needs from the machine it runs on, and what happens when the
// machine lacks it. A test that cannot run here skips, saying why, unless
// STRATA_TEST_REQUIRE lists the requirement: then the same check fails the
// test. CI lists what its machines can always do, so that a skip there is a
// defect rather than a quiet pass.
//
//   STRATA_TEST_REQUIRE=root,netns,cpu-limits
//
// Names: see kTestRequirements. A name that is not one of them makes
// every test binary fail at start (a misspelt requirement would otherwise
// require nothing).
#ifndef STRATA_TESTS_SUPPORT_REQUIREMENTS_H_
#define STRATA_TESTS_SUPPORT_REQUIREMENTS_H_

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace strata::testing {

// Every requirement a test may name, with what it means.
struct TestRequirement {
  std::string_view name;
  std::string_view meaning;
};
extern const std::vector<TestRequirement> kTestRequirements;

// Whether STRATA_TEST_REQUIRE lists `requirement` (which must be one of
// kTestRequirements).
bool IsRequired(std::string_view requirement);

// The names in STRATA_TEST_REQUIRE that are not requirements; empty when
// all are (or the variable is unset).
std::vector<std::string> UnknownRequirements();

// How a test that lacks `requirement` ends: kSkip, or kFatalFailure when
// it is required or not a name in kTestRequirements.
::testing::TestPartResult::Type OutcomeWithout(std::string_view requirement);

// The first words of that outcome's message, naming the requirement.
std::string MissingRequirementMessage(std::string_view requirement);

}  // namespace strata::testing

// Ends the current test because the machine lacks `requirement` (a string
// literal from kTestRequirements): a skip, or a failure where
// STRATA_TEST_REQUIRE lists it. Stream the reason into it, as into
// GTEST_SKIP():
//
//   if (::geteuid() != 0) STRATA_SKIP_WITHOUT("root") << "needs root to ...";
#define STRATA_SKIP_WITHOUT(requirement)                                          \
  return ::testing::internal::AssertHelper(                                       \
             ::strata::testing::OutcomeWithout(requirement), __FILE__, __LINE__,  \
             ::strata::testing::MissingRequirementMessage(requirement).c_str()) = \
             ::testing::Message()

#endif  // STRATA_TESTS_SUPPORT_REQUIREMENTS_H_
