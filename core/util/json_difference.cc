#include "core/util/json_difference.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace strata {
namespace {

using Json = nlohmann::json;

// Deeper values of an untrusted document are dropped as it is parsed, so
// nothing below recurses deeper than this.
constexpr int kMaxDepth = 64;

// A value for a message: scalars as JSON (cut to 60 characters),
// containers by their size.
std::string Compact(const Json& j) {
  if (j.is_object())
    return absl::StrCat("an object of ", j.size(), j.size() == 1 ? " field" : " fields");
  if (j.is_array())
    return absl::StrCat("an array of ", j.size(), j.size() == 1 ? " entry" : " entries");
  std::string text = j.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

Json ParseShallow(const std::string& text) {
  const Json::parser_callback_t keep = [](int depth, Json::parse_event_t, Json&) {
    return depth <= kMaxDepth;
  };
  return Json::parse(text, keep, /*allow_exceptions=*/false);
}

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : absl::StrCat(path, ".", key);
}

// The first difference below `path`, or "".
std::string Difference(const Json& here, const Json& there, const std::string& path) {
  if (here.is_object() && there.is_object()) {
    for (const auto& [key, value] : here.items()) {
      if (!there.contains(key)) return absl::StrCat(Join(path, key), ": set here, absent there");
      std::string d = Difference(value, there[key], Join(path, key));
      if (!d.empty()) return d;
    }
    for (const auto& [key, value] : there.items()) {
      if (!here.contains(key)) return absl::StrCat(Join(path, key), ": absent here, set there");
    }
    return "";
  }
  if (here.is_array() && there.is_array()) {
    for (size_t i = 0; i < here.size() && i < there.size(); ++i) {
      std::string d = Difference(here[i], there[i], absl::StrCat(path, "[", i, "]"));
      if (!d.empty()) return d;
    }
    if (here.size() != there.size()) {
      return absl::StrCat(path, ": ", here.size(), " entries here, ", there.size(), " there");
    }
    return "";
  }
  if (here == there) return "";
  return absl::StrCat(path.empty() ? "(the whole document)" : path, ": ", Compact(here), " here, ",
                      Compact(there), " there");
}

}  // namespace

std::string FirstDifference(const std::string& here, const std::string& there) {
  if (here == there) return "";
  const Json a = ParseShallow(here);
  const Json b = ParseShallow(there);
  if (a.is_discarded() || b.is_discarded()) {
    auto describe = [](const std::string& text, const Json& j) {
      return text.empty() ? "empty" : j.is_discarded() ? "not JSON" : "JSON";
    };
    return absl::StrCat("(the whole document): ", describe(here, a), " here, ", describe(there, b),
                        " there");
  }
  return Difference(a, b, "");
}

}  // namespace strata
