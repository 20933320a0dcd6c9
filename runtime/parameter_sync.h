// ParameterSync: a worker's traffic with the servers for the server keys one
// role pushes (core/model/server_keys.h) — initialisation, (re)joining at
// the servers' iteration, and the per-iteration push of each layer's keys
// as backward reaches it: a parameter key's gradient, with the pull of its
// value queued right behind, and a state key's current values (never
// pulled back: the servers' mean is what evaluation and checkpoints use).
//
//   const auto keys = ServerKeys(model, layout);
//   ParameterSync sync(client->kv(), model, keys, KeyOwner::kConvWorkers);
//   STRATA_ASSIGN_OR_RETURN(int64_t step, sync.Join(/*initialise=*/rank == 0));
//   model.Backward(grad, 0, split, false, sync.AfterLayer(step));
//   absl::Status s = sync.Finish();   // Aborted: a server was restored; Rejoin()
//
// A model on a device (its backend's) reaches the wire through the host: a
// gradient or state is copied down when its layer's backward hands it over
// (waiting for that backward), and pulled values land in host buffers that
// are copied up once their pulls complete (Finish, Join, PullInto), before
// the next forward.
//
// Thread safety: one thread drives an instance; `client` and `model` must
// outlive it.
#ifndef STRATA_RUNTIME_PARAMETER_SYNC_H_
#define STRATA_RUNTIME_PARAMETER_SYNC_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model.h"
#include "core/model/server_keys.h"
#include "core/net/kv_client.h"

namespace strata {

class ParameterSync {
 public:
  // `keys` is the job's whole key list; this object pushes and pulls those
  // of `owner`.
  ParameterSync(KvClient& client, Model& model, std::vector<ServerKey> keys, KeyOwner owner);

  // Sizes of every key of the job, in key order (for the partition plan).
  std::vector<int64_t> plan_sizes() const { return KeySizes(keys_); }
  // When `initialise`, seeds the servers with this model's values of our
  // keys first. Then pulls their current values (parameters and state);
  // returns the iteration to start at.
  absl::StatusOr<int64_t> Join(bool initialise);
  // After a server restart: drops what is in flight, pulls the current
  // values, returns the iteration to continue at.
  absl::StatusOr<int64_t> Rejoin();
  // A Model::Backward hook that pushes layer i's keys for `iteration` (and
  // queues the pull of its parameters for iteration + 1).
  std::function<void(int)> AfterLayer(int64_t iteration);
  // Waits for this iteration's pushes and pulls (one deadline for all);
  // the first error of a copy from the device, if any.
  absl::Status Finish();
  // Finish(), and when a server turns out to have been restored from a
  // checkpoint, Rejoin(): sets *iteration to the servers' iteration, logs it,
  // and returns false (redo from there). True when the iteration completed.
  absl::StatusOr<bool> CompleteOrRewind(int64_t* iteration);

  // Pulls the servers' values at version >= `iteration` of every key of
  // `owner` (ours or another role's) of the given kind into the model:
  // an FC worker pulls the conv workers' trunk and its state to evaluate;
  // a ps worker pulls the mean state before it writes the model.
  absl::Status PullInto(KeyOwner owner, KeyKind kind, int64_t iteration);

 private:
  std::vector<uint32_t> KeysOf(KeyOwner owner, KeyKind kind) const;
  // Pulls `keys` at version >= iteration; returns the smallest version.
  absl::StatusOr<int64_t> Pull(const std::vector<uint32_t>& keys, int64_t iteration);
  absl::StatusOr<int64_t> PullCurrent();
  // Where a pull of key k lands: the model's value on the host, else a
  // host buffer of its own (noted, to be copied up by Completed).
  Tensor PullTarget(uint32_t k);
  // After waiting for the noted pulls (`waited`, the wait's outcome):
  // copies their buffers into the model's device tensors, or, when the
  // wait failed, returns its error and forgets them.
  absl::Status Completed(const absl::Status& waited);

  KvClient& client_;
  Model& model_;
  std::vector<ServerKey> keys_;
  KeyOwner owner_;
  std::map<int, std::vector<uint32_t>> keys_of_layer_;  // our keys, by layer
  std::vector<Ticket> tickets_;
  // For a model on a device: a host buffer per pulled key, the keys whose
  // pulls are in flight, and the first failed copy down since Finish.
  std::map<uint32_t, Tensor> pulled_values_;
  std::vector<uint32_t> in_flight_pulls_;
  absl::Status copy_error_;
};

// The model's state buffers (BatchNorm statistics), copied: evaluating
// with the servers' state must not change what a training worker goes on
// with.
class StateSnapshot {
 public:
  // Host copies of the state, from the model's device.
  static absl::StatusOr<StateSnapshot> Take(Model& model);
  // Puts the copied values back.
  absl::Status Restore();

 private:
  explicit StateSnapshot(Model& model) : model_(model) {}
  Model& model_;
  std::vector<Tensor> values_;
};

}  // namespace strata

#endif  // STRATA_RUNTIME_PARAMETER_SYNC_H_
