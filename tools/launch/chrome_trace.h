// WriteChromeTrace: the iteration records (--records-out) of a run's
// processes as one Chrome trace, in the JSON object format that Perfetto
// (ui.perfetto.dev) and chrome://tracing load: one trace process per
// Strata process, one thread per job in it, and a complete event per span
// of every iteration (compute, waiting for the device, waiting for peers;
// core/control/iteration_record.h, SpansOfRecord), named by its phase.
// Timestamps are the records' monotonic clock in microseconds, so the
// processes of one host line up.
#ifndef STRATA_TOOLS_LAUNCH_CHROME_TRACE_H_
#define STRATA_TOOLS_LAUNCH_CHROME_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace strata {

struct TraceSource {
  std::string records_path;  // one process's records of one job
  uint64_t job_id = 1;
};

// Fails naming the file when a record file is missing or holds no
// iteration; writes `out_path` atomically.
absl::Status WriteChromeTrace(const std::vector<TraceSource>& sources, const std::string& out_path);

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_CHROME_TRACE_H_
