#include "core/util/json_difference.h"

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
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

// A key as a path names it: escaped (a key comes from either document,
// and a path goes into log lines and error replies) and cut to 60
// characters.
std::string Join(const std::string& path, const std::string& key) {
  std::string name = absl::CHexEscape(key);
  if (name.size() > 60) name = name.substr(0, 57) + "...";
  return path.empty() ? name : absl::StrCat(path, ".", name);
}

// Where two documents first differ: the field's path, and the sentence
// that says how (both values).
struct Found {
  std::string path;
  std::string text;
  bool empty() const { return text.empty(); }
};

Found At(const std::string& path, const std::string& how) {
  const std::string where = path.empty() ? "(the whole document)" : path;
  return {where, absl::StrCat(where, ": ", how)};
}

// The first difference below `path`, or nothing.
Found Difference(const Json& here, const Json& there, const std::string& path) {
  if (here.is_object() && there.is_object()) {
    for (const auto& [key, value] : here.items()) {
      if (!there.contains(key)) return At(Join(path, key), "set here, absent there");
      Found d = Difference(value, there[key], Join(path, key));
      if (!d.empty()) return d;
    }
    for (const auto& [key, value] : there.items()) {
      if (!here.contains(key)) return At(Join(path, key), "absent here, set there");
    }
    return {};
  }
  if (here.is_array() && there.is_array()) {
    for (size_t i = 0; i < here.size() && i < there.size(); ++i) {
      Found d = Difference(here[i], there[i], absl::StrCat(path, "[", i, "]"));
      if (!d.empty()) return d;
    }
    if (here.size() != there.size()) {
      return At(path, absl::StrCat(here.size(), " entries here, ", there.size(), " there"));
    }
    return {};
  }
  if (here == there) return {};
  return At(path, absl::StrCat(Compact(here), " here, ", Compact(there), " there"));
}

Found FindDifference(const std::string& here, const std::string& there) {
  if (here == there) return {};
  const Json a = ParseShallow(here);
  const Json b = ParseShallow(there);
  if (a.is_discarded() || b.is_discarded()) {
    auto describe = [](const std::string& text, const Json& j) {
      return text.empty() ? "empty" : j.is_discarded() ? "not JSON" : "JSON";
    };
    return At("", absl::StrCat(describe(here, a), " here, ", describe(there, b), " there"));
  }
  return Difference(a, b, "");
}

}  // namespace

std::string FirstDifference(const std::string& here, const std::string& there) {
  return FindDifference(here, there).text;
}

std::string FirstDifferingField(const std::string& here, const std::string& there) {
  return FindDifference(here, there).path;
}

}  // namespace strata
