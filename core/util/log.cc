#include "core/util/log.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <ctime>

#include "absl/strings/ascii.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/util/clock.h"

namespace strata {
namespace {

LogLevel LevelFromEnvironment() {
  const char* env = std::getenv("STRATA_LOG_LEVEL");
  const std::string level = env == nullptr ? "" : absl::AsciiStrToLower(env);
  if (level == "debug") return LogLevel::kDebug;
  if (level == "warning") return LogLevel::kWarning;
  if (level == "error") return LogLevel::kError;
  return LogLevel::kInfo;
}

std::atomic<int>& Threshold() {
  static std::atomic<int> threshold{static_cast<int>(LevelFromEnvironment())};
  return threshold;
}

absl::Mutex& ProcessMutex() {
  static absl::Mutex* mu = new absl::Mutex();
  return *mu;
}

std::string& ProcessName() {
  static std::string* name = new std::string();
  return *name;
}

constexpr char kLevelLetters[] = "DIWE";

// A thread's own log name (SetLogThreadSuffix): used when `own` is set.
struct ThreadName {
  bool own = false;
  std::string name, suffix;
};
ThreadName& ThisThread() {
  thread_local ThreadName name;
  return name;
}

}  // namespace

void SetLogProcess(std::string name) {
  ThreadName& thread = ThisThread();
  if (thread.own) {
    thread.name = std::move(name);
    return;
  }
  absl::MutexLock lock(&ProcessMutex());
  ProcessName() = std::move(name);
}

void SetLogThreadSuffix(std::string suffix) {
  ThreadName& thread = ThisThread();
  thread.own = true;
  thread.suffix = std::move(suffix);
  absl::MutexLock lock(&ProcessMutex());
  thread.name = ProcessName();
}

bool RefusalBudget::Take(absl::Time now, uint64_t* held_back) {
  absl::MutexLock lock(&mu_);
  if (now - period_start_ >= kPeriod) {
    period_start_ = now;
    written_ = 0;
  }
  if (written_ >= kLinesPerPeriod) {
    ++skipped_;
    return false;
  }
  ++written_;
  *held_back = skipped_;
  skipped_ = 0;
  return true;
}

bool TakeRefusalLine(uint64_t* held_back) {
  static RefusalBudget* budget = new RefusalBudget();
  // The monotonic clock: a stepped wall clock neither floods nor silences.
  return budget->Take(MonotonicNow(), held_back);
}

void SetLogLevel(LogLevel level) { Threshold().store(static_cast<int>(level)); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= Threshold().load(); }

void LogLine(LogLevel level, absl::string_view message) {
  while (!message.empty() && message.back() == '\n') message.remove_suffix(1);
  std::string line = absl::FormatTime("%Y-%m-%d %H:%M:%E3S ", absl::Now(), absl::LocalTimeZone());
  line += kLevelLetters[static_cast<int>(level)];
  line += ' ';
  const ThreadName& thread = ThisThread();
  if (thread.own) {
    line += '[';
    line += thread.name;
    line += thread.suffix;
    line += "] ";
  } else {
    absl::MutexLock lock(&ProcessMutex());
    if (!ProcessName().empty()) {
      line += '[';
      line += ProcessName();
      line += "] ";
    }
  }
  line.append(message.data(), message.size());
  line += '\n';
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

void PassLogLine(absl::string_view line) {
  while (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  std::string whole(line);
  whole += '\n';
  (void)!::write(STDERR_FILENO, whole.data(), whole.size());
}

bool IsLogLine(absl::string_view line) {
  // "YYYY-MM-DD HH:MM:SS.mmm L "
  static constexpr absl::string_view kShape = "dddd-dd-dd dd:dd:dd.ddd L ";
  if (line.size() < kShape.size()) return false;
  for (size_t i = 0; i < kShape.size(); ++i) {
    const char want = kShape[i];
    const char got = line[i];
    if (want == 'd' && !std::isdigit(static_cast<unsigned char>(got))) return false;
    if (want == 'L' && absl::string_view(kLevelLetters).find(got) == absl::string_view::npos) {
      return false;
    }
    if (want != 'd' && want != 'L' && want != got) return false;
  }
  return true;
}

}  // namespace strata
