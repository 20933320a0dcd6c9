// The MoE service's messages (moe/expert_block.capnp) as message types of
// the envelope (core/net/message_type.h); registered by moe::RegisterMoe.
#ifndef STRATA_MOE_EXPERT_WIRE_H_
#define STRATA_MOE_EXPERT_WIRE_H_

#include "core/net/message_type.h"
#include "moe/expert_block.capnp.h"

namespace strata {

template <>
struct ServiceOf<wire::moe::Kind> {
  static constexpr uint16_t kId = wire::moe::SERVICE;
};

}  // namespace strata

#endif  // STRATA_MOE_EXPERT_WIRE_H_
