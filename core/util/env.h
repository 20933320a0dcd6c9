// Settings read from the environment, in one place.
//
// Every STRATA_* environment variable that changes behaviour is read through
// these helpers so a malformed value is reported the same way everywhere.
#ifndef STRATA_CORE_UTIL_ENV_H_
#define STRATA_CORE_UTIL_ENV_H_

#include <cstdint>
#include <string>

namespace strata {

// The integer value of environment variable `name`, or `fallback` when it is
// unset or empty. A value that is not an integer is reported on stderr and
// `fallback` is used.
int64_t EnvInt(const char* name, int64_t fallback);

// The value of environment variable `name`, or `fallback` when unset.
std::string EnvString(const char* name, const std::string& fallback);

}  // namespace strata

#endif  // STRATA_CORE_UTIL_ENV_H_
