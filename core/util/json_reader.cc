#include "core/util/json_reader.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace strata {
namespace {

std::string Describe(const nlohmann::json& j) {
  std::string text = j.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return absl::StrCat(j.type_name(), " ", text);
}

absl::Status Convert(const nlohmann::json& j, const std::string& path, std::string* out) {
  if (!j.is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a string, got ", Describe(j)));
  }
  *out = j.get<std::string>();
  return absl::OkStatus();
}

absl::Status Convert(const nlohmann::json& j, const std::string& path, int64_t* out) {
  if (j.is_number_integer()) {
    *out = j.get<int64_t>();
    return absl::OkStatus();
  }
  if (j.is_number_float()) {
    double v = j.get<double>();
    if (std::floor(v) == v && std::fabs(v) < 9e15) {
      *out = static_cast<int64_t>(v);
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": expected an integer, got ", Describe(j)));
}

absl::Status Convert(const nlohmann::json& j, const std::string& path, float* out) {
  if (!j.is_number()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a number, got ", Describe(j)));
  }
  *out = j.get<float>();
  return absl::OkStatus();
}

absl::Status Convert(const nlohmann::json& j, const std::string& path, double* out) {
  if (!j.is_number()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a number, got ", Describe(j)));
  }
  *out = j.get<double>();
  return absl::OkStatus();
}

absl::Status Convert(const nlohmann::json& j, const std::string& path, bool* out) {
  if (!j.is_boolean()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected true or false, got ", Describe(j)));
  }
  *out = j.get<bool>();
  return absl::OkStatus();
}

template <typename T>
absl::Status Convert(const nlohmann::json& j, const std::string& path, std::vector<T>* out) {
  if (!j.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected an array, got ", Describe(j)));
  }
  std::vector<T> values(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    absl::Status s = Convert(j[i], absl::StrCat(path, "[", i, "]"), &values[i]);
    if (!s.ok()) return s;
  }
  *out = std::move(values);
  return absl::OkStatus();
}

}  // namespace

JsonObjectReader::JsonObjectReader(const nlohmann::json& json, std::string path)
    : json_(json), path_(std::move(path)) {}

absl::Status JsonObjectReader::CheckObject() const {
  if (json_.is_object()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(path_.empty() ? "config" : path_,
                                                 ": expected an object, got ", Describe(json_)));
}

bool JsonObjectReader::Has(const std::string& key) const {
  return json_.is_object() && json_.contains(key);
}

std::string JsonObjectReader::ChildPath(const std::string& key) const {
  return path_.empty() ? key : absl::StrCat(path_, ".", key);
}

absl::StatusOr<const nlohmann::json*> JsonObjectReader::Child(const std::string& key) {
  absl::Status s = CheckObject();
  if (!s.ok()) return s;
  if (!json_.contains(key)) {
    return absl::InvalidArgumentError(absl::StrCat(ChildPath(key), ": missing field"));
  }
  read_.insert(key);
  return &json_.at(key);
}

template <typename T>
absl::Status JsonObjectReader::Read(const std::string& key, T* out, bool required) {
  absl::Status s = CheckObject();
  if (!s.ok()) return s;
  if (!json_.contains(key)) {
    if (!required) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(ChildPath(key), ": missing field"));
  }
  read_.insert(key);
  return Convert(json_.at(key), ChildPath(key), out);
}

absl::Status JsonObjectReader::Required(const std::string& key, std::string* out) {
  return Read(key, out, true);
}
absl::Status JsonObjectReader::Required(const std::string& key, int64_t* out) {
  return Read(key, out, true);
}
absl::Status JsonObjectReader::Required(const std::string& key, float* out) {
  return Read(key, out, true);
}
absl::Status JsonObjectReader::Required(const std::string& key, double* out) {
  return Read(key, out, true);
}
absl::Status JsonObjectReader::Required(const std::string& key, std::vector<int64_t>* out) {
  return Read(key, out, true);
}
absl::Status JsonObjectReader::Optional(const std::string& key, std::string* out) {
  return Read(key, out, false);
}
absl::Status JsonObjectReader::Optional(const std::string& key, int64_t* out) {
  return Read(key, out, false);
}
absl::Status JsonObjectReader::Optional(const std::string& key, float* out) {
  return Read(key, out, false);
}
absl::Status JsonObjectReader::Optional(const std::string& key, double* out) {
  return Read(key, out, false);
}
absl::Status JsonObjectReader::Optional(const std::string& key, bool* out) {
  return Read(key, out, false);
}
absl::Status JsonObjectReader::Optional(const std::string& key, std::vector<float>* out) {
  return Read(key, out, false);
}
absl::Status JsonObjectReader::Optional(const std::string& key, std::vector<int64_t>* out) {
  return Read(key, out, false);
}

absl::Status JsonObjectReader::Finish() const {
  absl::Status s = CheckObject();
  if (!s.ok()) return s;
  for (auto it = json_.begin(); it != json_.end(); ++it) {
    if (read_.count(it.key()) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(ChildPath(it.key()), ": unknown field"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> ParseJson(const std::string& text, const std::string& source) {
  try {
    return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/true,
                                 /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": invalid JSON: ", e.what()));
  }
}

}  // namespace strata
