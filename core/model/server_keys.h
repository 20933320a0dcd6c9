// ServerKeys: the keys parameter servers hold for a job, in key order, and
// who pushes each. It is the one definition of the servers' key space:
// servers build their shard and its rules from it, workers their partition
// plan and what they push and pull.
//
// Two kinds of key:
//  * parameter keys hold a trainable tensor; pushers send gradients and the
//    server applies its optimizer;
//  * state keys hold a layer's non-gradient state (BatchNorm running
//    statistics); pushers send their current values and the server keeps
//    their mean (no optimizer). Running statistics are exponential moving
//    averages, so the mean of the pushers' averages is the moving average of
//    the mean of their batch statistics, and pushers never need to pull it
//    back. For running_mean that is what one process training on the
//    global batch holds; running_var averages the pushers' variances, so it
//    leaves out the spread between their batch means (as data-parallel
//    training without synchronised BatchNorm does). With one pusher both
//    are exact.
//
// Key order: the conv workers' parameters, then the FC workers' (the
// replicated head, with several FC workers), then the conv workers' state,
// then the FC workers' state. Who owns which layers depends on the mode:
//
//   mode           conv workers push          FC workers push
//   ps             every layer                -
//   stanza, 1 FC   the trunk [0, split)       - (the head stays in the FC worker)
//   stanza, F > 1  the trunk [0, split)       the head's replicated parameters and state
//
//   std::vector<ServerKey> keys = ServerKeys(*model, KeyLayoutFor(*model, "stanza", 2));
#ifndef STRATA_CORE_MODEL_SERVER_KEYS_H_
#define STRATA_CORE_MODEL_SERVER_KEYS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model.h"

namespace strata {

enum class KeyKind { kParameter, kState };
enum class KeyOwner { kConvWorkers, kFcWorkers };

const char* KeyKindName(KeyKind kind);
const char* KeyOwnerName(KeyOwner owner);

struct ServerKey {
  std::string name;  // the parameter's or state buffer's ("bn1.running_mean")
  int64_t elements = 0;
  KeyKind kind = KeyKind::kParameter;
  KeyOwner owner = KeyOwner::kConvWorkers;
  int layer = 0;  // the model layer it belongs to
  // The local model's tensors for this key: a parameter (value and grad),
  // or a state buffer (value only; parameter is null).
  Parameter* parameter = nullptr;
  StateBuffer* state = nullptr;
  // The tensor a pull fills and an init sends.
  Tensor& value() const { return parameter != nullptr ? parameter->value : state->value; }
};

// Which layers each role pushes (see the table above).
struct KeyLayout {
  int conv_layers_end = 0;      // conv workers push layers [0, conv_layers_end)
  bool fc_head_shared = false;  // FC workers push layers [conv_layers_end, end)
};

// The layout of `mode` ("ps" or "stanza") with `fc_workers` FC workers;
// stanza needs a model with a split.
absl::StatusOr<KeyLayout> KeyLayoutFor(const Model& model, const std::string& mode, int fc_workers);

// The keys of `model` under `layout`, in key order (the key is the index).
std::vector<ServerKey> ServerKeys(Model& model, const KeyLayout& layout);

// Elements of each key, in key order (for the partition plan).
std::vector<int64_t> KeySizes(const std::vector<ServerKey>& keys);

}  // namespace strata

#endif  // STRATA_CORE_MODEL_SERVER_KEYS_H_
