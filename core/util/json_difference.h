// FirstDifference: where two JSON documents first differ, as a field path
// a person can act on ("training.batch_size: 64 here, 32 there").
// Objects are compared key by key in sorted order, arrays entry by entry.
#ifndef STRATA_CORE_UTIL_JSON_DIFFERENCE_H_
#define STRATA_CORE_UTIL_JSON_DIFFERENCE_H_

#include <string>

namespace strata {

// "" when `here` and `there` (JSON texts) are equal; otherwise the path of
// the first difference with both values (scalars cut to 60 characters,
// objects and arrays by their size). Text that is not JSON (or empty)
// differs at "(the whole document)". Either side may be untrusted: values
// nested deeper than 64 levels are dropped while parsing, so a hostile
// document cannot drive any recursion deep.
std::string FirstDifference(const std::string& here, const std::string& there);

// The path alone ("training.batch_size", "(the whole document)"; "" when
// equal): for a refusal sent to a peer, which must not learn this side's
// values.
std::string FirstDifferingField(const std::string& here, const std::string& there);

}  // namespace strata

#endif  // STRATA_CORE_UTIL_JSON_DIFFERENCE_H_
