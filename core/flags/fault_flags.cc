#include <cstdlib>
#include <mutex>

#include "absl/flags/flag.h"
#include "core/flags/cluster_flags.h"
#include "core/status.h"
#include "core/util/log.h"

ABSL_FLAG(std::string, inject_faults, "",
          "fault injection on what this process receives, for tests and chaos runs: "
          "drop=P,truncate=P,duplicate=P,delay=P,delay_ms=MS,reorder=P,seed=S "
          "(core/net/fault_injection.h); \"\": none");

namespace strata {

FaultCounts& InjectedFaults() {
  static FaultCounts* const counts = new FaultCounts;  // never destroyed: read at exit
  return *counts;
}

absl::StatusOr<FaultRates> FaultRatesFromFlags() {
  absl::StatusOr<FaultRates> rates = ParseFaultRates(absl::GetFlag(FLAGS_inject_faults));
  if (!rates.ok()) return WithContext(rates.status(), "--inject-faults");
  if (rates->any()) {
    LogWarning("injecting faults into what this process receives: %s",
               absl::GetFlag(FLAGS_inject_faults).c_str());
    static std::once_flag report_at_exit;
    std::call_once(report_at_exit, [] {
      std::atexit([] {
        const FaultCounts& c = InjectedFaults();
        // A launcher only hands the flag on: nothing passed through it.
        if (c.delivered.load() + c.dropped.load() == 0) return;
        LogInfo("faults injected: %s", c.Summary().c_str());
      });
    });
  }
  return rates;
}

}  // namespace strata
