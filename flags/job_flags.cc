#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "flags/cluster_flags.h"

// Read by the binaries before Abseil parses (NormalizedArgs::TakeRepeated),
// since it may be given once per job; declared here for --help.
ABSL_FLAG(std::vector<std::string>, job, {},
          "a job config this process serves or runs instead of --config; give it once per job "
          "(job ids --job-id, --job-id + 1, ...), and the jobs share the process");

namespace strata {

std::string PathForJob(const std::string& path, uint64_t job_id) {
  if (path.empty()) return path;
  const size_t slash = path.find_last_of('/');
  const size_t name = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = path.find_last_of('.');
  const std::string tag = absl::StrCat(".job", job_id);
  if (dot == std::string::npos || dot <= name) return path + tag;  // no extension
  return path.substr(0, dot) + tag + path.substr(dot);
}

}  // namespace strata
