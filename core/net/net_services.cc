#include "core/net/net_services.h"

#include "core/net/knob_messages.h"
#include "core/net/ps_wire.h"
#include "core/net/stanza_wire.h"
#include "core/util/log.h"

namespace strata {

void RegisterNetServices() {
  for (const absl::Status& s : {RegisterService<wire::ps::Kind>("ps"),
                                RegisterService<wire::stanza::Kind>("stanza"),
                                RegisterService<wire::knob::Kind>("knob")}) {
    if (!s.ok()) LogError("%s", std::string(s.message()).c_str());
  }
}

}  // namespace strata
