// PendingValue: ready values, values made once on the first Get, errors
// kept like values, copies sharing what was made.
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

TEST(PendingValueTest, NoValueIsRefusedByName) {
  const PendingValue<double> none;
  EXPECT_FALSE(none.has_value());
  EXPECT_EQ(none.Get().status(), absl::FailedPreconditionError("no value was set"));
}

}  // namespace
}  // namespace strata
