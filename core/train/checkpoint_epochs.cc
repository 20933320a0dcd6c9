#include "core/train/checkpoint_epochs.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "core/util/log.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

constexpr char kEpochPrefix[] = "epoch-";
constexpr char kManifest[] = "MANIFEST.json";

// The epoch directories of `dir`, by iteration.
std::map<int64_t, fs::path> EpochDirectories(const std::string& dir) {
  std::map<int64_t, fs::path> epochs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    int64_t iteration = 0;
    if (!entry.is_directory(ec) || name.rfind(kEpochPrefix, 0) != 0 ||
        !absl::SimpleAtoi(name.substr(sizeof(kEpochPrefix) - 1), &iteration)) {
      continue;
    }
    epochs[iteration] = entry.path();
  }
  return epochs;
}

// The epoch whose manifest is in `epoch_dir`, if it is complete.
absl::StatusOr<CheckpointEpoch> ReadEpoch(const fs::path& epoch_dir, int64_t iteration) {
  const fs::path manifest = epoch_dir / kManifest;
  std::ifstream in(manifest);
  if (!in) return absl::NotFoundError(absl::StrCat("no ", manifest.string()));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("iteration") || !j["iteration"].is_number_integer() ||
      j["iteration"].get<int64_t>() != iteration || !j.contains("parts") ||
      !j["parts"].is_object() || j["parts"].empty()) {
    return absl::DataLossError(absl::StrCat(manifest.string(),
                                            " is not a manifest of iteration ", iteration));
  }
  CheckpointEpoch epoch;
  epoch.iteration = iteration;
  for (const auto& [part, bytes] : j["parts"].items()) {
    if (!bytes.is_number_unsigned()) {
      return absl::DataLossError(
          absl::StrCat(manifest.string(), ": part ", part, " has no size"));
    }
    std::error_code ec;
    const fs::path file = epoch_dir / (part + ".ckpt");
    const uintmax_t size = fs::file_size(file, ec);
    if (ec || size != bytes.get<uint64_t>()) {
      return absl::DataLossError(absl::StrCat(file.string(), ec ? " is missing" : " has ",
                                              ec ? "" : std::to_string(size),
                                              ec ? "" : " bytes, the manifest says ",
                                              ec ? "" : std::to_string(bytes.get<uint64_t>())));
    }
    epoch.part_bytes[part] = bytes.get<uint64_t>();
  }
  return epoch;
}

}  // namespace

std::string CheckpointPartName(const std::string& role, int rank) {
  return absl::StrCat(role, "-", rank);
}

std::string EpochDirectory(const std::string& dir, int64_t iteration) {
  return (fs::path(dir) / absl::StrFormat("%s%012d", kEpochPrefix, iteration)).string();
}

std::string EpochPartPath(const std::string& dir, int64_t iteration, const std::string& part) {
  return (fs::path(EpochDirectory(dir, iteration)) / (part + ".ckpt")).string();
}

absl::StatusOr<CheckpointEpoch> CompleteEpoch(const std::string& dir, int64_t iteration) {
  CheckpointEpoch epoch;
  epoch.iteration = iteration;
  nlohmann::json listed = nlohmann::json::object();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(EpochDirectory(dir, iteration), ec)) {
    if (entry.path().extension() != ".ckpt" || !entry.is_regular_file(ec)) continue;
    const std::string part = entry.path().stem().string();
    const uintmax_t size = entry.file_size(ec);
    if (ec) break;
    listed[part] = static_cast<uint64_t>(size);
    epoch.part_bytes[part] = size;
  }
  if (ec || epoch.part_bytes.empty()) {
    return absl::NotFoundError(absl::StrCat("checkpoint epoch ", iteration, ": no part in ",
                                            EpochDirectory(dir, iteration),
                                            ec ? ": " + ec.message() : ""));
  }
  STRATA_RETURN_IF_ERROR(
      WriteJsonFile((fs::path(EpochDirectory(dir, iteration)) / kManifest).string(),
                    {{"iteration", iteration}, {"parts", listed}}));
  return epoch;
}

std::optional<CheckpointEpoch> NewestCompleteEpoch(const std::string& dir) {
  const std::map<int64_t, fs::path> epochs = EpochDirectories(dir);
  for (auto it = epochs.rbegin(); it != epochs.rend(); ++it) {
    absl::StatusOr<CheckpointEpoch> epoch = ReadEpoch(it->second, it->first);
    if (epoch.ok()) return *std::move(epoch);
    if (!absl::IsNotFound(epoch.status())) {
      LogWarning("skipping checkpoint epoch %lld: %s", static_cast<long long>(it->first),
                 std::string(epoch.status().message()).c_str());
    }
  }
  return std::nullopt;
}

int PruneEpochs(const std::string& dir, int keep) {
  const std::map<int64_t, fs::path> epochs = EpochDirectories(dir);
  std::vector<int64_t> complete;
  for (const auto& [iteration, path] : epochs) {
    if (ReadEpoch(path, iteration).ok()) complete.push_back(iteration);
  }
  const int kept_from =
      complete.size() > static_cast<size_t>(std::max(keep, 1))
          ? static_cast<int>(complete.size()) - std::max(keep, 1)
          : 0;
  const int64_t oldest_kept = complete.empty() ? INT64_MIN : complete[kept_from];
  int removed = 0;
  for (const auto& [iteration, path] : epochs) {
    const bool is_complete = std::binary_search(complete.begin(), complete.end(), iteration);
    // Older than the oldest kept complete epoch, or incomplete and older than
    // the newest complete one (abandoned).
    const bool stale = complete.empty()
                           ? false
                           : (iteration < oldest_kept ||
                              (!is_complete && iteration < complete.back()));
    if (!stale) continue;
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec) {
      LogWarning("could not remove %s: %s", path.string().c_str(), ec.message().c_str());
    } else {
      ++removed;
    }
  }
  return removed;
}

CheckpointWriter::CheckpointWriter() : thread_([this] { Loop(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void CheckpointWriter::Write(std::string path, int64_t iteration, Checkpoint checkpoint) {
  absl::MutexLock lock(&mu_);
  queue_.push_back({std::move(path), iteration, std::move(checkpoint)});
}

void CheckpointWriter::Flush() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](CheckpointWriter* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu_) {
        return w->queue_.empty() && !w->writing_;
      },
      this));
}

int64_t CheckpointWriter::last_written() const {
  absl::MutexLock lock(&mu_);
  return last_written_;
}

absl::Status CheckpointWriter::first_error() const {
  absl::MutexLock lock(&mu_);
  return first_error_;
}

void CheckpointWriter::Loop() {
  while (true) {
    Job job;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](CheckpointWriter* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu_) {
            return !w->queue_.empty() || w->stopping_;
          },
          this));
      if (queue_.empty()) return;  // stopping, nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
    }
    std::error_code ec;
    fs::create_directories(fs::path(job.path).parent_path(), ec);
    absl::Status s = WriteCheckpoint(job.path, job.checkpoint);
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (s.ok()) {
      last_written_ = std::max(last_written_, job.iteration);
      LogInfo("checkpoint at iteration %lld -> %s", static_cast<long long>(job.iteration),
              job.path.c_str());
    } else {
      LogWarning("checkpoint at iteration %lld failed: %s", static_cast<long long>(job.iteration),
                 std::string(s.message()).c_str());
      if (first_error_.ok()) first_error_ = s;
    }
  }
}

}  // namespace strata
