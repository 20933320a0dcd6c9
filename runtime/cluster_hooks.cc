#include "runtime/cluster_hooks.h"

#include "core/net/wire_format.h"
#include "core/status.h"

namespace strata {

absl::Status ClusterHooks::DeclareWireFormat(const std::string& initial, FcLink* link) {
  STRATA_ASSIGN_OR_RETURN(const wire::DataType start, ParseWireFormat(initial));
  const auto apply = [this, link](wire::DataType type) {
    client_.set_wire_format(type);
    if (link != nullptr) link->set_wire_format(type);
  };
  apply(start);
  knobs_.Declare(kWireFormatKnob, initial, [apply](const std::string& value) -> absl::Status {
    STRATA_ASSIGN_OR_RETURN(const wire::DataType type, ParseWireFormat(value));
    apply(type);
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

}  // namespace strata
