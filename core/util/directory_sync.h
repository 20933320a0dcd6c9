// Durability of a directory's entries: after a rename, create or remove in
// a directory, the entry is on the disk only once the directory itself is
// synced.
#ifndef STRATA_CORE_UTIL_DIRECTORY_SYNC_H_
#define STRATA_CORE_UTIL_DIRECTORY_SYNC_H_

#include <string>

namespace strata {

// Flushes the directory that holds `path` (a file just renamed into it,
// created or removed) to the disk; best effort.
void SyncDirectoryOf(const std::string& path);

}  // namespace strata

#endif  // STRATA_CORE_UTIL_DIRECTORY_SYNC_H_
