#include "core/net/membership.h"

namespace strata {

void FillRegister(wire::Header::Builder h, uint64_t job_id, const NodeDescription& node) {
  h.setJobId(job_id);
  h.setSenderRole(node.role);
  h.setSenderRank(node.rank);
  auto nodes = h.initNodes(1);
  nodes[0].setRole(node.role);
  nodes[0].setRank(node.rank);
  nodes[0].setAddress(node.address);
  nodes[0].setPeerAddress(node.peer_address);
}

void FillHeartbeat(wire::Header::Builder h, uint64_t job_id, wire::Role role, int rank,
                   const CheckpointReport& checkpoints) {
  h.setJobId(job_id);
  h.setIteration(checkpoints.written);
  h.setSenderRole(role);
  h.setSenderRank(rank);
  if (checkpoints.failed >= 0) {
    h.setFailedCheckpoint(checkpoints.failed);
    h.setErrorMessage(checkpoints.why);
  }
}

CheckpointReport CheckpointReportOf(wire::Header::Reader h) {
  CheckpointReport report;
  report.written = h.getIteration();
  report.failed = h.getFailedCheckpoint();
  if (report.failed >= 0) report.why = h.getErrorMessage().cStr();
  return report;
}

}  // namespace strata
