#include "tools/launch/chrome_trace.h"

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/control/iteration_record.h"
#include "core/status.h"
#include "core/util/json_file.h"

namespace strata {

absl::Status WriteChromeTrace(const std::vector<TraceSource>& sources,
                              const std::string& out_path) {
  nlohmann::json events = nlohmann::json::array();
  std::map<std::string, int> pids;  // by process name, in order of appearance
  for (const TraceSource& source : sources) {
    STRATA_ASSIGN_OR_RETURN(const std::vector<nlohmann::json> records,
                            ReadIterationRecords(source.records_path));
    int iterations = 0;
    for (const nlohmann::json& record : records) {
      ++iterations;
      const std::string process = record.value("process", "process");
      const auto [it, added] = pids.emplace(process, static_cast<int>(pids.size()) + 1);
      const int pid = it->second;
      const int tid = static_cast<int>(source.job_id);
      if (added) {
        events.push_back(
            {{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", process}}}});
      }
      if (iterations == 1) {
        events.push_back({{"ph", "M"},
                          {"name", "thread_name"},
                          {"pid", pid},
                          {"tid", tid},
                          {"args", {{"name", absl::StrCat("job ", source.job_id)}}}});
      }
      for (const Span& span : SpansOfRecord(record)) {
        const int64_t duration_us = std::llround((span.end - span.start) * 1e6);
        if (duration_us == 0) continue;  // below the trace's resolution
        events.push_back({{"ph", "X"},
                          {"name", PhaseName(span.phase)},
                          {"cat", SpanKindName(span.kind)},
                          {"pid", pid},
                          {"tid", tid},
                          {"ts", std::llround(span.start * 1e6)},
                          {"dur", duration_us},
                          {"args", {{"iteration", record.value("iteration", int64_t{0})}}}});
      }
    }
    if (iterations == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(source.records_path, " holds no iteration records"));
    }
  }
  return WriteJsonFile(out_path, {{"traceEvents", events}, {"displayTimeUnit", "ms"}});
}

}  // namespace strata
