#include "core/net/ps_client.h"

#include <utility>

#include "core/status.h"

namespace strata {

absl::StatusOr<std::unique_ptr<PsClient>> PsClient::Connect(const PsClientOptions& options) {
  std::unique_ptr<PsClient> client(new PsClient());
  STRATA_ASSIGN_OR_RETURN(client->membership_, MembershipClient::Join(client->context_, options));
  client->membership_->ServeOn(client->loop_);
  STRATA_ASSIGN_OR_RETURN(client->kv_, KvClient::Connect(client->context_, options,
                                                         client->membership_->map(), client->loop_));
  STRATA_RETURN_IF_ERROR(client->loop_.Start());
  return client;
}

PsClient::~PsClient() { loop_.Stop(); }

}  // namespace strata
