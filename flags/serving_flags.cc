#include "absl/flags/flag.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(std::string, bind, "",
          "where this process serves: tcp://HOST:PORT (port 0: any free port), "
          "tcp://HOST:FIRST-LAST (the first free port of the range; each socket of the process "
          "takes one), HOST 0.0.0.0 or * for every IPv4 interface, [::] for IPv6 too, or "
          "ipc://PATH (ipc://*: a fresh Unix socket). Default: tcp://127.0.0.1:0; server 0: "
          "the --coordinator address");
ABSL_FLAG(std::string, advertise, "",
          "the host (name or address) peers dial to reach this process, with the bound port "
          "(default: the bound host; for a wildcard bind this machine's host name; server 0: "
          "the --coordinator host)");
ABSL_FLAG(std::string, bind_interface, "",
          "bind on this network interface's address (eth0, ib0; like NCCL_SOCKET_IFNAME) and "
          "advertise it unless --advertise says otherwise");

namespace strata {

ServingAddress ServingAddressFromFlags() {
  ServingAddress a;
  a.bind = absl::GetFlag(FLAGS_bind);
  a.advertise = absl::GetFlag(FLAGS_advertise);
  a.interface = absl::GetFlag(FLAGS_bind_interface);
  return a;
}

}  // namespace strata
