// Comma-separated count flags.
#include "core/util/count_list.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(CountListTest, ParsesCountsInOrderAndSkipsEmptyItems) {
  absl::StatusOr<std::vector<int64_t>> counts = ParseCountList("--workers", "1,2,,4");
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(*counts, (std::vector<int64_t>{1, 2, 4}));
  absl::StatusOr<std::vector<int64_t>> none = ParseCountList("--workers", "");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(CountListTest, NamesTheFlagAndTheBadItem) {
  for (const char* bad : {"x", "0", "-3", "2.5"}) {
    absl::StatusOr<std::vector<int64_t>> counts =
        ParseCountList("--sizes-mib", std::string("4,") + bad);
    EXPECT_EQ(counts.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(counts.status().message(),
              std::string("--sizes-mib: \"") + bad + "\" is not a count >= 1");
  }
}

}  // namespace
}  // namespace strata
