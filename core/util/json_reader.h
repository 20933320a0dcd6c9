// JsonObjectReader: reads typed fields out of a JSON object and reports
// every problem with the field's full path ("model.layers[3].kernel: expected
// an integer, got \"3\"").
//
// Unknown keys are errors too (a misspelt field would otherwise be ignored
// silently): call Finish() after reading every field you know.
//
//   JsonObjectReader r(json, "optimizer");
//   float lr = 0.01f;
//   STRATA_RETURN_IF_ERROR(r.Required("lr", &lr));
//   STRATA_RETURN_IF_ERROR(r.Optional("momentum", &momentum));
//   STRATA_RETURN_IF_ERROR(r.Finish());
#ifndef STRATA_CORE_UTIL_JSON_READER_H_
#define STRATA_CORE_UTIL_JSON_READER_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace strata {

class JsonObjectReader {
 public:
  // `json` must outlive the reader. If it is not an object, every call fails.
  JsonObjectReader(const nlohmann::json& json, std::string path);

  bool Has(const std::string& key) const;
  // Path of a child: "<path>.<key>" (or just key at the top level).
  std::string ChildPath(const std::string& key) const;
  // The raw child (marks it read). Fails if missing.
  absl::StatusOr<const nlohmann::json*> Child(const std::string& key);

  // Required fields fail with "<path>.<key>: missing field" when absent.
  absl::Status Required(const std::string& key, std::string* out);
  absl::Status Required(const std::string& key, int64_t* out);
  absl::Status Required(const std::string& key, float* out);
  absl::Status Required(const std::string& key, double* out);
  absl::Status Required(const std::string& key, std::vector<int64_t>* out);
  // Optional fields leave *out unchanged when absent.
  absl::Status Optional(const std::string& key, std::string* out);
  absl::Status Optional(const std::string& key, int64_t* out);
  absl::Status Optional(const std::string& key, float* out);
  absl::Status Optional(const std::string& key, double* out);
  absl::Status Optional(const std::string& key, bool* out);
  absl::Status Optional(const std::string& key, std::vector<float>* out);
  absl::Status Optional(const std::string& key, std::vector<int64_t>* out);

  // Fails naming the first key that was never read.
  absl::Status Finish() const;

 private:
  absl::Status CheckObject() const;
  template <typename T>
  absl::Status Read(const std::string& key, T* out, bool required);

  const nlohmann::json& json_;
  std::string path_;
  std::set<std::string> read_;
};

// Parses JSON text; the error names `source` and the line/column.
absl::StatusOr<nlohmann::json> ParseJson(const std::string& text, const std::string& source);

}  // namespace strata

#endif  // STRATA_CORE_UTIL_JSON_READER_H_
