// Order statistics over a sample of measurements.
#ifndef STRATA_CORE_UTIL_STATISTICS_H_
#define STRATA_CORE_UTIL_STATISTICS_H_

#include <vector>

namespace strata {

// The median of `values` (the mean of the middle two for an even count);
// 0 for an empty sample.
double Median(std::vector<double> values);

// The q-quantile (0..1) of `values` by nearest rank (the value at rank
// floor(q * n), the last for q = 1); 0 for an empty sample.
double Quantile(std::vector<double> values, double q);

}  // namespace strata

#endif  // STRATA_CORE_UTIL_STATISTICS_H_
