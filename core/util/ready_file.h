// Ready files: the structured channel through which a serving process says
// it serves, and where. Started with --ready-file PATH, it writes one JSON
// object there (atomically) once its sockets are bound:
//
//   {"role": "server", "rank": 0, "address": "tcp://127.0.0.1:41234", "pid": 4711, ...}
//
// and whoever started it waits for the file instead of reading its output.
#ifndef STRATA_CORE_UTIL_READY_FILE_H_
#define STRATA_CORE_UTIL_READY_FILE_H_

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace strata {

// Writes `facts` with this process's "pid" added to `path` ("" does nothing).
absl::Status WriteReadyFile(const std::string& path, nlohmann::json facts);

// Waits until `path` holds a ready object and returns it. `gone` is asked
// while waiting and returns why the process cannot become ready any more
// (it exited) or nullopt: FailedPrecondition with that reason, so a dead
// process never costs the whole timeout. DeadlineExceeded after `timeout`,
// naming `who`.
absl::StatusOr<nlohmann::json> AwaitReadyFile(
    const std::string& path, const std::string& who, absl::Duration timeout,
    const std::function<std::optional<std::string>()>& gone);

}  // namespace strata

#endif  // STRATA_CORE_UTIL_READY_FILE_H_
