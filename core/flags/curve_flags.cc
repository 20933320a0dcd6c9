#include "absl/flags/flag.h"
#include "core/flags/cluster_flags.h"
#include "core/net/curve.h"
#include "core/status.h"
#include "core/util/log.h"

ABSL_FLAG(std::string, curve_keys, "",
          "encrypt and authenticate every connection with ZeroMQ CURVE, with the keys in this "
          "directory (strata_keygen makes it: server.key/.pub, NAME.key, authorized_keys)");
ABSL_FLAG(std::string, curve_client, "client",
          "with --curve-keys: the client key this process presents (DIR/NAME.key)");

namespace strata {

std::string CurveKeysDirFromFlags() { return absl::GetFlag(FLAGS_curve_keys); }

absl::Status InstallCurveFromFlags() {
  const std::string dir = absl::GetFlag(FLAGS_curve_keys);
  if (dir.empty()) return absl::OkStatus();
  absl::StatusOr<CurveKeys> keys = LoadCurveKeys(dir, absl::GetFlag(FLAGS_curve_client));
  if (!keys.ok()) return WithContext(keys.status(), "--curve-keys");
  LogInfo("CURVE: every connection encrypted; presenting key \"%s\" of %s%s",
          keys->client_name.c_str(), dir.c_str(),
          keys->server.has_value()
              ? absl::StrCat("; admitting ", keys->authorized.size(), " listed key(s)").c_str()
              : "");
  InstallProcessCurve(std::make_shared<const CurveKeys>(*std::move(keys)));
  return absl::OkStatus();
}

}  // namespace strata
