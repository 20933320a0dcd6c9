#include "absl/flags/flag.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(std::string, checkpoint_dir, "",
          "ps, stanza: coordinated checkpoints in this directory (one every "
          "--checkpoint-every iterations: each server's shard and each FC worker's head and "
          "experts at the same iteration, with a manifest); on a cluster, a directory every "
          "host sees");
ABSL_FLAG(int64_t, checkpoint_every, 0, "iterations between checkpoints (0: none on the way)");
ABSL_FLAG(int, keep_checkpoints, 3, "with --checkpoint-dir: the newest complete epochs kept");
ABSL_FLAG(bool, restore, false,
          "start from the newest complete epoch in --checkpoint-dir (or from the --checkpoint "
          "file where a binary has one)");

namespace strata {

CheckpointFlags CheckpointFromFlags() {
  CheckpointFlags f;
  f.dir = absl::GetFlag(FLAGS_checkpoint_dir);
  f.every = absl::GetFlag(FLAGS_checkpoint_every);
  f.keep = absl::GetFlag(FLAGS_keep_checkpoints);
  f.restore = absl::GetFlag(FLAGS_restore);
  return f;
}

}  // namespace strata
