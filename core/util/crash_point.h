// Crash points: named places where a chaos test kills a process, to see
// what a crash at exactly that moment leaves behind (a half-written
// checkpoint part, a manifest written but not yet in place, a prune half
// done, a restore half loaded). Users never set it; unset, a crash point
// costs one getenv.
//
//   STRATA_CRASH_AT=NAME[#N]:PROGRAM:MARKER
//
// The N-th time (default the first) that a process of PROGRAM (the base
// name of its executable: strata_server, strata_fc_worker, ...) reaches
// crash point NAME, it creates the file MARKER and kills itself with
// SIGKILL, as a power cut or the OOM killer would. Where MARKER exists
// already (O_EXCL), nothing happens: one crash per marker, so the job that
// a launcher restarts runs on, and the test can see that the crash
// happened. A malformed value is ignored with one warning.
//
// The points (each where it is called):
//   part-write          WriteCheckpoint: half of a part written to its
//                       temporary file
//   rename:FILE         WriteJsonFile: FILE (a base name, e.g.
//                       MANIFEST.json) written to its temporary file and
//                       synced, not yet renamed into place
//   prune               PruneEpochs: an epoch's manifest removed, its
//                       parts not yet
//   restore             a server or FC worker: its part read, not yet
//                       loaded
#ifndef STRATA_CORE_UTIL_CRASH_POINT_H_
#define STRATA_CORE_UTIL_CRASH_POINT_H_

#include "absl/strings/string_view.h"

namespace strata {

void CrashPoint(absl::string_view name);

}  // namespace strata

#endif  // STRATA_CORE_UTIL_CRASH_POINT_H_
