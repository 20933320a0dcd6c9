// Command-line helpers shared by the binaries: dashes in flag names, a
// flag given once per job, and the per-job output paths.
#include "flags/flag_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flags/cluster_flags.h"

namespace strata {
namespace {

std::vector<std::string> Args(NormalizedArgs& args) {
  std::vector<std::string> out;
  for (int i = 0; i < args.argc(); ++i) out.push_back(args.argv()[i]);
  return out;
}

TEST(NormalizedArgsTest, DashesBecomeUnderscoresInNamesOnly) {
  std::vector<std::string> in = {"bin", "--max-steps=5", "--summary-out", "a-b.json",
                                 "--",  "--not-a-flag"};
  std::vector<char*> argv;
  for (auto& s : in) argv.push_back(s.data());
  NormalizedArgs args(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(Args(args), (std::vector<std::string>{"bin", "--max_steps=5", "--summary_out",
                                                  "a-b.json", "--", "--not-a-flag"}));
}

TEST(NormalizedArgsTest, ARepeatedFlagIsTakenOutWithEveryValueInOrder) {
  std::vector<std::string> in = {"bin",          "--job", "a.json", "--rank", "1",
                                 "--job=b.json", "--job", "c.json", "--",     "--job"};
  std::vector<char*> argv;
  for (auto& s : in) argv.push_back(s.data());
  NormalizedArgs args(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(args.TakeRepeated("job"), (std::vector<std::string>{"a.json", "b.json", "c.json"}));
  EXPECT_EQ(Args(args), (std::vector<std::string>{"bin", "--rank", "1", "--", "--job"}));
  EXPECT_TRUE(args.TakeRepeated("job").empty());  // taken once
}

TEST(PathForJobTest, TheJobIdGoesBeforeTheExtension) {
  EXPECT_EQ(PathForJob("out/summary.json", 2), "out/summary.job2.json");
  EXPECT_EQ(PathForJob("params.ckpt", 11), "params.job11.ckpt");
  EXPECT_EQ(PathForJob("out.d/log", 3), "out.d/log.job3");
  EXPECT_EQ(PathForJob("out/.hidden", 3), "out/.hidden.job3");
  EXPECT_EQ(PathForJob("", 3), "");
}

}  // namespace
}  // namespace strata
