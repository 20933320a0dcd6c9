#include "core/control/iteration_record.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/json_file.h"

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
  if (rows > 0) j["rows"] = rows;
  return j;
}

const char* SpanKindName(SpanKind kind) {
  switch (kind) {
    case SpanKind::kCompute:
      return "compute";
    case SpanKind::kDeviceWait:
      return "device wait";
    case SpanKind::kPeerWait:
      return "peer wait";
  }
  return "unknown";
}

std::vector<Span> SpansOfRecord(const nlohmann::json& record) {
  std::vector<Span> spans;
  if (!record.contains("start") || !record.contains("phases")) return spans;
  double t = record["start"].get<double>();
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& device_waits =
      record.contains("device_waits") ? record["device_waits"] : empty;
  const nlohmann::json& peer_waits = record.contains("peer_waits") ? record["peer_waits"] : empty;
  for (int p = 0; p < kPhaseCount; ++p) {
    const Phase phase = static_cast<Phase>(p);
    const char* name = PhaseName(phase);
    const double total = record["phases"].value(name, 0.0);
    double device = device_waits.value(name, 0.0);
    double peers = peer_waits.value(name, 0.0);
    if (!IsComputePhase(phase)) {
      device = 0;
      peers = total;
    }
    const double busy = std::max(0.0, total - device - peers);
    for (const auto& [seconds, kind] :
         {std::pair{device, SpanKind::kDeviceWait}, std::pair{busy, SpanKind::kCompute},
          std::pair{peers, SpanKind::kPeerWait}}) {
      if (seconds <= 0) continue;
      spans.push_back({t, t + seconds, kind, phase});
      t += seconds;
    }
  }
  return spans;
}

absl::StatusOr<std::vector<nlohmann::json>> ReadIterationRecords(const std::string& path) {
  absl::StatusOr<std::vector<nlohmann::json>> records = ReadJsonLines(path, "iteration");
  if (absl::IsNotFound(records.status())) {
    return absl::NotFoundError(absl::StrCat("no iteration records at ", path));
  }
  return records;
}

double DeviceWaitSeconds(const nlohmann::json& record) {
  double total = 0;
  if (!record.contains("device_waits")) return total;
  for (const auto& [phase, seconds] : record["device_waits"].items())
    total += seconds.get<double>();
  return total;
}

}  // namespace strata
