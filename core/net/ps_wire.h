// The parameter-server service's messages (core/net/ps.capnp) as message
// types of the envelope (core/net/message_type.h).
#ifndef STRATA_CORE_NET_PS_WIRE_H_
#define STRATA_CORE_NET_PS_WIRE_H_

#include "core/net/message_type.h"
#include "core/net/ps.capnp.h"

namespace strata {

template <>
struct ServiceOf<wire::ps::Kind> {
  static constexpr uint16_t kId = wire::ps::SERVICE;
};

}  // namespace strata

#endif  // STRATA_CORE_NET_PS_WIRE_H_
