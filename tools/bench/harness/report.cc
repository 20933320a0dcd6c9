#include "tools/bench/harness/report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/statistics.h"

namespace strata::bench {
namespace {

// One part of the iteration breakdown, formatted; `missing` when that part
// was not measured.
std::string Part(const ContenderResult& c, const std::string& name,
                 const absl::FormatSpec<double>& format, const std::string& missing) {
  auto it = c.seconds_per_iteration.find(name);
  if (it == c.seconds_per_iteration.end()) return missing;
  return absl::StrFormat(format, it->second);
}

double RatioToFirst(const SweepPoint& p, const ContenderResult& c) {
  const double first = p.contenders.front().median();
  return first > 0 ? c.median() / first : 0.0;
}

}  // namespace

double ContenderResult::median() const { return runs.empty() ? 0.0 : Median(runs); }

std::string FormatPointTable(const SweepPoint& p, const Figure& figure) {
  int width = 16;  // the label column fits the longest label
  bool bytes = false, breakdown = false;  // columns shown when a contender has them
  for (const ContenderResult& c : p.contenders) {
    width = std::max(width, static_cast<int>(c.label.size()));
    bytes = bytes || c.bytes_per_iteration > 0;
    breakdown = breakdown || !c.seconds_per_iteration.empty();
  }
  std::string out = absl::StrFormat("%-*s %12s %9s %9s", width, "contender",
                                    "median " + figure.column, "min", "max");
  if (bytes) absl::StrAppendFormat(&out, " %13s", "MB/iteration");
  if (breakdown) absl::StrAppendFormat(&out, " %9s %9s %9s", "compute", "comm", "waiting");
  absl::StrAppend(&out, "  vs first\n");
  const int d = figure.decimals;
  for (const ContenderResult& c : p.contenders) {
    const auto [mn, mx] = std::minmax_element(c.runs.begin(), c.runs.end());
    absl::StrAppendFormat(&out, "%-*s %12.*f %9.*f %9.*f", width, c.label, d, c.median(), d, *mn, d,
                          *mx);
    if (bytes) {
      absl::StrAppendFormat(
          &out, " %13s",
          c.bytes_per_iteration > 0 ? absl::StrFormat("%.3f", c.bytes_per_iteration / 1e6) : "-");
    }
    if (breakdown) {
      absl::StrAppendFormat(&out, " %9s %9s %9s", Part(c, "compute", "%.3fs", "-"),
                            Part(c, "communication", "%.3fs", "-"),
                            Part(c, "waiting", "%.3fs", "-"));
    }
    absl::StrAppendFormat(&out, " %8.2fx\n", RatioToFirst(p, c));
  }
  return out;
}

nlohmann::json ReportToJson(const BenchReport& r) {
  nlohmann::json j = r.facts;
  j["benchmark"] = r.benchmark;
  j["figure_unit"] = r.figure.unit;
  if (!r.sweep_parameter.empty()) j["sweep"] = r.sweep_parameter;
  j["points"] = nlohmann::json::array();
  for (const SweepPoint& p : r.points) {
    nlohmann::json point = {{"value", p.value}, {"numeric", p.numeric}};
    point["contenders"] = nlohmann::json::array();
    for (const ContenderResult& c : p.contenders) {
      nlohmann::json cj = {{"label", c.label},
                           {"median_" + r.figure.key, c.median()},
                           {"runs", c.runs},
                           {"ratio_to_first", RatioToFirst(p, c)},
                           {"bytes_per_iteration", c.bytes_per_iteration}};
      if (!c.seconds_per_iteration.empty()) cj["seconds_per_iteration"] = c.seconds_per_iteration;
      point["contenders"].push_back(cj);
    }
    j["points"].push_back(point);
  }
  return j;
}

std::string ReportToCsv(const BenchReport& r) {
  std::string out = absl::StrCat("sweep,value,contender,median_", r.figure.key,
                                 ",min,max,runs,ratio_to_first,mb_per_iteration,compute_s,"
                                 "communication_s,waiting_s\n");
  // One decimal more than the table shows.
  const int d = r.figure.decimals + 1;
  for (const SweepPoint& p : r.points) {
    for (const ContenderResult& c : p.contenders) {
      const auto [mn, mx] = std::minmax_element(c.runs.begin(), c.runs.end());
      absl::StrAppendFormat(&out, "%s,%s,%s,%.*f,%.*f,%.*f,%d,%.4f,%.6f,%s,%s,%s\n",
                            r.sweep_parameter, p.value, c.label, d, c.median(), d, *mn, d, *mx,
                            static_cast<int>(c.runs.size()), RatioToFirst(p, c),
                            c.bytes_per_iteration / 1e6, Part(c, "compute", "%.6f", ""),
                            Part(c, "communication", "%.6f", ""), Part(c, "waiting", "%.6f", ""));
    }
  }
  return out;
}

}  // namespace strata::bench
