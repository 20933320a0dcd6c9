#include "core/util/crash_point.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "core/util/log.h"

namespace strata {
namespace {

struct CrashSpec {
  std::string name;
  int64_t nth = 1;
  std::string program;
  std::string marker;
};

// STRATA_CRASH_AT parsed; false when it is malformed.
bool ParseCrashSpec(absl::string_view text, CrashSpec& spec) {
  // "rename:FILE" holds a colon itself: NAME is everything before PROGRAM.
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() < 3) return false;
  spec.marker = parts.back();
  spec.program = parts[parts.size() - 2];
  parts.resize(parts.size() - 2);
  std::string name = absl::StrJoin(parts, ":");
  const size_t hash = name.rfind('#');
  if (hash != std::string::npos) {
    if (!absl::SimpleAtoi(name.substr(hash + 1), &spec.nth) || spec.nth < 1) return false;
    name.resize(hash);
  }
  spec.name = name;
  return !spec.name.empty() && !spec.program.empty() && !spec.marker.empty();
}

}  // namespace

void CrashPoint(absl::string_view name) {
  const char* text = std::getenv("STRATA_CRASH_AT");
  if (text == nullptr || *text == '\0') return;
  CrashSpec spec;
  if (!ParseCrashSpec(text, spec)) {
    static absl::once_flag warned;
    absl::call_once(warned, [text] {
      LogWarning("ignoring STRATA_CRASH_AT=\"%s\": not NAME[#N]:PROGRAM:MARKER", text);
    });
    return;
  }
  if (spec.name != name || spec.program != program_invocation_short_name) return;
  static absl::Mutex mu(absl::kConstInit);
  static std::map<std::string, int64_t>* hits = new std::map<std::string, int64_t>;
  {
    absl::MutexLock lock(&mu);
    if (++(*hits)[spec.name] != spec.nth) return;
  }
  const int fd = ::open(spec.marker.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return;  // crashed here once already (or the marker cannot be made)
  ::close(fd);
  LogWarning("crash point %s: killing this process (STRATA_CRASH_AT)", spec.name.c_str());
  ::kill(::getpid(), SIGKILL);
}

}  // namespace strata
