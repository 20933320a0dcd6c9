#include "moe/routing.h"

#include <algorithm>
#include <cmath>

namespace strata::moe {

int64_t CapacityFor(const CapacityRule& rule, int64_t tokens, int experts, int k,
                    int64_t largest_need) {
  if (rule.factor == 0) return std::max<int64_t>(1, largest_need);
  // k * |f| * ceil(T / E): the padded size (f > 0) or the cap on the need (f < 0).
  const int64_t per_expert = (tokens + experts - 1) / experts;
  const auto c =
      static_cast<int64_t>(std::ceil(k * std::abs(rule.factor) * static_cast<double>(per_expert)));
  if (rule.factor < 0) return std::max<int64_t>(1, std::min(largest_need, c));
  const int64_t a = std::max<int64_t>(1, rule.alignment);
  return std::max<int64_t>(a, (c + a - 1) / a * a);
}

}  // namespace strata::moe
