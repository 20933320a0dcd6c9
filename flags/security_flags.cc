#include "absl/flags/flag.h"
#include "core/net/admission.h"
#include "core/net/connection_security.h"
#include "core/net/curve.h"
#include "core/status.h"
#include "core/util/log.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(std::string, curve_keys, "",
          "encrypt and authenticate every connection with ZeroMQ CURVE, with the keys in this "
          "directory (strata_keygen makes it: server.key/.pub, NAME.key, authorized_keys)");
ABSL_FLAG(std::string, curve_client, "client",
          "with --curve-keys: the client key this process presents (DIR/NAME.key)");
ABSL_FLAG(bool, insecure, false,
          "serving roles: serve an address other than loopback without a job token (anyone who "
          "reaches it may then join the job)");

namespace strata {

std::string CurveKeysDirFromFlags() { return absl::GetFlag(FLAGS_curve_keys); }

bool InsecureFromFlags() { return absl::GetFlag(FLAGS_insecure); }

absl::Status InstallConnectionSecurityFromFlags() {
  ConnectionSecurity security;
  STRATA_ASSIGN_OR_RETURN(security.token, LoadJobToken(JobTokenFileFromFlags()));
  security.insecure = absl::GetFlag(FLAGS_insecure);
  const std::string dir = absl::GetFlag(FLAGS_curve_keys);
  if (!dir.empty()) {
    absl::StatusOr<CurveKeys> keys = LoadCurveKeys(dir, absl::GetFlag(FLAGS_curve_client));
    if (!keys.ok()) return WithContext(keys.status(), "--curve-keys");
    LogInfo("CURVE: every connection encrypted; presenting key \"%s\" of %s%s",
            keys->client_name.c_str(), dir.c_str(),
            keys->server.has_value()
                ? absl::StrCat("; admitting ", keys->authorized.size(), " listed key(s)").c_str()
                : "");
    security.curve = std::make_shared<const CurveKeys>(*std::move(keys));
  }
  InstallConnectionSecurity(std::move(security));
  return absl::OkStatus();
}

}  // namespace strata
