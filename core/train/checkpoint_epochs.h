// Coordinated checkpoints: one directory per checkpoint epoch, holding one
// part per role that owns state (each server's shard, each FC worker's
// head and experts) taken at the same iteration, and a manifest that makes
// the epoch complete.
//
//   DIR/epoch-000000000040/server-0.ckpt
//   DIR/epoch-000000000040/server-1.ckpt
//   DIR/epoch-000000000040/fc_worker-0.ckpt
//   DIR/epoch-000000000040/MANIFEST.json   {"iteration": 40, "parts": {...}}
//
// Contract: every part is written atomically (core/train/checkpoint.h) by
// its owner; the manifest is written, atomically, by the coordinator once
// every owner has reported its part of that iteration, and names each
// part with its size. An epoch is complete when its manifest exists and
// every part it names has that size; restoring takes the newest complete
// epoch, so a crash while parts or the manifest are being written leaves
// the previous epoch in force. Epochs are iterations at which every
// process of a BSP job stands at the same point: parameters, optimizer
// state and state keys after `iteration` updates, before iteration
// `iteration` is trained. The directory must be one that every host of
// the job sees (a shared file system on a cluster).
#ifndef STRATA_CORE_TRAIN_CHECKPOINT_EPOCHS_H_
#define STRATA_CORE_TRAIN_CHECKPOINT_EPOCHS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/train/checkpoint.h"

namespace strata {

// The name of a role's part: "server-0", "fc_worker-1".
std::string CheckpointPartName(const std::string& role, int rank);
// DIR/epoch-<iteration, 12 digits>
std::string EpochDirectory(const std::string& dir, int64_t iteration);
// DIR/epoch-<iteration>/<part>.ckpt
std::string EpochPartPath(const std::string& dir, int64_t iteration, const std::string& part);

struct CheckpointEpoch {
  int64_t iteration = 0;
  std::map<std::string, uint64_t> part_bytes;  // part name -> file size
  std::string PartPath(const std::string& dir, const std::string& part) const {
    return EpochPartPath(dir, iteration, part);
  }
};

// Writes the manifest of `iteration`, naming every part in its directory
// with the size its file has now. The caller knows that every owner has
// written its part (the coordinator has heard so from each). Fails when
// the epoch has no part.
absl::StatusOr<CheckpointEpoch> CompleteEpoch(const std::string& dir, int64_t iteration);

// The newest complete epoch in `dir`; nullopt when there is none (or no
// such directory). An epoch whose manifest is unreadable or whose parts
// do not match it is skipped, with a warning naming what was wrong.
std::optional<CheckpointEpoch> NewestCompleteEpoch(const std::string& dir);

// Removes every epoch directory but the `keep` newest complete ones, and
// incomplete ones older than the newest complete one (a newer incomplete
// epoch is still being written). Returns how many it removed.
int PruneEpochs(const std::string& dir, int keep);

// Writes checkpoints on a thread of its own, so that the process that
// captured them (a server's event loop, a worker between iterations) goes
// on at once. Captures are written in the order given; a failed write is
// logged and leaves `last_written` where it was.
class CheckpointWriter {
 public:
  CheckpointWriter();
  ~CheckpointWriter();  // writes what is queued, then stops
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Queues `checkpoint` (taken at `iteration`) for `path`; creates the
  // path's directory.
  void Write(std::string path, int64_t iteration, Checkpoint checkpoint);
  // Blocks until everything queued so far is written (or failed).
  void Flush();
  // The iteration of the newest checkpoint written; -1 before the first.
  int64_t last_written() const;
  // The first write that failed, if any.
  absl::Status first_error() const;

 private:
  struct Job {
    std::string path;
    int64_t iteration;
    Checkpoint checkpoint;
  };
  void Loop();

  mutable absl::Mutex mu_;
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t last_written_ ABSL_GUARDED_BY(mu_) = -1;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace strata

#endif  // STRATA_CORE_TRAIN_CHECKPOINT_EPOCHS_H_
