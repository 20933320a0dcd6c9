// JSON files written whole or not at all (readers never see half a file),
// and durably,
// and read with errors that name the file.
#ifndef STRATA_CORE_UTIL_JSON_FILE_H_
#define STRATA_CORE_UTIL_JSON_FILE_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace strata {

// Writes `value` (pretty-printed) to `path` atomically and durably (a temp
// file flushed to the disk, renamed over `path`, the directory flushed), so
// a crash leaves the old file or the new one, and a finished write
// survives a power loss. A path that names a device, pipe or socket
// (/dev/null) is written in place.
absl::Status WriteJsonFile(const std::string& path, const nlohmann::json& value);

// The JSON document in `path`: NotFound when it cannot be read,
// InvalidArgument (with the parser's message) when it is not JSON.
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);

// The objects of a JSON-lines file (records, event logs), in order; with
// `event`, only those whose "event" is it. A line that is not an object (one
// cut short by a kill) is skipped. NotFound naming the path when it cannot
// be opened.
absl::StatusOr<std::vector<nlohmann::json>> ReadJsonLines(const std::string& path,
                                                          const std::string& event = "");

}  // namespace strata

#endif  // STRATA_CORE_UTIL_JSON_FILE_H_
