// MessageType: what a message is, in the envelope of core/net/protocol.capnp:
// the service it belongs to and that service's own kind.
//
// Service 0 is the envelope's control vocabulary (wire::Kind: hello,
// register, heartbeat, error, shutdown, ...). Every other service is a
// module's, and its schema (its id, its kind enum, its body struct) lives
// with that module:
//   1 ps      core/net/ps.capnp           (core/net/ps_wire.h)
//   2 stanza  core/net/stanza.capnp       (core/net/stanza_wire.h)
//   3 moe     moe/expert_block.capnp      (moe/expert_wire.h)
//   4 knob    core/net/knob.capnp         (core/net/knob_messages.h)
// A module makes its kind enum a message type by specialising ServiceOf
// next to its schema, and registers the service's name and kinds
// (RegisterService) so that any process can name its messages in logs and
// errors. A new message is a new kind in its module's enum; a new service
// is a new module schema with an id of its own.
//
//   OutgoingMessage m(wire::ps::Kind::PUSH);           // service 1, kind 0
//   if (TypeOf(header) == wire::ps::Kind::PULL) ...
//   switch (TypeOf(header).code()) { case CodeOf(wire::Kind::HELLO): ... }
#ifndef STRATA_CORE_NET_MESSAGE_TYPE_H_
#define STRATA_CORE_NET_MESSAGE_TYPE_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include <capnp/schema.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/net/protocol.capnp.h"

namespace strata {

// The envelope's own service: its control vocabulary.
inline constexpr uint16_t kControlService = 0;

// Specialised for each service's kind enum: its service id.
template <typename KindEnum>
struct ServiceOf;
template <>
struct ServiceOf<wire::Kind> {
  static constexpr uint16_t kId = kControlService;
};

class MessageType {
 public:
  constexpr MessageType() = default;
  constexpr MessageType(uint16_t service, uint16_t kind) : service_(service), kind_(kind) {}
  // Any service's kind, as that service's message type.
  template <typename KindEnum, typename = decltype(ServiceOf<KindEnum>::kId)>
  constexpr MessageType(KindEnum kind)  // NOLINT(google-explicit-constructor): a kind is a type
      : service_(ServiceOf<KindEnum>::kId), kind_(static_cast<uint16_t>(kind)) {}

  constexpr uint16_t service() const { return service_; }
  constexpr uint16_t kind() const { return kind_; }
  // One number per type, for switch statements (CodeOf gives the cases).
  constexpr uint32_t code() const { return uint32_t{service_} << 16 | kind_; }

  friend constexpr bool operator==(MessageType a, MessageType b) { return a.code() == b.code(); }
  friend constexpr bool operator!=(MessageType a, MessageType b) { return a.code() != b.code(); }
  friend constexpr bool operator<(MessageType a, MessageType b) { return a.code() < b.code(); }

 private:
  uint16_t service_ = 0;
  uint16_t kind_ = 0;
};

constexpr uint32_t CodeOf(MessageType type) { return type.code(); }

MessageType TypeOf(wire::Header::Reader header);
void SetType(wire::Header::Builder header, MessageType type);

// A message's body as its service's struct (an empty one where the message
// has none). The reader throws kj::Exception where the body is not a struct
// (Decode refuses such a message).
template <typename Body>
typename Body::Reader BodyOf(wire::Header::Reader header) {
  return header.getBody().getAs<Body>();
}
template <typename Body>
typename Body::Builder BodyOf(wire::Header::Builder header) {
  return header.getBody().getAs<Body>();
}

// Makes a service's messages nameable: "push", "knob-lease" (each kind's
// schema name, in words joined by '-'). InvalidArgument for an id another
// service holds, or for 0.
absl::Status RegisterService(uint16_t id, absl::string_view name, capnp::EnumSchema kinds);
template <typename KindEnum>
absl::Status RegisterService(absl::string_view name) {
  return RegisterService(ServiceOf<KindEnum>::kId, name, capnp::Schema::from<KindEnum>());
}
// "push", "pull-reply", ...; "service 7 kind 2" for a type of no
// registered service, "ps kind 40" for a kind its service does not have.
std::string KindName(MessageType type);
// The type KindName calls `name`; nullopt when none is.
std::optional<MessageType> KindNamed(absl::string_view name);
// Writes KindName(type) (for test failures and logs).
std::ostream& operator<<(std::ostream& out, MessageType type);

}  // namespace strata

#endif  // STRATA_CORE_NET_MESSAGE_TYPE_H_
