#include "core/control/controller.h"

namespace strata {

const std::vector<ControllerEvent>& Controller::events() const {
  static const std::vector<ControllerEvent> none;
  return none;
}

nlohmann::json ControllerEventJson(const std::string& process, const ControllerEvent& event) {
  return {{"event", "controller"},
          {"process", process},
          {"iteration", event.iteration},
          {"kind", event.kind},
          {"detail", event.detail}};
}

}  // namespace strata
