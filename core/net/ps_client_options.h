// PsClientOptions: how a worker connects to its job's coordinator and
// parameter servers (core/net/ps_client.h), read by the membership client
// and the key-value client alike.
#ifndef STRATA_CORE_NET_PS_CLIENT_OPTIONS_H_
#define STRATA_CORE_NET_PS_CLIENT_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "core/net/admission.h"
#include "core/net/message_channel.h"
#include "core/net/partition_plan.h"
#include "core/net/transport.h"

namespace strata {

struct PsClientOptions {
  std::string coordinator;
  wire::Role role = wire::Role::CONV_WORKER;
  int rank = -1;                // -1: the coordinator assigns one (conv workers only)
  std::string serving_address;  // FC workers: where conv workers reach them
  std::string peer_address;     // FC workers: where the other FC workers reach them
  // Job id, token and identity presented in every HELLO (identity "" in the
  // plain key-value mode).
  JobCredentials credentials;
  // How long a silent coordinator or server is waited for.
  absl::Duration timeout = absl::Seconds(60);
  absl::Duration heartbeat_every = absl::Seconds(1);
  WireLimits limits;
  // Open shared-memory lanes to servers on this host (core/net/kv_client.h),
  // each with a region of shm_slots slots of shm_slot_bytes (a larger chunk
  // goes over the socket).
  bool shared_memory = true;
  uint32_t shm_slots = 128;
  uint64_t shm_slot_bytes = kDefaultChunkElements * sizeof(float);
  // Wraps every channel to a server, socket and lane alike
  // (core/net/message_channel.h); unset: none.
  ChannelDecorator decorate_channel;
};

}  // namespace strata

#endif  // STRATA_CORE_NET_PS_CLIENT_OPTIONS_H_
