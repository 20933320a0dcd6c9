// The Stanza service's messages (core/net/stanza.capnp) as message types of
// the envelope (core/net/message_type.h).
#ifndef STRATA_CORE_NET_STANZA_WIRE_H_
#define STRATA_CORE_NET_STANZA_WIRE_H_

#include "core/net/message_type.h"
#include "core/net/stanza.capnp.h"

namespace strata {

template <>
struct ServiceOf<wire::stanza::Kind> {
  static constexpr uint16_t kId = wire::stanza::SERVICE;
};

}  // namespace strata

#endif  // STRATA_CORE_NET_STANZA_WIRE_H_
