// Reader for CIFAR-10 binary batch files.
#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/data/dataset.h"

namespace strata {
namespace {
constexpr int64_t kCifarSide = 32;
constexpr int64_t kCifarChannels = 3;
constexpr int64_t kCifarPixels = kCifarSide * kCifarSide * kCifarChannels;
constexpr int64_t kCifarRecord = 1 + kCifarPixels;
constexpr int64_t kCifarClasses = 10;
}  // namespace

absl::StatusOr<Dataset> ReadCifar10(const std::vector<std::string>& paths) {
  Dataset ds;
  ds.sample_shape = Shape{kCifarSide, kCifarSide, kCifarChannels};
  ds.classes = kCifarClasses;
  std::vector<char> record(kCifarRecord);
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
    const int64_t bytes = static_cast<int64_t>(in.tellg());
    if (bytes == 0 || bytes % kCifarRecord != 0) {
      return absl::DataLossError(
          absl::StrCat(path, ": ", bytes, " bytes is not a whole number of CIFAR-10 records of ",
                       kCifarRecord, " bytes (truncated or not a CIFAR-10 binary batch)"));
    }
    in.seekg(0);
    const int64_t count = bytes / kCifarRecord;
    const size_t base = ds.pixels.size();
    ds.pixels.resize(base + count * kCifarPixels);
    for (int64_t r = 0; r < count; ++r) {
      if (!in.read(record.data(), kCifarRecord)) {
        return absl::DataLossError(absl::StrCat(path, ": read failed at record ", r));
      }
      const int label = static_cast<unsigned char>(record[0]);
      if (label >= kCifarClasses) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": label ", label, " of record ", r, " is outside [0, 10)"));
      }
      ds.labels.push_back(label);
      // Records are channel-major (all R, then G, then B); Strata is HWC.
      uint8_t* out = ds.pixels.data() + base + r * kCifarPixels;
      const auto* in_pixels = reinterpret_cast<const uint8_t*>(record.data() + 1);
      for (int64_t c = 0; c < kCifarChannels; ++c) {
        for (int64_t i = 0; i < kCifarSide * kCifarSide; ++i) {
          out[i * kCifarChannels + c] = in_pixels[c * kCifarSide * kCifarSide + i];
        }
      }
    }
  }
  return ds;
}

}  // namespace strata
