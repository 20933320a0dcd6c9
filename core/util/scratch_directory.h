// ScratchDirectory: a temporary folder of this process's, removed with
// everything in it when the object goes (on every return path, so no tool
// leaves files behind when it fails).
//
//   STRATA_ASSIGN_OR_RETURN(ScratchDirectory scratch, ScratchDirectory::Make("strata_bench"));
//   const std::string log = scratch.path() + "/run1.log";
#ifndef STRATA_CORE_UTIL_SCRATCH_DIRECTORY_H_
#define STRATA_CORE_UTIL_SCRATCH_DIRECTORY_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace strata {

class ScratchDirectory {
 public:
  // A new folder /tmp/<prefix>_XXXXXX (always under /tmp: processes that
  // make Unix sockets in it stay within the socket path's length limit);
  // Internal naming the system's error when it cannot be made.
  static absl::StatusOr<ScratchDirectory> Make(const std::string& prefix);

  ScratchDirectory(ScratchDirectory&& other) noexcept;
  ScratchDirectory& operator=(ScratchDirectory&&) = delete;
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  ~ScratchDirectory();

  const std::string& path() const { return path_; }

 private:
  explicit ScratchDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;  // "" once moved from
};

}  // namespace strata

#endif  // STRATA_CORE_UTIL_SCRATCH_DIRECTORY_H_
