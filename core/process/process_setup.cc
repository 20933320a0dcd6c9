#include "core/process/process_setup.h"

#include <malloc.h>

#if defined(__x86_64__) || defined(__i386__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

#include <cstdio>

#include "core/util/env.h"

namespace strata {

void ConfigureProcessAllocator() {
  if (EnvInt("STRATA_MALLOC_TUNING", 1) == 0) return;
  mallopt(M_MMAP_THRESHOLD, 1 << 30);  // fixed: also stops the dynamic threshold
  mallopt(M_TRIM_THRESHOLD, -1);       // never trim the heap top
  mallopt(M_ARENA_MAX, 1);             // one heap: other threads' arenas shrink and refault
}

void ConfigureFloatingPoint() {
  if (EnvInt("STRATA_FLUSH_SUBNORMALS", 1) == 0) return;
#if defined(__x86_64__) || defined(__i386__)
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif
}

int ExitCodeFor(const std::string& program, const absl::Status& status) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), std::string(status.message()).c_str());
  return 1;
}

}  // namespace strata
