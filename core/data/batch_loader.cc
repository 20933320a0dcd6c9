#include "core/data/batch_loader.h"

#include <algorithm>
#include <numeric>

#include "core/status.h"
#include "core/util/rng.h"

namespace strata {

BatchLoader::BatchLoader(const Dataset& dataset, BatchLoaderOptions options)
    : dataset_(dataset), options_(std::move(options)) {
  STRATA_CHECK(options_.world >= 1 && options_.rank >= 0 && options_.rank < options_.world &&
                   options_.global_batch % options_.world == 0,
               "global batch ", options_.global_batch, " over ", options_.world, " ranks");
  const bool augments = options_.crop_padding > 0 || options_.horizontal_flip;
  STRATA_CHECK(!augments || dataset.sample_shape.rank() == 3,
               "augmentation needs images {H, W, C}, got ", dataset.sample_shape.ToString());
  STRATA_CHECK(options_.crop_padding >= 0, "crop padding ", options_.crop_padding);
  const int64_t channels = dataset.sample_shape.dims().back();
  scale_.resize(channels);
  offset_.resize(channels);
  for (int64_t c = 0; c < channels; ++c) {
    auto pick = [c](const std::vector<float>& v, float fallback) {
      if (v.empty()) return fallback;
      return v.size() == 1 ? v[0] : v[c];
    };
    const float mean = pick(options_.mean, 0.0f);
    const float std = pick(options_.std, 1.0f);
    scale_[c] = 1.0f / (255.0f * std);
    offset_[c] = -mean / std;
  }
  order_.resize(dataset.size());
  std::iota(order_.begin(), order_.end(), 0);
}

int64_t BatchLoader::steps_per_epoch() const {
  const int64_t g = options_.global_batch;
  return options_.drop_last ? dataset_.size() / g : (dataset_.size() + g - 1) / g;
}

void BatchLoader::StartEpoch(int64_t epoch) {
  epoch_ = epoch;
  std::iota(order_.begin(), order_.end(), 0);
  if (!options_.shuffle) return;
  Rng rng(DeriveSeed(options_.seed, 0xE90C0000ULL + static_cast<uint64_t>(epoch)));
  for (int64_t i = static_cast<int64_t>(order_.size()) - 1; i > 0; --i) {
    std::swap(order_[i], order_[rng.Below(i + 1)]);
  }
}

std::optional<BatchSlice> SliceOfRank(const std::vector<int64_t>& rows, int rank) {
  if (std::all_of(rows.begin(), rows.end(), [&](int64_t r) { return r == rows[0]; })) {
    return std::nullopt;
  }
  BatchSlice slice;
  for (int r = 0; r < rank; ++r) slice.begin += rows[r];
  slice.rows = rows[rank];
  return slice;
}

Batch BatchLoader::ForStep(int64_t step, const std::optional<BatchSlice>& slice) {
  const int64_t per_epoch = steps_per_epoch();
  if (step / per_epoch != epoch_) StartEpoch(step / per_epoch);
  return Get(step % per_epoch, slice);
}

Batch BatchLoader::Get(int64_t step, const std::optional<BatchSlice>& slice) const {
  const int64_t g = options_.global_batch;
  const int64_t begin = std::min(step * g, dataset_.size());
  const int64_t end = std::min(begin + g, dataset_.size());
  // Split [begin, end) into `world` contiguous parts; rank r takes part r
  // (or the slice asked for).
  const int64_t span = end - begin;
  const int64_t local_begin =
      slice ? std::min(begin + slice->begin, end) : begin + span * options_.rank / options_.world;
  const int64_t local_end = slice ? std::min(local_begin + slice->rows, end)
                                  : begin + span * (options_.rank + 1) / options_.world;
  const int64_t n = local_end - local_begin;
  const int64_t numel = dataset_.sample_shape.numel();
  std::vector<int64_t> dims = {n};
  for (int64_t d : dataset_.sample_shape.dims()) dims.push_back(d);
  Batch batch;
  batch.images = Tensor::Empty(Shape(dims));
  batch.labels.resize(n);
  float* out = batch.images.data();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = order_[local_begin + i];
    batch.labels[i] = dataset_.labels[index];
    Fill(index, out + i * numel);
  }
  return batch;
}

void BatchLoader::Fill(int64_t index, float* dst) const {
  const Shape& shape = dataset_.sample_shape;
  const int64_t numel = shape.numel();
  const int64_t channels = shape.dims().back();
  const uint8_t* src = dataset_.pixels.data() + index * numel;
  const int64_t pad = options_.crop_padding;
  if (pad == 0 && !options_.horizontal_flip) {
    for (int64_t j = 0; j < numel; ++j) {
      const int64_t c = j % channels;
      dst[j] = static_cast<float>(src[j]) * scale_[c] + offset_[c];
    }
    return;
  }
  // The crop's corner in the padded image, and the mirror, from the
  // sample's own stream for this epoch.
  Rng rng(DeriveSeed(DeriveSeed(options_.seed, 0xA6000000ULL + static_cast<uint64_t>(epoch_)),
                     static_cast<uint64_t>(index)));
  const int64_t dy = pad > 0 ? static_cast<int64_t>(rng.Below(2 * pad + 1)) - pad : 0;
  const int64_t dx = pad > 0 ? static_cast<int64_t>(rng.Below(2 * pad + 1)) - pad : 0;
  const bool flip = options_.horizontal_flip && rng.Below(2) == 1;
  const int64_t height = shape[0], width = shape[1];
  for (int64_t y = 0; y < height; ++y) {
    const int64_t sy = y + dy;
    for (int64_t x = 0; x < width; ++x) {
      const int64_t sx = (flip ? width - 1 - x : x) + dx;
      float* pixel = dst + (y * width + x) * channels;
      const bool inside = sy >= 0 && sy < height && sx >= 0 && sx < width;
      for (int64_t c = 0; c < channels; ++c) {
        // Padding is raw pixel 0, normalised like the rest.
        const float raw = inside ? static_cast<float>(src[(sy * width + sx) * channels + c]) : 0.0f;
        pixel[c] = raw * scale_[c] + offset_[c];
      }
    }
  }
}

}  // namespace strata
