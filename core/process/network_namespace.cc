#include "core/process/network_namespace.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>

namespace strata {

int EnterNetworkNamespace(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int rc = ::setns(fd, CLONE_NEWNET);
  const int err = rc == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

}  // namespace strata
