#include "server/lane_hub.h"

#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace strata {
namespace {

// ZeroMQ's own routing ids start with a zero byte; lane identities cannot.
constexpr char kLanePrefix[] = "lane:";

}  // namespace

absl::StatusOr<std::unique_ptr<LaneHub>> LaneHub::Listen(std::string owner) {
  STRATA_ASSIGN_OR_RETURN(auto listener, LaneListener::Listen());
  return std::unique_ptr<LaneHub>(new LaneHub(std::move(owner), std::move(listener)));
}

bool LaneHub::IsLane(const std::string& identity) {
  return absl::StartsWith(identity, kLanePrefix);
}

void LaneHub::AddPollItems(std::vector<zmq::pollitem_t>& items) const {
  items.push_back({nullptr, listener_->fd(), ZMQ_POLLIN, 0});
  for (const auto& [identity, lane] : lanes_) {
    items.push_back({nullptr, lane->fd(), ZMQ_POLLIN, 0});
  }
}

LaneHub::Events LaneHub::Service(const zmq::pollitem_t* items, int max_per_lane) {
  Events events;
  // The lanes the items were made for, before this call changes the set.
  std::vector<std::string> polled;
  for (const auto& [identity, lane] : lanes_) polled.push_back(identity);
  if (items[0].revents & ZMQ_POLLIN) {
    while (true) {
      absl::StatusOr<std::unique_ptr<LaneSocket>> accepted = listener_->Accept();
      if (!accepted.ok()) {
        std::fprintf(stderr, "[%s] %s\n", owner_.c_str(),
                     std::string(accepted.status().message()).c_str());
        break;
      }
      if (*accepted == nullptr) break;
      lanes_[absl::StrCat(kLanePrefix, next_lane_++)] = *std::move(accepted);
    }
  }
  for (size_t i = 0; i < polled.size(); ++i) {
    if (!(items[1 + i].revents & (ZMQ_POLLIN | ZMQ_POLLERR))) continue;
    const std::string& identity = polled[i];
    auto it = lanes_.find(identity);
    if (it == lanes_.end()) continue;
    for (int n = 0; n < max_per_lane; ++n) {
      absl::StatusOr<std::optional<RawMessage>> packet = it->second->ReceiveNow();
      if (!packet.ok()) {
        if (absl::IsUnavailable(packet.status())) {
          CloseLane(identity, "");
          break;
        }
        events.refused.emplace_back(identity, packet.status());
        continue;
      }
      if (!packet->has_value()) break;
      (*packet)->identity = identity;
      events.requests.push_back(**std::move(packet));
    }
  }
  events.closed.swap(closed_);
  return events;
}

size_t LaneHub::Send(const std::string& identity, OutgoingMessage& message) {
  auto it = lanes_.find(identity);
  if (it == lanes_.end()) return 0;
  absl::StatusOr<size_t> sent = it->second->Send(message);
  if (sent.ok()) return *sent;
  CloseLane(identity, std::string(sent.status().message()));
  return 0;
}

void LaneHub::CloseLane(const std::string& identity, const std::string& why) {
  if (lanes_.erase(identity) == 0) return;
  if (!why.empty()) {
    std::fprintf(stderr, "[%s] closed %s: %s (its worker resends over the socket)\n",
                 owner_.c_str(), identity.c_str(), why.c_str());
  }
  closed_.push_back(identity);
}

}  // namespace strata
