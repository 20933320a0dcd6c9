#include "core/model/server_keys.h"

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace strata {

const char* KeyKindName(KeyKind kind) {
  return kind == KeyKind::kParameter ? "parameter" : "state";
}

const char* KeyOwnerName(KeyOwner owner) {
  return owner == KeyOwner::kConvWorkers ? "conv workers" : "FC workers";
}

absl::StatusOr<KeyLayout> KeyLayoutFor(const Model& model, const std::string& mode,
                                       int fc_workers) {
  if (mode == "ps") return KeyLayout{model.num_layers(), false};
  if (mode != "stanza") {
    return absl::InvalidArgumentError(absl::StrCat("mode ", mode, ": use ps or stanza"));
  }
  STRATA_RETURN_IF_ERROR(model.RequireSplit());
  return KeyLayout{model.split_index(), fc_workers > 1};
}

std::vector<ServerKey> ServerKeys(Model& model, const KeyLayout& layout) {
  struct Range {
    int begin, end;
    KeyOwner owner;
  };
  std::vector<Range> ranges = {{0, layout.conv_layers_end, KeyOwner::kConvWorkers}};
  if (layout.fc_head_shared) {
    ranges.push_back({layout.conv_layers_end, model.num_layers(), KeyOwner::kFcWorkers});
  }
  std::vector<ServerKey> keys;
  for (const Range& r : ranges) {
    for (int layer = r.begin; layer < r.end; ++layer) {
      // The head's layers keep only their replicated parameters on the
      // servers (an MoE layer's experts stay split over the FC workers).
      std::vector<Parameter*> params = r.owner == KeyOwner::kFcWorkers
                                           ? model.layer(layer).replicated_parameters()
                                           : model.layer(layer).parameters();
      for (Parameter* p : params) {
        keys.push_back(
            {p->name, p->value.numel(), KeyKind::kParameter, r.owner, layer, p, nullptr});
      }
    }
  }
  for (const Range& r : ranges) {
    for (int layer = r.begin; layer < r.end; ++layer) {
      for (StateBuffer* b : model.layer(layer).state_buffers()) {
        keys.push_back({b->name, b->value.numel(), KeyKind::kState, r.owner, layer, nullptr, b});
      }
    }
  }
  return keys;
}

std::vector<int64_t> KeySizes(const std::vector<ServerKey>& keys) {
  std::vector<int64_t> sizes;
  sizes.reserve(keys.size());
  for (const ServerKey& k : keys) sizes.push_back(k.elements);
  return sizes;
}

}  // namespace strata
