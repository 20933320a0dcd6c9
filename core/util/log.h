// Log: Strata's one logging facility. Every line goes to stderr, whole
// (one write per line, so lines of threads and processes never interleave
// within a line), as
//
//   2026-12-01 13:11:03.123 W [server 0] refused a request: push of unknown key 99
//
// with the local time, the level (D, I, W, E), and the process's name set
// once by its main (SetLogProcess). Lines below the level in force are
// dropped; the level comes from $STRATA_LOG_LEVEL (debug, info, warning or
// error; default info) and can be set with SetLogLevel.
//
//   SetLogProcess("server 0");
//   LogInfo("serving %d parameters on %s", n, address);
//   LogWarning("no job token: the cluster is open");
//
// Machine-read lines ("[traffic] {...}", a binary's "final:" line) and the
// progress line are not log lines and do not go through here.
#ifndef STRATA_CORE_UTIL_LOG_H_
#define STRATA_CORE_UTIL_LOG_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace strata {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// The name in brackets on every line ("server 0", "fc worker 1"); "" for none.
// On a thread that took a log name of its own (SetLogThreadSuffix), it
// names that thread's lines only.
void SetLogProcess(std::string name);
// Gives the calling thread a log name of its own: the process's name as it
// is now, then `suffix` ("worker 0, job 2" for ", job 2"), for a process
// that runs several jobs, one per thread. Later SetLogProcess calls on this
// thread change only its own name.
void SetLogThreadSuffix(std::string suffix);
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
// Writes one line (a trailing newline in `message` is dropped).
void LogLine(LogLevel level, absl::string_view message);
// Whether `line` (a child's output) is a log line: the launcher leaves
// those as they are instead of prefixing them with the child's name.
bool IsLogLine(absl::string_view line);
// Writes a log line another process made, as it is (its time, level and
// name stay its own).
void PassLogLine(absl::string_view line);

template <typename... Args>
void LogDebug(const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (LogEnabled(LogLevel::kDebug)) LogLine(LogLevel::kDebug, absl::StrFormat(format, args...));
}
template <typename... Args>
void LogInfo(const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (LogEnabled(LogLevel::kInfo)) LogLine(LogLevel::kInfo, absl::StrFormat(format, args...));
}
template <typename... Args>
void LogWarning(const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (LogEnabled(LogLevel::kWarning)) LogLine(LogLevel::kWarning, absl::StrFormat(format, args...));
}
// A refusal of what a peer sent (a connection, a request, a lane). Peers
// can send junk as fast as the network carries it, so refusals are logged
// as warnings at a bounded rate: at most RefusalBudget::kLinesPerPeriod
// lines per RefusalBudget::kPeriod in the whole process. The refusals held
// back are counted, and the next refusal line written says how many ("(and
// 1234 more refused since the last such line)").
//
// RefusalBudget is that rule on a clock the caller reads (LogRefusal's is
// the process's, on the monotonic clock). Thread-safe.
class RefusalBudget {
 public:
  static constexpr int kLinesPerPeriod = 20;
  static constexpr absl::Duration kPeriod = absl::Seconds(10);
  // Whether a line may be written at `now`; if so, `held_back` is set to
  // the refusals not logged since the last line that was.
  bool Take(absl::Time now, uint64_t* held_back);

 private:
  absl::Mutex mu_;
  absl::Time period_start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int written_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t skipped_ ABSL_GUARDED_BY(mu_) = 0;
};
// The process's budget, on the monotonic clock.
bool TakeRefusalLine(uint64_t* held_back);
template <typename... Args>
void LogRefusal(const absl::FormatSpec<Args...>& format, const Args&... args) {
  uint64_t held_back = 0;
  if (!LogEnabled(LogLevel::kWarning) || !TakeRefusalLine(&held_back)) return;
  std::string line = absl::StrFormat(format, args...);
  if (held_back > 0) {
    absl::StrAppendFormat(&line, " (and %d more refused since the last such line)", held_back);
  }
  LogLine(LogLevel::kWarning, line);
}

template <typename... Args>
void LogError(const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (LogEnabled(LogLevel::kError)) LogLine(LogLevel::kError, absl::StrFormat(format, args...));
}

}  // namespace strata

#endif  // STRATA_CORE_UTIL_LOG_H_
