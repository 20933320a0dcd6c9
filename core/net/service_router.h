// ServiceRouter: the services a serving process answers on its endpoints,
// each a handler its module registered under the service's id
// (core/net/message_type.h), so that the process's loop routes a message by
// the envelope alone and a new message touches only its own service's
// module. `Context` is what the process's loop knows of the sender (a
// server passes the admitted peer).
//
//   ServiceRouter<const Peer&> router("a server");
//   router.Add(wire::ps::SERVICE, [this](const IncomingMessage& m, const Peer& p) { ... });
//   STRATA_RETURN_IF_ERROR(router.Route(message, peer));
//
// Thread safety: handlers are added before the loop starts; Route is then
// called by the loop's thread only.
#ifndef STRATA_CORE_NET_SERVICE_ROUTER_H_
#define STRATA_CORE_NET_SERVICE_ROUTER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/net/message_type.h"
#include "core/net/transport.h"

namespace strata {

template <typename... Context>
class ServiceRouter {
 public:
  using Handler = std::function<absl::Status(const IncomingMessage&, Context...)>;

  // `who` names the process in refusals ("a server").
  explicit ServiceRouter(std::string who) : who_(std::move(who)) {}

  // AlreadyExists when `service` has a handler.
  absl::Status Add(uint16_t service, Handler handler) {
    if (!handlers_.emplace(service, std::move(handler)).second) {
      return absl::AlreadyExistsError(absl::StrCat("service ", service, " has a handler"));
    }
    return absl::OkStatus();
  }

  // The handler's answer, or InvalidArgument naming the message when this
  // process serves none of its service.
  absl::Status Route(const IncomingMessage& message, Context... context) const {
    const MessageType type = TypeOf(message.header());
    auto it = handlers_.find(type.service());
    if (it == handlers_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(who_, " does not accept ", KindName(type), " messages"));
    }
    return it->second(message, context...);
  }

 private:
  std::string who_;
  std::map<uint16_t, Handler> handlers_;
};

}  // namespace strata

#endif  // STRATA_CORE_NET_SERVICE_ROUTER_H_
