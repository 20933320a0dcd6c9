#include <cstdlib>
#include <mutex>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/status.h"
#include "core/util/log.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(std::string, inject_faults, "",
          "fault injection on what this process receives, for tests and chaos runs: "
          "drop=P,truncate=P,duplicate=P,delay=P,delay_ms=MS,reorder=P,seed=S, and partitions "
          "between named processes: cut=conv0:server1@3s+5s (both ways), "
          "cut=server0>fc0@3s (one way, lasting), silence=fc0@2s+4s; "
          "singled-out losses: lose=fc1>conv1:activation-grads@90x4 (the first 4 of "
          "that kind, sender, receiver and iteration) (core/net/fault_injection.h); \"\": none");

namespace strata {

FaultCounts& InjectedFaults() {
  static FaultCounts* const counts = new FaultCounts;  // never destroyed: read at exit
  return *counts;
}

absl::StatusOr<FaultRates> FaultRatesFromFlags(const std::string& self) {
  absl::StatusOr<FaultRates> rates = ParseFaultRates(absl::GetFlag(FLAGS_inject_faults));
  if (!rates.ok()) return WithContext(rates.status(), "--inject-faults");
  rates->self = self;
  if (rates->origin == absl::InfinitePast()) rates->origin = absl::Now();
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

std::string FaultSpecToHandOn() {
  const std::string spec = absl::GetFlag(FLAGS_inject_faults);
  absl::StatusOr<FaultRates> rates = ParseFaultRates(spec);
  if (!rates.ok() || rates->cuts.empty() || rates->origin != absl::InfinitePast()) return spec;
  return absl::StrCat(spec, ",origin_ms=", absl::ToUnixMillis(absl::Now()));
}

}  // namespace strata
