// HeadExpertGroup: the MoE layers of a model's head spread over the F FC
// workers of a stanza job (expert parallelism, moe/expert_parallel.h). FC
// worker f keeps experts [f*E/F, (f+1)*E/F) of every MoE layer; those
// parameters never reach the servers and are updated by the FC worker's own
// optimizer, while the rest of the head (gate included) stays data-parallel
// through the servers.
//
//   auto group = HeadExpertGroup::Bind(model, split, fc_worker_serving, options);
//   client_options.peer_address = group->address();   // registered with the coordinator
//   ... PsClient::Connect ...
//   STRATA_RETURN_IF_ERROR(group->Join(client->map().fc_peer_addresses));  // F > 1 only
//   model.Forward(...); STRATA_RETURN_IF_ERROR(group->status());
#ifndef STRATA_FC_WORKERS_HEAD_EXPERT_GROUP_H_
#define STRATA_FC_WORKERS_HEAD_EXPERT_GROUP_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/control/knobs.h"
#include "core/model/model.h"
#include "moe/moe_layer.h"
#include "moe/zmq_expert_exchange.h"

namespace strata {

class HeadExpertGroup {
 public:
  // nullptr when the head (layers from `split`) has no MoE layer. Else binds
  // the expert exchange's inbox where ExpertExchangeAddress(`fc_worker`)
  // says: beside the FC worker's own socket.
  static absl::StatusOr<std::unique_ptr<HeadExpertGroup>> Bind(
      Model& model, int split, const ServingAddress& fc_worker,
      const ExpertExchangeOptions& options);

  const std::string& address() const { return exchange_->address(); }
  // Connects to the other FC workers' inboxes (by rank) and makes every MoE
  // layer of the head keep only this FC worker's experts. Fails (naming the
  // layer) when the FC workers do not divide its experts. Must precede any
  // optimizer or ParameterSync built over the head's parameters.
  absl::Status Join(const std::vector<std::string>& peer_addresses);
  // The parameters only this FC worker holds (its experts); empty before Join.
  const std::vector<Parameter*>& owned_parameters() const { return owned_; }
  // Declares the MoE knobs (moe/moe_layer_type.h) in `knobs`, starting
  // from the first MoE layer's configured settings; a change applies to
  // every MoE layer of the head. After Join; the group must outlive `knobs`'
  // use.
  void DeclareKnobs(JobKnobs& knobs);
  // The first failed exchange of any MoE layer (moe_layer.h), or OK.
  absl::Status status() const;
  // Collective: every expert's weights to every FC worker, so that one of
  // them can evaluate the whole model alone.
  absl::Status GatherForEvaluation();
  // Collective: every MoE layer holds all experts again (to write the model).
  absl::Status Leave();

  // Told while an MoE layer waits for its peers' blocks (null: none).
  void set_wait_observer(WaitObserver* observer) { exchange_->set_wait_observer(observer); }

  uint64_t bytes_sent() const { return exchange_->bytes_sent(); }
  uint64_t bytes_received() const { return exchange_->bytes_received(); }

 private:
  HeadExpertGroup(std::vector<moe::MoeLayer*> layers, std::unique_ptr<ZmqExpertExchange> exchange)
      : layers_(std::move(layers)), exchange_(std::move(exchange)) {}

  std::vector<moe::MoeLayer*> layers_;
  std::unique_ptr<ZmqExpertExchange> exchange_;
  std::vector<Parameter*> owned_;
  moe::ParallelSettings settings_;  // what the knobs last set
};

// Where the expert exchange of an FC worker serving at `fc_worker` binds:
// "ipc://PATH.experts" beside "ipc://PATH"; over tcp the FC worker's own
// host, range and advertised host (port 0 or a range: the socket the FC
// worker bound first has taken its port, so the exchange takes another).
// InvalidArgument when the FC worker's bind names a single port, which
// leaves none for the exchange (it says to give a range), or is
// malformed.
absl::StatusOr<ServingAddress> ExpertExchangeAddress(const ServingAddress& fc_worker);

}  // namespace strata

#endif  // STRATA_FC_WORKERS_HEAD_EXPERT_GROUP_H_
