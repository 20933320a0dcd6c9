// FirstDifference: where two JSON documents first differ, as a field path
// a person can act on ("training.batch_size: 64 here, 32 there").
// Objects are compared key by key in sorted order, arrays entry by entry.
#ifndef STRATA_CORE_UTIL_JSON_DIFFERENCE_H_
#define STRATA_CORE_UTIL_JSON_DIFFERENCE_H_

#include <string>

namespace strata {

// "" when `here` and `there` (JSON texts) are equal; otherwise the path of
// the first difference with both values (long values cut to 60
// characters). Text that is not JSON (or empty) differs at "(the whole document)".
// Recursion follows `here`, so an untrusted `there` cannot make it deeper
// than the trusted side.
std::string FirstDifference(const std::string& here, const std::string& there);

}  // namespace strata

#endif  // STRATA_CORE_UTIL_JSON_DIFFERENCE_H_
