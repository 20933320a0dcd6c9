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

#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

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
template <typename... Args>
void LogError(const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (LogEnabled(LogLevel::kError)) LogLine(LogLevel::kError, absl::StrFormat(format, args...));
}

}  // namespace strata

#endif  // STRATA_CORE_UTIL_LOG_H_
