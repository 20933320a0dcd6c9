// Checkpoints: named tensors plus a small JSON metadata record, in a
// versioned binary file written atomically.
//
// File layout (little-endian):
//   "STRATACK"  u32 version  u32 tensor_count  u64 metadata_bytes  metadata (JSON text)
//   per tensor: u32 name_bytes  name  u8 dtype  u8 rank  i64 dims[rank]  u64 data_bytes  data
//   u32 CRC-32 of everything before it
// A reader refuses another version, a bad CRC, and any size that does not
// fit the file, naming the file and the problem.
//
// WriteCheckpoint writes "<path>.tmp.<pid>", fsyncs it, renames it over
// `path` and fsyncs the directory, so a crash at any point leaves either the
// old checkpoint or the new one, never a torn file.
#ifndef STRATA_CORE_TRAIN_CHECKPOINT_H_
#define STRATA_CORE_TRAIN_CHECKPOINT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model.h"
#include "core/optim/parameter_optimizer.h"
#include "core/tensor/tensor.h"

namespace strata {

inline constexpr uint32_t kCheckpointVersion = 1;

struct NamedTensor {
  std::string name;
  Tensor value;
};

struct Checkpoint {
  std::string metadata_json = "{}";
  std::vector<NamedTensor> tensors;
};

absl::Status WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint);
absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path);
// Checks the file's magic, version and CRC as ReadCheckpoint does, reading
// it in pieces (nothing the size of the file is held), with the same
// errors; decodes nothing.
absl::Status VerifyCheckpoint(const std::string& path);

// The training state of one process: parameters, state buffers, optimizer
// state ("<param>.optimizer_state") and the step in the metadata.
Checkpoint CaptureTrainingState(Model& model, const ParameterOptimizer& optimizer, int64_t epoch);
// Parameters only (for comparing runs, or a worker whose optimizer state
// lives on the servers), with the step in the metadata.
Checkpoint CaptureParameters(Model& model, int64_t step);
// Restores what CaptureTrainingState saved. Fails, changing nothing, when a
// tensor is missing or has another shape (naming it). Returns the epoch.
absl::StatusOr<int64_t> RestoreTrainingState(const Checkpoint& checkpoint, Model& model,
                                             ParameterOptimizer& optimizer);

}  // namespace strata

#endif  // STRATA_CORE_TRAIN_CHECKPOINT_H_
