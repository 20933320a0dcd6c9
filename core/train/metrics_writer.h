// MetricsWriter: appends one JSON object per line to a metrics file
// (nothing is written when the path is empty).
#ifndef STRATA_CORE_TRAIN_METRICS_WRITER_H_
#define STRATA_CORE_TRAIN_METRICS_WRITER_H_

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "core/util/json_file.h"  // WriteJsonFile, for the summary files

namespace strata {

class MetricsWriter {
 public:
  // Opens (truncating) `path`; an empty path gives a writer that drops records.
  static absl::StatusOr<MetricsWriter> Open(const std::string& path);
  MetricsWriter(MetricsWriter&& other) noexcept;
  MetricsWriter& operator=(MetricsWriter&&) = delete;
  ~MetricsWriter();
  // Writes `record` as one line and flushes it.
  void Write(const nlohmann::json& record);

 private:
  explicit MetricsWriter(FILE* file) : file_(file) {}
  FILE* file_;
};

}  // namespace strata

#endif  // STRATA_CORE_TRAIN_METRICS_WRITER_H_
