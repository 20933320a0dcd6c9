#include "core/util/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

namespace strata {
namespace {

// What the calls made by `body` wrote to stderr.
template <typename Body>
std::string CaptureStderr(Body body) {
  const std::string path = ::testing::TempDir() + "/log_test_stderr";
  std::FILE* f = std::fopen(path.c_str(), "w");
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(::fileno(f), STDERR_FILENO);
  body();
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::fclose(f);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(LogTest, LinesCarryTimeLevelAndProcessAndLowLevelsAreDropped) {
  SetLogProcess("server 3");
  SetLogLevel(LogLevel::kInfo);
  const std::string out = CaptureStderr([] {
    LogDebug("not shown %d", 1);
    LogInfo("serving %d chunks on %s", 15, "tcp://127.0.0.1:7000");
    LogWarning("refused a request: %s", "push of unknown key 99\n");
  });
  const std::regex line(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} ([DIWE]) \[server 3\] (.*))");
  std::istringstream lines(out);
  std::string l;
  std::vector<std::pair<std::string, std::string>> seen;
  while (std::getline(lines, l)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << l;
    EXPECT_TRUE(IsLogLine(l)) << l;
    seen.emplace_back(m[1], m[2]);
  }
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"I", "serving 15 chunks on tcp://127.0.0.1:7000"},
      {"W", "refused a request: push of unknown key 99"}};
  EXPECT_EQ(seen, expected);

  SetLogLevel(LogLevel::kDebug);
  EXPECT_NE(CaptureStderr([] { LogDebug("now shown"); }).find(" D [server 3] now shown"),
            std::string::npos);
  SetLogLevel(LogLevel::kInfo);
  SetLogProcess("");
}

TEST(LogTest, AThreadWithALogNameOfItsOwnNamesOnlyItsLines) {
  SetLogProcess("worker");
  std::string job_line, main_line;
  std::thread job([&] {
    SetLogThreadSuffix(", job 2");
    SetLogProcess("worker 1");  // this thread's rank in job 2
    job_line = CaptureStderr([] { LogInfo("joined"); });
  });
  job.join();
  main_line = CaptureStderr([] { LogInfo("started"); });
  EXPECT_NE(job_line.find(" I [worker 1, job 2] joined"), std::string::npos) << job_line;
  EXPECT_NE(main_line.find(" I [worker] started"), std::string::npos) << main_line;
  SetLogProcess("");
}

// Junk traffic cannot flood the log: refusals pass at a bounded rate, and
// the first line of a new period says how many were held back.
TEST(LogTest, RefusalsPassAtABoundedRateAndCountWhatWasHeldBack) {
  RefusalBudget budget;
  const absl::Time start = absl::UnixEpoch() + absl::Hours(1);
  uint64_t held_back = 99;
  int written = 0;
  for (int i = 0; i < 1000; ++i) written += budget.Take(start + absl::Milliseconds(i), &held_back);
  EXPECT_EQ(written, RefusalBudget::kLinesPerPeriod);
  EXPECT_EQ(held_back, 0u);
  ASSERT_TRUE(budget.Take(start + RefusalBudget::kPeriod, &held_back));
  EXPECT_EQ(held_back, 1000u - RefusalBudget::kLinesPerPeriod);
  ASSERT_TRUE(budget.Take(start + RefusalBudget::kPeriod, &held_back));
  EXPECT_EQ(held_back, 0u);

  // The process's own budget, through LogRefusal.
  const std::string out = CaptureStderr([] {
    for (int i = 0; i < 500; ++i) LogRefusal("refused a request: junk %d", i);
  });
  size_t lines = 0;
  for (size_t at = out.find("refused a request: junk"); at != std::string::npos;
       at = out.find("refused a request: junk", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, static_cast<size_t>(RefusalBudget::kLinesPerPeriod)) << out;
}

TEST(LogTest, OtherOutputIsNotALogLine) {
  EXPECT_FALSE(IsLogLine("[traffic] {\"process\":\"server 0\"}"));
  EXPECT_FALSE(IsLogLine("final: mode=ps test_accuracy=0.9 images_per_sec=100"));
  EXPECT_FALSE(IsLogLine("2026-12-01 13:11:03.123 X [server 0] unknown level"));
  EXPECT_TRUE(IsLogLine("2026-12-01 13:11:03.123 E [fc worker 1] lost"));
}

}  // namespace
}  // namespace strata
