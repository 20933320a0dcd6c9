// The nodes a job has lost: what the coordinator (server 0) declares dead
// when their heartbeats fall silent, written where a launcher can read it
// after the job fails, so that it knows whom the job lost and not only
// who failed first (a peer that timed out waiting for the lost one).
//
//   strata_server --rank 0 ... --lost-nodes-out lost.json
//   {"lost": [{"job": 1, "role": "conv_worker", "rank": 1,
//              "why": "stopped sending heartbeats for 10s"}]}
//
// Contract: RecordLostNode rewrites the whole file atomically
// (core/util/json_file.h) with one entry more, before anyone is told of the
// death, so a process that fails because of it finds the entry there when
// it exits. Roles are "server", "conv_worker" and "fc_worker".
//
// Thread safety: one writer per file (server 0's event loop).
#ifndef STRATA_CORE_TRAIN_LOST_NODES_H_
#define STRATA_CORE_TRAIN_LOST_NODES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace strata {

struct LostNode {
  uint64_t job = 1;
  std::string role;  // server, conv_worker, fc_worker
  int rank = 0;
  std::string why;
};

// Adds `node` to the record at `path` (created when absent).
absl::Status RecordLostNode(const std::string& path, const LostNode& node);

// The nodes recorded at `path`; none when the file does not exist.
// DataLoss naming the path for a file that is not such a record.
absl::StatusOr<std::vector<LostNode>> ReadLostNodes(const std::string& path);

}  // namespace strata

#endif  // STRATA_CORE_TRAIN_LOST_NODES_H_
