// IterationRecord: what one process did in one iteration of its StepLoop
// (runtime/step_loop.h): the seconds of each phase, how they split into
// compute, communication and waiting, the bytes exchanged with each kind
// of peer, the loss where this process computes it, and the knobs in
// force. Every process writes one JSON line per iteration (--records-out)
// and hands the record to its Controller (core/control/controller.h).
#ifndef STRATA_CORE_CONTROL_ITERATION_RECORD_H_
#define STRATA_CORE_CONTROL_ITERATION_RECORD_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace strata {

// The phases of one iteration, in the order the StepLoop runs them.
enum class Phase { kLoad = 0, kForward, kExchange, kBackward, kSynchronise, kBoundary };
inline constexpr int kPhaseCount = 6;

// "load", "forward", "exchange", "backward", "synchronise", "boundary".
const char* PhaseName(Phase phase);
// Whether the device is held during the phase (all but exchange and
// synchronise, which only wait on peers).
bool IsComputePhase(Phase phase);

struct IterationRecord {
  std::string process;    // "conv worker 0", "fc worker 1", "single"
  int64_t iteration = 0;  // 0-based, global
  bool completed = true;  // false: rewound (a server came back from a checkpoint)
  std::array<double, kPhaseCount> phase_seconds{};  // each phase, waits included
  std::array<double, kPhaseCount> wait_seconds{};   // waits on peers inside each phase
  // Waits for the device (runtime/device_policy.h: another job of the
  // process holds it) inside each phase.
  std::array<double, kPhaseCount> device_wait_seconds{};
  // When the iteration began: seconds on the machine's monotonic clock, the
  // same for every process and thread of one host (timelines).
  double start_seconds = 0;
  // Split of the iteration (load..synchronise; boundary work such as
  // evaluation is not training time): compute = compute phases minus their
  // waits, except loading; communication = exchange and synchronise plus
  // every wait on peers; waiting = the rest (input loading, and waits for
  // the device).
  double compute_seconds = 0;
  double communication_seconds = 0;
  double waiting_seconds = 0;
  double wall_seconds = 0;  // load..synchronise
  // Bytes exchanged during the iteration, by peer kind ("server", "conv", "fc").
  std::map<std::string, uint64_t> bytes_sent;
  std::map<std::string, uint64_t> bytes_received;
  std::optional<double> loss;                // where this process computes it
  // Rows of the global batch this process computed (a conv worker its
  // share, an FC worker what its conv workers sent); 0: none or not told.
  int64_t rows = 0;
  std::map<std::string, std::string> knobs;  // in force during the iteration

  // Fills compute/communication/waiting/wall from the phase and wait seconds.
  void Summarise();
  // {"event":"iteration","process":...,"iteration":...,"phases":{...},...}
  nlohmann::json ToJson() const;
};

// One stretch of an iteration on the monotonic clock, for timelines and
// traces.
enum class SpanKind { kCompute, kDeviceWait, kPeerWait };
// "compute", "device wait", "peer wait".
const char* SpanKindName(SpanKind kind);
struct Span {
  double start = 0, end = 0;  // seconds, the record's clock
  SpanKind kind = SpanKind::kCompute;
  Phase phase = Phase::kLoad;
};
// The spans of one iteration from its record as ToJson writes it: its
// phases one after another from `start`, each drawn as its wait for the
// device, then its compute, then its waits on peers (a communication
// phase is all waits). The record gives each phase's totals, not their
// order inside the phase, so that order is a convention. Empty spans are
// left out; so is a record without a start (written before records had one).
std::vector<Span> SpansOfRecord(const nlohmann::json& record);

// The iteration records of a file as --records-out writes it, in order
// (lines that are not iteration records are left out). NotFound naming the
// path when it cannot be opened.
absl::StatusOr<std::vector<nlohmann::json>> ReadIterationRecords(const std::string& path);
// Seconds an iteration waited for the device, over all its phases, from
// its record as ToJson writes it (0 for a record without device waits).
double DeviceWaitSeconds(const nlohmann::json& record);

}  // namespace strata

#endif  // STRATA_CORE_CONTROL_ITERATION_RECORD_H_
