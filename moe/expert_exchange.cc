#include "moe/expert_exchange.h"

#include <tuple>

#include "absl/strings/str_cat.h"

namespace strata::moe {

const char* PhaseName(ExchangePhase phase) {
  switch (phase) {
    case ExchangePhase::kCapacity:
      return "capacity";
    case ExchangePhase::kSlots:
      return "slots";
    case ExchangePhase::kOutputs:
      return "outputs";
    case ExchangePhase::kOutputGrads:
      return "output gradients";
    case ExchangePhase::kSlotGrads:
      return "slot gradients";
    case ExchangePhase::kWeights:
      return "weights";
    case ExchangePhase::kWeightGrads:
      return "weight gradients";
  }
  return "unknown phase";
}

bool ExchangeTag::operator<(const ExchangeTag& o) const {
  return std::tie(call, layer, phase, chunk, chunks) <
         std::tie(o.call, o.layer, o.phase, o.chunk, o.chunks);
}

bool ExchangeTag::operator==(const ExchangeTag& o) const {
  return std::tie(call, layer, phase, chunk, chunks) ==
         std::tie(o.call, o.layer, o.phase, o.chunk, o.chunks);
}

std::string ExchangeTag::ToString() const {
  return absl::StrCat(PhaseName(phase), " of layer ", layer, ", call ", call, ", chunk ", chunk,
                      "/", chunks);
}

absl::Status CheckBlock(const ExchangeBlock& block, const BlockExpectation& expect) {
  if (block.counts.size() != expect.max_counts.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(block.counts.size(), " counts, expected ", expect.max_counts.size()));
  }
  int64_t rows = 0;
  for (size_t i = 0; i < block.counts.size(); ++i) {
    const int64_t c = block.counts[i];
    const int64_t bound = expect.max_counts[i];
    if (expect.exact ? c != bound : (c < 0 || c > bound)) {
      return absl::InvalidArgumentError(
          absl::StrCat("count ", i, " is ", c, ", expected ", expect.exact ? "" : "0..", bound));
    }
    rows += c;
  }
  // Rows of width 0 (counts that are plain values) carry no tensor.
  const int64_t want_rows = expect.width > 0 ? rows : 0;
  const int64_t got_rows = block.rows.defined() ? block.rows.dim(0) : 0;
  const int64_t got_width = block.rows.defined() ? block.rows.dim(1) : expect.width;
  if (got_rows != want_rows || (want_rows > 0 && got_width != expect.width)) {
    return absl::InvalidArgumentError(absl::StrCat("rows of shape [", got_rows, ", ", got_width,
                                                   "], expected [", rows, ", ", expect.width, "]"));
  }
  return absl::OkStatus();
}

}  // namespace strata::moe
