#include "core/util/env.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "core/util/log.h"

namespace strata {

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  int64_t parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed)) {
    LogWarning("ignoring %s=%s (not an integer); using %lld", name, value,
               static_cast<long long>(fallback));
    return fallback;
  }
  return parsed;
}

std::string EnvString(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value == nullptr ? fallback : std::string(value);
}

}  // namespace strata
