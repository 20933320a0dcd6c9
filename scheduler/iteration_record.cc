#include "scheduler/iteration_record.h"

namespace strata {

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kLoad:
      return "load";
    case Phase::kForward:
      return "forward";
    case Phase::kExchange:
      return "exchange";
    case Phase::kBackward:
      return "backward";
    case Phase::kSynchronise:
      return "synchronise";
    case Phase::kBoundary:
      return "boundary";
  }
  return "unknown";
}

bool IsComputePhase(Phase phase) {
  return phase != Phase::kExchange && phase != Phase::kSynchronise;
}

void IterationRecord::Summarise() {
  compute_seconds = communication_seconds = waiting_seconds = wall_seconds = 0;
  for (int p = 0; p < kPhaseCount; ++p) {
    const Phase phase = static_cast<Phase>(p);
    if (phase == Phase::kBoundary) continue;
    wall_seconds += phase_seconds[p];
    if (!IsComputePhase(phase)) {
      communication_seconds += phase_seconds[p];
      continue;
    }
    communication_seconds += wait_seconds[p];
    waiting_seconds += device_wait_seconds[p];
    const double busy = phase_seconds[p] - wait_seconds[p] - device_wait_seconds[p];
    if (phase == Phase::kLoad) {
      waiting_seconds += busy;
    } else {
      compute_seconds += busy;
    }
  }
}

nlohmann::json IterationRecord::ToJson() const {
  nlohmann::json phases = nlohmann::json::object();
  nlohmann::json waits = nlohmann::json::object();
  nlohmann::json device_waits = nlohmann::json::object();
  for (int p = 0; p < kPhaseCount; ++p) {
    const char* name = PhaseName(static_cast<Phase>(p));
    phases[name] = phase_seconds[p];
    waits[name] = wait_seconds[p];
    device_waits[name] = device_wait_seconds[p];
  }
  nlohmann::json j = {{"event", "iteration"},
                      {"process", process},
                      {"iteration", iteration},
                      {"completed", completed},
                      {"start", start_seconds},
                      {"phases", phases},
                      {"peer_waits", waits},
                      {"device_waits", device_waits},
                      {"compute", compute_seconds},
                      {"communication", communication_seconds},
                      {"waiting", waiting_seconds},
                      {"wall", wall_seconds},
                      {"bytes_sent", bytes_sent},
                      {"bytes_received", bytes_received},
                      {"knobs", knobs}};
  if (loss.has_value()) j["loss"] = *loss;
  return j;
}

}  // namespace strata
