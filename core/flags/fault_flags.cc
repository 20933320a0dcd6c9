#include "absl/flags/flag.h"
#include "core/flags/cluster_flags.h"
#include "core/status.h"
#include "core/util/log.h"

ABSL_FLAG(std::string, inject_faults, "",
          "fault injection on what this process receives, for tests and chaos runs: "
          "drop=P,truncate=P,duplicate=P,delay=P,delay_ms=MS,reorder=P,seed=S "
          "(core/net/fault_injection.h); \"\": none");

namespace strata {

absl::StatusOr<FaultRates> FaultRatesFromFlags() {
  absl::StatusOr<FaultRates> rates = ParseFaultRates(absl::GetFlag(FLAGS_inject_faults));
  if (!rates.ok()) return WithContext(rates.status(), "--inject-faults");
  if (rates->any()) {
    LogWarning("injecting faults into what this process receives: %s",
               absl::GetFlag(FLAGS_inject_faults).c_str());
  }
  return rates;
}

}  // namespace strata
