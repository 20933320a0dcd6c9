#include "server/lane_hub.h"

#include <unistd.h>

#include <cstdio>

#include <sodium.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/util/log.h"

namespace strata {
namespace {

// "lane:N" as an identity of the lane kind (core/net/message_endpoint.h),
// which only this hub delivers.
std::string LaneIdentity(uint64_t lane) {
  return EndpointIdentity(EndpointKind::kLane, absl::StrCat("lane:", lane));
}

// The identity without its kind, for log lines.
std::string Printable(const std::string& identity) { return identity.substr(1); }

}  // namespace

std::string LaneHub::NameFor(const std::string& server_address, const std::string& job_token) {
  // BLAKE2b of the secret, then the address: without the token, nobody can
  // tell the name from the address.
  const std::string input = absl::StrCat(job_token, std::string(1, '\0'), server_address);
  unsigned char digest[16];
  // Picks the fastest BLAKE2b once. It fails only where the system's random
  // source cannot be opened, which hashing does not need.
  [[maybe_unused]] static const int sodium_ready = sodium_init();
  crypto_generichash(digest, sizeof(digest), reinterpret_cast<const unsigned char*>(input.data()),
                     input.size(), nullptr, 0);
  return absl::StrCat("strata-lane-",
                      absl::BytesToHexString(absl::string_view(
                          reinterpret_cast<const char*>(digest), sizeof(digest))));
}

absl::StatusOr<std::unique_ptr<LaneHub>> LaneHub::Listen(std::string owner,
                                                         const std::string& server_address,
                                                         const std::string& job_token) {
  STRATA_ASSIGN_OR_RETURN(auto listener,
                          LaneListener::Listen(NameFor(server_address, job_token)));
  return std::unique_ptr<LaneHub>(new LaneHub(std::move(owner), std::move(listener)));
}

bool LaneHub::IsLane(const std::string& identity) {
  return IsIdentityOf(EndpointKind::kLane, identity);
}

void LaneHub::AddPollItems(std::vector<zmq::pollitem_t>& items) {
  items.push_back({nullptr, listener_->fd(), ZMQ_POLLIN, 0});
  polled_.clear();
  for (const auto& [identity, lane] : lanes_) {
    items.push_back({nullptr, lane->fd(), ZMQ_POLLIN, 0});
    polled_.push_back(identity);
  }
}

void LaneHub::Collect(const zmq::pollitem_t* items, int max_messages, EndpointEvents& events) {
  const std::vector<std::string> polled = std::move(polled_);
  polled_.clear();
  if (items[0].revents & ZMQ_POLLIN) {
    while (true) {
      absl::StatusOr<std::unique_ptr<LaneSocket>> accepted = listener_->Accept();
      if (!accepted.ok()) {
        LogWarning("%s", std::string(accepted.status().message()).c_str());
        break;
      }
      if (*accepted == nullptr) break;
      // The region token proves possession of a region, not who its owner
      // is: only processes of the server's own user may open a lane.
      const absl::StatusOr<uid_t> uid = (*accepted)->PeerUid();
      if (!uid.ok() || *uid != ::geteuid()) {
        LogRefusal("refused a lane from %s: the server runs as uid %u",
                   uid.ok() ? absl::StrCat("uid ", *uid).c_str()
                            : std::string(uid.status().message()).c_str(),
                   static_cast<unsigned>(::geteuid()));
        continue;
      }
      lanes_[LaneIdentity(next_lane_++)] = *std::move(accepted);
    }
  }
  for (size_t i = 0; i < polled.size(); ++i) {
    if (!(items[1 + i].revents & (ZMQ_POLLIN | ZMQ_POLLERR))) continue;
    const std::string& identity = polled[i];
    auto it = lanes_.find(identity);
    if (it == lanes_.end()) continue;
    for (int n = 0; n < max_messages; ++n) {
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
      for (const zmq::message_t& frame : (*packet)->frames) received_ += frame.size();
      events.messages.push_back(**std::move(packet));
    }
  }
  events.closed.insert(events.closed.end(), closed_.begin(), closed_.end());
  closed_.clear();
}

absl::StatusOr<size_t> LaneHub::Send(const std::string& peer, OutgoingMessage& message) {
  auto it = lanes_.find(peer);
  if (it == lanes_.end()) {
    return absl::UnavailableError(absl::StrCat(Printable(peer), " of ", owner_, " is closed"));
  }
  absl::StatusOr<size_t> sent = it->second->Send(message);
  if (sent.ok()) {
    sent_ += *sent;
    return *sent;
  }
  CloseLane(peer, std::string(sent.status().message()));
  return absl::UnavailableError(
      absl::StrCat(Printable(peer), " of ", owner_, " closed: ", sent.status().message()));
}

void LaneHub::CloseLane(const std::string& identity, const std::string& why) {
  if (lanes_.erase(identity) == 0) return;
  if (!why.empty()) {
    LogInfo("closed %s: %s (its worker resends over the socket)", Printable(identity).c_str(),
            why.c_str());
  }
  closed_.push_back(identity);
}

}  // namespace strata
