// BatchShares: how the rows of each global batch divide over the ranks
// that compute them (a cluster job's conv workers): "even", or one positive
// weight per rank, "3:1" (rank 0 takes three rows for every one of rank 1).
// A straggling worker given a smaller share stops holding the others up;
// the global batch, and so what every step computes, stays the same.
//
//   STRATA_ASSIGN_OR_RETURN(BatchShares shares, BatchShares::Parse("3:1"));
//   STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> rows, shares.Rows(64, 2));  // {48, 16}
//
// Immutable value type.
#ifndef STRATA_CORE_MODEL_BATCH_SHARES_H_
#define STRATA_CORE_MODEL_BATCH_SHARES_H_

#include <cstdint>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace strata {

class BatchShares {
 public:
  // The largest weight a rank may be given (so sums never overflow and a
  // typo such as "31" for "3:1" with one rank is caught by the count).
  static constexpr int64_t kMaxWeight = 1000;

  // Equal shares.
  BatchShares() = default;
  // "even", or weights 1..kMaxWeight joined by ':'. InvalidArgument naming
  // the rule the text breaks.
  static absl::StatusOr<BatchShares> Parse(absl::string_view text);

  bool even() const { return weights_.empty(); }
  // One weight per rank; empty when even.
  const std::vector<int64_t>& weights() const { return weights_; }

  // The rows each of `ranks` ranks takes of a global batch of `global`
  // rows, in rank order, summing to `global`: proportional to the weights,
  // rounded by largest remainder (ties to the lower rank). InvalidArgument
  // when the weights are not one per rank or a rank would get no row.
  absl::StatusOr<std::vector<int64_t>> Rows(int64_t global, int ranks) const;
  // The same shares with a weight per rank spelled out ("1:1" for even over
  // two ranks); explicit weights are returned as they are.
  BatchShares ForRanks(int ranks) const;

  // "even" or "3:1", as Parse reads it.
  std::string ToString() const;
  friend bool operator==(const BatchShares& a, const BatchShares& b) {
    return a.weights_ == b.weights_;
  }

 private:
  explicit BatchShares(std::vector<int64_t> weights) : weights_(std::move(weights)) {}
  std::vector<int64_t> weights_;
};

// The batch.shares knob: how each global batch divides over the job's conv
// workers, "even" or a weight per conv worker ("3:1"); declared by every
// worker of a cluster job through runtime/cluster_hooks.h with one weight
// per conv worker spelled out.
inline constexpr char kBatchSharesKnob[] = "batch.shares";
// Registers batch.shares with KnobCatalog::Global(); a second call does nothing.
void RegisterBatchSharesKnob();

}  // namespace strata

#endif  // STRATA_CORE_MODEL_BATCH_SHARES_H_
