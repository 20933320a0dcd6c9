// Process-wide settings every Strata binary applies first thing in main().
#ifndef STRATA_CORE_PROCESS_PROCESS_SETUP_H_
#define STRATA_CORE_PROCESS_PROCESS_SETUP_H_

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

// Flushes subnormal floats to zero (x86's FTZ and DAZ) in the calling
// thread and every thread it starts afterwards (they inherit the setting):
// as training goes on, momentum buffers and small gradients decay into
// subnormals, and every arithmetic operation on one then takes the slow
// microcode path (a server's optimizer step took some ten times longer
// after a few hundred iterations). Values below 1.2e-38 become 0, as
// PyTorch's set_flush_denormal(True) makes them. Call first thing in
// main(), before any thread starts; elsewhere than on x86 it does nothing.
// Set STRATA_FLUSH_SUBNORMALS=0 to keep them.
void ConfigureFloatingPoint();

// What main() returns for `status`: 0 when it is OK; else 1, after one line
// on stderr, "PROGRAM: error: MESSAGE".
int ExitCodeFor(const std::string& program, const absl::Status& status);

}  // namespace strata

#endif  // STRATA_CORE_PROCESS_PROCESS_SETUP_H_
