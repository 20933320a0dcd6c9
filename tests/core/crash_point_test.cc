// Crash points (core/util/crash_point.h): the process named by
// STRATA_CRASH_AT dies by SIGKILL at the N-th time it reaches the point,
// once per marker; any other point, program or count does nothing. Each
// case runs the point in a forked child.
#include "core/util/crash_point.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"

namespace strata {
namespace {

class CrashPointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/strata_crash_point_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    marker_ = dir_ + "/crashed";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `times` calls of CrashPoint(`name`) in a child with
  // STRATA_CRASH_AT=`spec`; the signal that ended it, 0 when it exited.
  static int RunInChild(const std::string& spec, const std::string& name, int times) {
    const pid_t child = ::fork();
    if (child == 0) {
      ::setenv("STRATA_CRASH_AT", spec.c_str(), 1);
      for (int i = 0; i < times; ++i) CrashPoint(name);
      ::_exit(0);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  std::string Spec(const std::string& point) const {
    return absl::StrCat(point, ":", program_invocation_short_name, ":", marker_);
  }

  std::string dir_;
  std::string marker_;
};

TEST_F(CrashPointTest, TheNamedPointKillsTheProcessOnceAndLeavesTheMarker) {
  EXPECT_EQ(RunInChild(Spec("part-write"), "part-write", 1), SIGKILL);
  EXPECT_TRUE(std::filesystem::exists(marker_));
  // The marker stands: a restarted process runs on.
  EXPECT_EQ(RunInChild(Spec("part-write"), "part-write", 1), 0);
}

TEST_F(CrashPointTest, TheNthTimeCountsAndANameWithAColonWorks) {
  EXPECT_EQ(RunInChild(Spec("rename:MANIFEST.json#3"), "rename:MANIFEST.json", 2), 0);
  EXPECT_FALSE(std::filesystem::exists(marker_));
  EXPECT_EQ(RunInChild(Spec("rename:MANIFEST.json#3"), "rename:MANIFEST.json", 3), SIGKILL);
  EXPECT_TRUE(std::filesystem::exists(marker_));
}

TEST_F(CrashPointTest, AnotherPointOrProgramOrAMalformedSpecDoesNothing) {
  EXPECT_EQ(RunInChild(Spec("prune"), "restore", 5), 0);
  EXPECT_EQ(RunInChild(absl::StrCat("prune:strata_server:", marker_), "prune", 5), 0);
  EXPECT_EQ(RunInChild("prune", "prune", 5), 0);
  EXPECT_EQ(RunInChild(Spec("prune#0"), "prune", 5), 0);
  EXPECT_FALSE(std::filesystem::exists(marker_));
}

}  // namespace
}  // namespace strata
