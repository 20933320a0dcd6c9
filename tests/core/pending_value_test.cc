// PendingValue: ready values, values made once on the first Get, errors
// kept like values, copies sharing what was made, values made from others.
#include "core/util/pending_value.h"

#include <gtest/gtest.h>

#include <string>

namespace strata {
namespace {

TEST(PendingValueTest, AReadyValueIsThereAtOnce) {
  const PendingValue<double> v = 2.5;
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(*v.Get(), 2.5);
}

TEST(PendingValueTest, TheWaitRunsOnceOnTheFirstGetAndCopiesShareItsValue) {
  int waits = 0;
  const PendingValue<int> v([&waits]() -> absl::StatusOr<int> { return ++waits * 10; });
  const PendingValue<int> copy = v;
  EXPECT_EQ(waits, 0);  // nothing waited for before it is asked for
  EXPECT_EQ(*copy.Get(), 10);
  EXPECT_EQ(*v.Get(), 10);
  EXPECT_EQ(*copy.Get(), 10);
  EXPECT_EQ(waits, 1);
}

TEST(PendingValueTest, AnErrorIsKeptAsTheOutcome) {
  int waits = 0;
  const PendingValue<std::string> v([&waits]() -> absl::StatusOr<std::string> {
    ++waits;
    return absl::InternalError("the copy failed");
  });
  EXPECT_EQ(v.Get().status(), absl::InternalError("the copy failed"));
  EXPECT_EQ(v.Get().status(), absl::InternalError("the copy failed"));
  EXPECT_EQ(waits, 1);
}

TEST(PendingValueTest, ThenMakesItsValueFromTheFirstOnlyWhenAskedAndPassesErrorsOn) {
  int waits = 0;
  const PendingValue<int> v([&waits]() -> absl::StatusOr<int> { return ++waits * 10; });
  const PendingValue<std::string> text = v.Then([](const int& x) { return std::to_string(x + 1); });
  const PendingValue<bool> big = v.Then([](const int& x) { return x > 5; });
  EXPECT_EQ(waits, 0);
  EXPECT_EQ(*text.Get(), "11");
  EXPECT_TRUE(*big.Get());
  EXPECT_EQ(waits, 1);  // both share the first's one wait
  const PendingValue<int> failed(
      []() -> absl::StatusOr<int> { return absl::InternalError("the copy failed"); });
  EXPECT_EQ(failed.Then([](const int& x) { return x * 2; }).Get().status(),
            absl::InternalError("the copy failed"));
}

TEST(PendingValueTest, NoValueIsRefusedByName) {
  const PendingValue<double> none;
  EXPECT_FALSE(none.has_value());
  EXPECT_EQ(none.Get().status(), absl::FailedPreconditionError("no value was set"));
}

}  // namespace
}  // namespace strata
