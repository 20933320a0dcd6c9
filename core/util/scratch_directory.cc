#include "core/util/scratch_directory.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace strata {

absl::StatusOr<ScratchDirectory> ScratchDirectory::Make(const std::string& prefix) {
  const std::string pattern = absl::StrCat("/tmp/", prefix, "_XXXXXX");
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot make a scratch directory ", pattern, ": ", std::strerror(errno)));
  }
  return ScratchDirectory(name.data());
}

ScratchDirectory::ScratchDirectory(ScratchDirectory&& other) noexcept
    : path_(std::exchange(other.path_, std::string())) {}

ScratchDirectory::~ScratchDirectory() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace strata
