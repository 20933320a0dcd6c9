#include "core/util/ready_file.h"

#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/util/clock.h"
#include "core/util/json_file.h"

namespace strata {

absl::Status WriteReadyFile(const std::string& path, nlohmann::json facts) {
  if (path.empty()) return absl::OkStatus();
  facts["pid"] = static_cast<int64_t>(::getpid());
  return WriteJsonFile(path, facts);
}

absl::StatusOr<nlohmann::json> AwaitReadyFile(
    const std::string& path, const std::string& who, absl::Duration timeout,
    const std::function<std::optional<std::string>()>& gone) {
  const absl::Time deadline = MonotonicNow() + timeout;
  while (true) {
    std::ifstream in(path);
    if (in) {
      nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (j.is_object()) return j;
    }
    if (gone) {
      if (std::optional<std::string> why = gone(); why.has_value()) {
        return absl::FailedPreconditionError(absl::StrCat(who, " ", *why, " before it was ready"));
      }
    }
    if (MonotonicNow() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(who, " did not say it was ready (", path,
                                                      ") within ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
}

}  // namespace strata
