#include "core/train/metrics_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace strata {

absl::StatusOr<MetricsWriter> MetricsWriter::Open(const std::string& path) {
  if (path.empty()) return MetricsWriter(nullptr);
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot open metrics file ", path, ": ", std::strerror(errno)));
  }
  return MetricsWriter(f);
}

MetricsWriter::MetricsWriter(MetricsWriter&& other) noexcept : file_(other.file_) {
  other.file_ = nullptr;
}

MetricsWriter::~MetricsWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void MetricsWriter::Write(const nlohmann::json& record) {
  if (file_ == nullptr) return;
  const std::string line = record.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

}  // namespace strata
