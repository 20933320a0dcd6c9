#include "absl/flags/flag.h"
#include "core/net/admission.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(std::string, admin_token_file, "",
          "file whose first line is the admin token (mode 600), which shutting a job down and "
          "changing its knobs from a tool take; default: $STRATA_ADMIN_TOKEN. Workers never get "
          "it");

namespace strata {

absl::StatusOr<std::string> AdminTokenFromFlags() {
  return LoadAdminToken(absl::GetFlag(FLAGS_admin_token_file));
}

std::string AdminTokenFileFromFlags() { return absl::GetFlag(FLAGS_admin_token_file); }

}  // namespace strata
