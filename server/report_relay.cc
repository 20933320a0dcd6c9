#include "server/report_relay.h"

namespace strata {

void ReportRelay::Add(const Peer& from, const std::vector<IterationReport>& reports) {
  const Key sender = KeyOf(from.role, from.rank);
  auto last = last_reported_.emplace(sender, -1).first;
  for (const IterationReport& r : reports) {
    if (KeyOf(r.role, r.rank) != sender || r.record.iteration <= last->second) continue;
    last->second = r.record.iteration;
    for (auto& [wanting, queue] : queues_) {
      if (wanting == sender) continue;  // its own iterations it has
      queue.push_back(r);
      if (queue.size() > kMaxReportsPerMessage) queue.pop_front();
    }
  }
}

void ReportRelay::Want(const Peer& peer) { queues_[KeyOf(peer.role, peer.rank)]; }

std::vector<IterationReport> ReportRelay::TakeFor(const Peer& peer) {
  auto it = queues_.find(KeyOf(peer.role, peer.rank));
  if (it == queues_.end()) return {};
  std::vector<IterationReport> out(it->second.begin(), it->second.end());
  it->second.clear();
  return out;
}

}  // namespace strata
