#include "core/util/json_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/util/crash_point.h"
#include "core/util/directory_sync.h"

namespace strata {

namespace {

// Writes `text` to `path` and, when `durable`, flushes it to the disk.
absl::Status WriteWhole(const std::string& path, const std::string& text, bool durable) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (durable) ok = ok && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  if (std::fclose(f) != 0 || !ok) {
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteJsonFile(const std::string& path, const nlohmann::json& value) {
  const std::string text = value.dump(2) + "\n";
  // A device, pipe or socket (--json /dev/null, a FIFO a tool reads) is
  // written in place: renaming over it would replace the device node.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return WriteWhole(path, text, /*durable=*/false);
  }
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  if (absl::Status s = WriteWhole(tmp, text, /*durable=*/true); !s.ok()) {
    std::remove(tmp.c_str());
    return s;
  }
  CrashPoint(absl::StrCat("rename:", std::filesystem::path(path).filename().string()));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::InternalError(
        absl::StrCat("cannot rename ", tmp, " to ", path, ": ", std::strerror(errno)));
  }
  SyncDirectoryOf(path);
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not JSON: ", e.what()));
  }
}

absl::StatusOr<std::vector<nlohmann::json>> ReadJsonLines(const std::string& path,
                                                          const std::string& event) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::vector<nlohmann::json> objects;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && (event.empty() || j.value("event", "") == event)) {
      objects.push_back(std::move(j));
    }
  }
  return objects;
}

}  // namespace strata
