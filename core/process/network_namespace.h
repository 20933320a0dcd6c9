// Entering a network namespace (Linux), for emulated cluster networks.
#ifndef STRATA_CORE_PROCESS_NETWORK_NAMESPACE_H_
#define STRATA_CORE_PROCESS_NETWORK_NAMESPACE_H_

namespace strata {

// Moves the calling thread into the network namespace at `path` (for
// example /run/netns/NAME); sockets it opens afterwards live there, and a
// program it execs starts there. Returns 0, or the errno of the failed
// open/setns. Async-signal-safe, so a forked child may call it before exec.
int EnterNetworkNamespace(const char* path);

}  // namespace strata

#endif  // STRATA_CORE_PROCESS_NETWORK_NAMESPACE_H_
