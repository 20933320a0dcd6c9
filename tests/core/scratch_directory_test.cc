// ScratchDirectory (core/util/scratch_directory.h): made under /tmp with
// its prefix, removed with what it holds when it goes, once (a moved-from
// one removes nothing).
#include "core/util/scratch_directory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

namespace strata {
namespace {

TEST(ScratchDirectoryTest, ItIsRemovedWithWhatItHoldsWhenItGoesAndOnlyOnce) {
  std::string path;
  {
    absl::StatusOr<ScratchDirectory> made = ScratchDirectory::Make("strata_scratch_test");
    ASSERT_TRUE(made.ok()) << made.status();
    std::optional<ScratchDirectory> scratch(std::move(*made));
    path = scratch->path();
    EXPECT_EQ(path.rfind("/tmp/strata_scratch_test_", 0), 0u) << path;
    ASSERT_TRUE(std::filesystem::is_directory(path));
    std::filesystem::create_directories(path + "/records");
    std::ofstream(path + "/records/a.jsonl") << "{}\n";
    EXPECT_TRUE(made->path().empty());   // moved from: it removes nothing
    made = absl::InternalError("gone");  // destroys the moved-from one
    EXPECT_TRUE(std::filesystem::exists(path + "/records/a.jsonl"));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ScratchDirectoryTest, AFolderThatCannotBeMadeIsNamed) {
  const absl::StatusOr<ScratchDirectory> made = ScratchDirectory::Make("no/such/folder/x");
  EXPECT_EQ(made.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(made.status().message().find("/tmp/no/such/folder/x_XXXXXX"), std::string::npos)
      << made.status();
}

}  // namespace
}  // namespace strata
