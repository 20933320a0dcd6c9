// JSON files written whole or not at all: readers never see half a file.
#ifndef STRATA_CORE_UTIL_JSON_FILE_H_
#define STRATA_CORE_UTIL_JSON_FILE_H_

#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"

namespace strata {

// Writes `value` (pretty-printed) to `path` atomically (temp file + rename).
// A path that names a device, pipe or socket (/dev/null) is written in place.
absl::Status WriteJsonFile(const std::string& path, const nlohmann::json& value);

}  // namespace strata

#endif  // STRATA_CORE_UTIL_JSON_FILE_H_
