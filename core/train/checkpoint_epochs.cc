#include "core/train/checkpoint_epochs.h"

#include <sys/random.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "core/util/crash_point.h"
#include "core/util/directory_sync.h"
#include "core/util/json_file.h"
#include "core/util/log.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

constexpr char kEpochPrefix[] = "epoch-";
constexpr char kManifest[] = "MANIFEST.json";
constexpr char kRunFile[] = "RUN.json";

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

// A stamp read from `j` (a manifest or RUN.json); nullopt when it has none.
std::optional<RunStamp> StampOf(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("run") || !j["run"].is_string() ||
      !j.contains("generation") || !j["generation"].is_number_integer()) {
    return std::nullopt;
  }
  return RunStamp{j["run"].get<std::string>(), j["generation"].get<int64_t>()};
}

// The epoch whose manifest is in `epoch_dir`, if it is complete: the
// manifest is whole and every part it names has the size it says.
absl::StatusOr<CheckpointEpoch> ReadEpoch(const fs::path& epoch_dir, int64_t iteration) {
  const fs::path manifest = epoch_dir / kManifest;
  std::ifstream in(manifest);
  if (!in) return absl::NotFoundError(absl::StrCat("no ", manifest.string()));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  const std::optional<RunStamp> stamp = StampOf(j);
  if (!j.is_object() || !stamp.has_value() || !j.contains("iteration") ||
      !j["iteration"].is_number_integer() || j["iteration"].get<int64_t>() != iteration ||
      !j.contains("parts") || !j["parts"].is_object() || j["parts"].empty()) {
    return absl::DataLossError(absl::StrCat(manifest.string(),
                                            " is not a manifest of iteration ", iteration));
  }
  CheckpointEpoch epoch;
  epoch.iteration = iteration;
  epoch.stamp = *stamp;
  for (const auto& [part, bytes] : j["parts"].items()) {
    if (!bytes.is_number_unsigned()) {
      return absl::DataLossError(
          absl::StrCat(manifest.string(), ": part ", part, " has no size"));
    }
    std::error_code ec;
    const fs::path file = epoch_dir / (part + ".ckpt");
    const uintmax_t size = fs::file_size(file, ec);
    if (ec) return absl::DataLossError(absl::StrCat(file.string(), " is missing"));
    if (size != bytes.get<uint64_t>()) {
      return absl::DataLossError(absl::StrCat(file.string(), " has ", size,
                                              " bytes, the manifest says ",
                                              bytes.get<uint64_t>()));
    }
    epoch.part_bytes[part] = bytes.get<uint64_t>();
  }
  return epoch;
}

// 16 random hex digits.
std::string NewRunId() {
  unsigned char bytes[8] = {};
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
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

std::string DescribeStamp(const RunStamp& stamp) {
  return absl::StrCat("run ", stamp.run, " generation ", stamp.generation);
}

absl::StatusOr<RunStamp> CurrentGeneration(const std::string& dir) {
  const std::string path = (fs::path(dir) / kRunFile).string();
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(dir, " holds no run (no ", kRunFile, ")"));
  const std::optional<RunStamp> stamp = StampOf(nlohmann::json::parse(in, nullptr, false));
  if (!stamp.has_value()) return absl::DataLossError(absl::StrCat(path, " is not a run stamp"));
  return *stamp;
}

absl::StatusOr<RunStamp> BeginGeneration(const std::string& dir, bool restore) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  RunStamp stamp{NewRunId(), 1};
  if (restore) {
    absl::StatusOr<RunStamp> current = CurrentGeneration(dir);
    if (absl::IsNotFound(current.status())) {
      return absl::NotFoundError(
          absl::StrCat(dir, " holds no checkpoints to restore (no ", kRunFile, ")"));
    }
    STRATA_RETURN_IF_ERROR(current.status());
    stamp = RunStamp{current->run, current->generation + 1};
  }
  STRATA_RETURN_IF_ERROR(WriteJsonFile((fs::path(dir) / kRunFile).string(),
                                       {{"run", stamp.run}, {"generation", stamp.generation}}));
  return stamp;
}

absl::Status CheckGeneration(const std::string& dir, const RunStamp& own) {
  absl::StatusOr<RunStamp> current = CurrentGeneration(dir);
  if (current.ok() && *current == own) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      dir, " belongs to ", current.ok() ? DescribeStamp(*current) : "no run",
      " now, not to this process's ", DescribeStamp(own),
      " (a newer start of the job took it over)"));
}

absl::StatusOr<CheckpointEpoch> CompleteEpoch(const std::string& dir, int64_t iteration,
                                              const RunStamp& stamp,
                                              const std::set<std::string>* expected) {
  CheckpointEpoch epoch;
  epoch.iteration = iteration;
  epoch.stamp = stamp;
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
  for (const std::string& part : expected != nullptr ? *expected : std::set<std::string>()) {
    if (epoch.part_bytes.count(part) == 0) {
      return absl::DataLossError(absl::StrCat("checkpoint epoch ", iteration, " has no part ",
                                              part, " (", EpochDirectory(dir, iteration), ")"));
    }
  }
  STRATA_RETURN_IF_ERROR(CheckGeneration(dir, stamp));
  STRATA_RETURN_IF_ERROR(
      WriteJsonFile((fs::path(EpochDirectory(dir, iteration)) / kManifest).string(),
                    {{"iteration", iteration},
                     {"run", stamp.run},
                     {"generation", stamp.generation},
                     {"parts", listed}}));
  return epoch;
}

absl::StatusOr<CheckpointEpoch> ChooseRestoreEpoch(const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(const RunStamp run, CurrentGeneration(dir));
  const std::map<int64_t, fs::path> epochs = EpochDirectories(dir);
  std::vector<std::string> passed_over;
  for (auto it = epochs.rbegin(); it != epochs.rend(); ++it) {
    absl::StatusOr<CheckpointEpoch> epoch = ReadEpoch(it->second, it->first);
    if (absl::IsNotFound(epoch.status())) continue;  // no manifest: never completed
    absl::Status why = epoch.status();
    if (epoch.ok()) {
      if (epoch->stamp.run != run.run) continue;  // another run's, left in the directory
      for (const auto& [part, bytes] : epoch->part_bytes) {
        why = VerifyCheckpoint(epoch->PartPath(dir, part));
        if (!why.ok()) break;
      }
    }
    if (why.ok()) return *std::move(epoch);
    const std::string line = absl::StrCat("epoch ", it->first, ": ", why.message());
    LogWarning("not restoring checkpoint %s", line.c_str());
    passed_over.push_back(line);
  }
  return absl::NotFoundError(absl::StrCat("no checkpoint epoch of run ", run.run, " in ", dir,
                                          " can be restored",
                                          passed_over.empty() ? " (none is complete)" : ": ",
                                          absl::StrJoin(passed_over, "; ")));
}

absl::StatusOr<int> PruneEpochs(const std::string& dir, int keep, const RunStamp& stamp) {
  STRATA_RETURN_IF_ERROR(CheckGeneration(dir, stamp));
  const std::map<int64_t, fs::path> epochs = EpochDirectories(dir);
  std::vector<int64_t> complete;
  std::set<int64_t> others;  // complete epochs of other runs: not ours to remove
  for (const auto& [iteration, path] : epochs) {
    absl::StatusOr<CheckpointEpoch> epoch = ReadEpoch(path, iteration);
    if (!epoch.ok()) continue;
    if (epoch->stamp.run == stamp.run) {
      complete.push_back(iteration);
    } else {
      others.insert(iteration);
    }
  }
  const int kept_from =
      complete.size() > static_cast<size_t>(std::max(keep, 1))
          ? static_cast<int>(complete.size()) - std::max(keep, 1)
          : 0;
  const int64_t oldest_kept = complete.empty() ? INT64_MIN : complete[kept_from];
  int removed = 0;
  for (const auto& [iteration, path] : epochs) {
    if (others.count(iteration) != 0) continue;
    const bool is_complete = std::binary_search(complete.begin(), complete.end(), iteration);
    // Older than the oldest kept complete epoch, or incomplete and older than
    // the newest complete one (abandoned).
    const bool stale = complete.empty()
                           ? false
                           : (iteration < oldest_kept ||
                              (!is_complete && iteration < complete.back()));
    if (!stale) continue;
    // The manifest first: an epoch whose removal stops halfway is
    // incomplete, never complete with parts missing.
    std::error_code ec;
    if (fs::remove(path / kManifest, ec)) {
      SyncDirectoryOf((path / kManifest).string());
      CrashPoint("prune");
    }
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

std::vector<std::pair<int64_t, absl::Status>> CheckpointWriter::TakeFailures() {
  absl::MutexLock lock(&mu_);
  return std::exchange(failures_, {});
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
      failures_.emplace_back(job.iteration, s);
    }
  }
}

}  // namespace strata
