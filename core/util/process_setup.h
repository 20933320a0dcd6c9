// Process-wide settings every Strata binary applies first thing in main().
#ifndef STRATA_CORE_UTIL_PROCESS_SETUP_H_
#define STRATA_CORE_UTIL_PROCESS_SETUP_H_

#include <string>

#include "absl/status/status.h"

namespace strata {

// Keeps glibc's malloc from returning large blocks to the OS on free and
// page-faulting them back on the next allocation: ZeroMQ allocates every
// received message with malloc, and a multi-MiB message per iteration would
// otherwise cost a page fault per 4 KiB (the ps-lite collapse above 32 MiB).
// Large blocks then come from the heap and are reused; the heap is not
// trimmed. Tensors use Strata's own caching allocator regardless. Set
// STRATA_MALLOC_TUNING=0 to keep glibc's defaults.
void ConfigureProcessAllocator();

// What main() returns for `status`: 0 when it is OK; else 1, after one line
// on stderr, "PROGRAM: error: MESSAGE".
int ExitCodeFor(const std::string& program, const absl::Status& status);

}  // namespace strata

#endif  // STRATA_CORE_UTIL_PROCESS_SETUP_H_
