// Coordinated checkpoints: one directory per checkpoint epoch, holding one
// part per role that owns state (each server's shard, each FC worker's
// head and experts) taken at the same iteration, and a manifest that makes
// the epoch complete.
//
//   DIR/RUN.json                              {"run": "9f0c...", "generation": 2}
//   DIR/epoch-000000000040/server-0.ckpt
//   DIR/epoch-000000000040/server-1.ckpt
//   DIR/epoch-000000000040/fc_worker-0.ckpt
//   DIR/epoch-000000000040/MANIFEST.json     {"iteration": 40, "run": ..., "generation": 2,
//                                             "parts": {"server-0": 123456, ...}}
//
// Contract: every part is written atomically and durably
// (core/train/checkpoint.h) by its owner; the manifest is written, the same
// way, by the coordinator once every owner has reported its part of that
// iteration, and names each part with its size. An epoch is complete when
// its manifest exists and every part it names has that size; it can be
// restored when, besides, every part passes its CRC. Epochs are iterations
// at which every process of a BSP job stands at the same point:
// parameters, optimizer state and state keys after `iteration` updates,
// before iteration `iteration` is trained. The directory must be one that
// every host of the job sees (a shared file system on a cluster).
//
// Runs and generations. Every start of a job's coordinator with the
// directory begins a generation (RUN.json): a fresh start a new run, a
// restore the next generation of the run the directory holds. Each
// manifest carries the stamp of the generation that wrote it; a process
// whose generation is no longer the directory's (an old coordinator on a
// partitioned host, after the job was restarted elsewhere) writes no
// manifest and prunes nothing, and only epochs of the directory's run are
// restored or pruned.
//
// One epoch for everyone: the coordinator chooses the epoch to restore
// (ChooseRestoreEpoch) and every other process restores its part of that
// one (EpochPartPath), whatever it sees of the manifests itself.
#ifndef STRATA_CORE_TRAIN_CHECKPOINT_EPOCHS_H_
#define STRATA_CORE_TRAIN_CHECKPOINT_EPOCHS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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

// Which run, and which start of it, a checkpoint directory belongs to.
struct RunStamp {
  std::string run;  // random, made by the run's first start
  int64_t generation = 0;
  bool operator==(const RunStamp& o) const { return run == o.run && generation == o.generation; }
};
// "run 9f0c... generation 2"
std::string DescribeStamp(const RunStamp& stamp);

// Begins a generation in `dir` (creating it): a new run, or, to restore,
// the next generation of the run it holds (NotFound when it holds none).
// Written atomically and durably before it is returned.
absl::StatusOr<RunStamp> BeginGeneration(const std::string& dir, bool restore);
// The run and generation `dir` holds now; NotFound when it holds none.
absl::StatusOr<RunStamp> CurrentGeneration(const std::string& dir);
// OK while `own` is the generation `dir` holds; FailedPrecondition naming
// both when a newer start took the directory over.
absl::Status CheckGeneration(const std::string& dir, const RunStamp& own);

struct CheckpointEpoch {
  int64_t iteration = 0;
  RunStamp stamp;                              // of the generation that wrote the manifest
  std::map<std::string, uint64_t> part_bytes;  // part name -> file size
  std::string PartPath(const std::string& dir, const std::string& part) const {
    return EpochPartPath(dir, iteration, part);
  }
};

// Writes the manifest of `iteration` for generation `stamp`, naming every
// part in its directory with the size its file has now; the caller knows
// that every owner has written its part (the coordinator has heard so from
// each), or names the parts there must be (`expected`). Fails, writing
// nothing, when the epoch has no part (NotFound), not the parts expected
// (DataLoss, naming the first missing), or `stamp` is no longer the
// directory's generation (FailedPrecondition).
absl::StatusOr<CheckpointEpoch> CompleteEpoch(const std::string& dir, int64_t iteration,
                                              const RunStamp& stamp,
                                              const std::set<std::string>* expected = nullptr);

// The epoch to restore the directory's run from: the newest complete one
// whose every part passes VerifyCheckpoint. Each newer epoch passed over is
// logged with what was wrong with it (its part and the reason). NotFound
// when there is none, naming every epoch tried and why (or that there was
// none); the directory's run from CurrentGeneration.
absl::StatusOr<CheckpointEpoch> ChooseRestoreEpoch(const std::string& dir);

// For generation `stamp`: removes every epoch directory of its run but the
// `keep` newest complete ones, and incomplete ones older than the newest
// complete one (a newer incomplete epoch is still being written). Epochs
// of other runs are left alone. Returns how many it removed;
// FailedPrecondition, removing nothing, when `stamp` is no longer the
// directory's generation.
absl::StatusOr<int> PruneEpochs(const std::string& dir, int keep, const RunStamp& stamp);

// Writes checkpoints on a thread of its own, so that the process that
// captured them (a server's event loop, a worker between iterations) goes
// on at once. Captures are written in the order given; a failed write is
// logged, leaves `last_written` where it was, and is kept for its owner to
// report (TakeFailures).
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
  // The writes that failed since the last call, by iteration, oldest first.
  std::vector<std::pair<int64_t, absl::Status>> TakeFailures();

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
  std::vector<std::pair<int64_t, absl::Status>> failures_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace strata

#endif  // STRATA_CORE_TRAIN_CHECKPOINT_EPOCHS_H_
