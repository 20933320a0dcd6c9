// ParameterSync: a worker's parameter traffic with the servers for a range
// of model layers — initialisation, (re)joining at the servers' iteration,
// and the per-iteration push of each layer's gradients as backward produces
// them, with the pull of the same keys queued right behind.
//
//   ParameterSync sync(client, model, 0, model.split_index());
//   STRATA_ASSIGN_OR_RETURN(int64_t step, sync.Join(/*initialise=*/rank == 0));
//   model.Backward(grad, 0, split, false, sync.AfterLayer(step));
//   absl::Status s = sync.Finish();   // Aborted: a server was restored; Rejoin()
#ifndef STRATA_CONV_WORKERS_PARAMETER_SYNC_H_
#define STRATA_CONV_WORKERS_PARAMETER_SYNC_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model.h"
#include "core/net/ps_client.h"

namespace strata {

class ParameterSync {
 public:
  // Keys are key_offset + the indices of the parameters of layers
  // [begin, end) in order. `client` and `model` must outlive this object.
  ParameterSync(PsClient& client, Model& model, int begin, int end, uint32_t key_offset = 0);
  // Keys are key_offset + the indices of `params` (parameters of `model`;
  // others of its parameters, such as an FC worker's own experts, are left
  // alone).
  ParameterSync(PsClient& client, Model& model, std::vector<Parameter*> params,
                uint32_t key_offset);

  // Parameter sizes in key order (for the partition plan).
  std::vector<int64_t> sizes() const;
  // When `initialise`, seeds the servers with this model's values first.
  // Then pulls the current values; returns the iteration to start at.
  absl::StatusOr<int64_t> Join(bool initialise);
  // After a server restart: drops what is in flight, pulls the current
  // values, returns the iteration to continue at.
  absl::StatusOr<int64_t> Rejoin();
  // A Model::Backward hook that pushes layer i's gradients for `iteration`
  // and queues the pull of its values for iteration + 1.
  std::function<void(int)> AfterLayer(int64_t iteration);
  // Waits for this iteration's pushes and pulls (one deadline for all).
  absl::Status Finish();
  // Finish(), and when a server turns out to have been restored from a
  // checkpoint, Rejoin(): sets *iteration to the servers' iteration, logs it
  // with `log_prefix`, and returns false (redo from there). True when the
  // iteration completed.
  absl::StatusOr<bool> CompleteOrRewind(int64_t* iteration, const std::string& log_prefix);

 private:
  absl::StatusOr<int64_t> PullCurrent();

  PsClient& client_;
  Model& model_;
  std::vector<Parameter*> params_;
  uint32_t key_offset_;
  std::map<const Parameter*, uint32_t> key_of_;
  std::vector<Ticket> tickets_;
};

}  // namespace strata

#endif  // STRATA_CONV_WORKERS_PARAMETER_SYNC_H_
