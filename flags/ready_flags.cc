#include "absl/flags/flag.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(std::string, ready_file, "",
          "once serving, write {\"role\",\"rank\",\"address\",...} as JSON to this file "
          "(how launchers learn the address)");

namespace strata {

std::string ReadyFileFromFlags() { return absl::GetFlag(FLAGS_ready_file); }

}  // namespace strata
