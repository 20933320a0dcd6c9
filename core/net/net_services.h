// Registers the services whose schemas core/net holds (ps, stanza, knob)
// with the envelope's table of names (core/net/message_type.h); idempotent.
// Called at program start-up with every module's registration.
#ifndef STRATA_CORE_NET_NET_SERVICES_H_
#define STRATA_CORE_NET_NET_SERVICES_H_

namespace strata {

void RegisterNetServices();

}  // namespace strata

#endif  // STRATA_CORE_NET_NET_SERVICES_H_
