#include "core/model/batch_shares.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/control/knobs.h"

namespace strata {

absl::StatusOr<BatchShares> BatchShares::Parse(absl::string_view text) {
  if (text == "even") return BatchShares();
  std::vector<int64_t> weights;
  for (absl::string_view part : absl::StrSplit(text, ':')) {
    int64_t w = 0;
    if (!absl::SimpleAtoi(part, &w) || w < 1 || w > kMaxWeight) {
      return absl::InvalidArgumentError(absl::StrCat(
          "batch shares \"", text, "\": \"", part, "\" is not a weight from 1 to ", kMaxWeight,
          " (write \"even\" or one weight per conv worker joined by ':', e.g. \"3:1\")"));
    }
    weights.push_back(w);
  }
  return BatchShares(std::move(weights));
}

absl::StatusOr<std::vector<int64_t>> BatchShares::Rows(int64_t global, int ranks) const {
  if (ranks < 1) return absl::InvalidArgumentError("batch shares: no rank to share a batch");
  if (!even() && static_cast<int>(weights_.size()) != ranks) {
    return absl::InvalidArgumentError(absl::StrCat("batch shares ", ToString(), " give ",
                                                   weights_.size(), " weights for ", ranks,
                                                   " conv workers (one each)"));
  }
  const std::vector<int64_t> weights = ForRanks(ranks).weights_;
  const int64_t total = std::accumulate(weights.begin(), weights.end(), int64_t{0});
  std::vector<int64_t> rows(ranks);
  std::vector<int> by_remainder(ranks);
  int64_t given = 0;
  for (int r = 0; r < ranks; ++r) {
    rows[r] = global * weights[r] / total;
    given += rows[r];
    by_remainder[r] = r;
  }
  // The rows rounding left over go to the largest remainders.
  std::stable_sort(by_remainder.begin(), by_remainder.end(), [&](int a, int b) {
    return global * weights[a] % total > global * weights[b] % total;
  });
  for (int i = 0; given < global; ++i, ++given) ++rows[by_remainder[i]];
  for (int r = 0; r < ranks; ++r) {
    if (rows[r] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch shares ", ToString(), " give conv worker ", r,
                       " no row of a global batch of ", global));
    }
  }
  return rows;
}

BatchShares BatchShares::ForRanks(int ranks) const {
  return even() ? BatchShares(std::vector<int64_t>(std::max(ranks, 0), 1)) : *this;
}

std::string BatchShares::ToString() const {
  return even() ? "even" : absl::StrJoin(weights_, ":");
}

void RegisterBatchSharesKnob() {
  // A change alters the math: per-worker batch statistics (BatchNorm) and
  // the summation order change.
  KnobCatalog::Global().RegisterIfNew(KnobSpec(
      kBatchSharesKnob,
      "how each global batch divides over the conv workers: even, or a weight per conv worker "
      "(3:1)",
      /*alters_math=*/true,
      [](const std::string& value) { return BatchShares::Parse(value).status(); },
      [](const std::string& start, const std::string& value) -> absl::Status {
        absl::StatusOr<BatchShares> started = BatchShares::Parse(start);
        absl::StatusOr<BatchShares> wanted = BatchShares::Parse(value);
        if (!started.ok() || !wanted.ok() || wanted->even()) return wanted.status();
        if (wanted->weights().size() != started->weights().size()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "the job has ", started->weights().size(), " conv workers; give one weight each"));
        }
        return absl::OkStatus();
      }));
}

}  // namespace strata
