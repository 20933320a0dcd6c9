// A strata_server started for a benchmark: a process of its own with the
// given flags, its output in a scratch directory, stopped and reaped (the
// directory removed) when this goes away.
#ifndef STRATA_TOOLS_BENCH_BENCH_SERVER_H_
#define STRATA_TOOLS_BENCH_BENCH_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/process/subprocess.h"
#include "core/util/scratch_directory.h"

namespace strata::bench {

class BenchServer {
 public:
  // Starts strata_server with `flags` (its rank, coordinator, job or
  // --kv-sizes, ...) and waits until it serves. Errors name the log.
  static absl::StatusOr<std::unique_ptr<BenchServer>> Start(const std::vector<std::string>& flags);
  ~BenchServer();
  BenchServer(const BenchServer&) = delete;
  BenchServer& operator=(const BenchServer&) = delete;

  // Where it serves (its ready file's "address").
  const std::string& address() const { return address_; }
  pid_t pid() const { return process_->pid(); }
  // Its output so far.
  std::string log() const;

 private:
  explicit BenchServer(ScratchDirectory dir) : dir_(std::move(dir)) {}
  ScratchDirectory dir_;                   // its ready file and log; removed after it stops
  std::unique_ptr<ChildProcess> process_;  // stopped and reaped first
  std::string address_;
};

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_BENCH_SERVER_H_
