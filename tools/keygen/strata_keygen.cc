// strata_keygen: makes the ZeroMQ CURVE keys of a Strata cluster
// (core/net/curve.h), for --curve-keys.
//
//   strata_keygen --keys DIR --jobs 1            # DIR/server.key, server.pub, client.key
//   strata_keygen --keys DIR --jobs 2 --client b # another client key, admitted for job 2
//
// The first call makes the serving key pair (every server and FC worker
// presents it) and, each call, a client key pair NAME.key that
// authorized_keys admits for the jobs given. Secrets are written mode 600
// in a directory of mode 700; a client key that exists is never replaced.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "core/net/curve.h"
#include "core/process/process_setup.h"
#include "core/status.h"
#include "startup/program_startup.h"

ABSL_FLAG(std::string, keys, "", "the key directory (made when missing)");
ABSL_FLAG(std::string, jobs, "1", "the job ids the new client key may speak for, comma-separated");
ABSL_FLAG(std::string, client, "client", "the new client key's name (DIR/NAME.key)");

namespace strata {
namespace {

absl::Status Run() {
  const std::string dir = absl::GetFlag(FLAGS_keys);
  const std::string name = absl::GetFlag(FLAGS_client);
  if (dir.empty()) return absl::InvalidArgumentError("--keys DIR is required");
  if (name.empty() || name == "server" || name.find_first_of("/ \t#") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--client \"", name, "\": one word other than \"server\", without '/' or '#'"));
  }
  AuthorizedKey admitted;
  admitted.name = name;
  absl::StatusOr<std::vector<uint64_t>> jobs = ParseJobList(absl::GetFlag(FLAGS_jobs));
  if (!jobs.ok()) return WithContext(jobs.status(), "--jobs");
  admitted.jobs = *jobs;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::UnavailableError(absl::StrCat("cannot make ", dir, ": ", error.message()));
  if (::chmod(dir.c_str(), 0700) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot make ", dir, " private: ", std::strerror(errno)));
  }
  const std::string server_key = dir + "/server.key";
  if (!std::filesystem::exists(server_key)) {
    STRATA_ASSIGN_OR_RETURN(CurveKeyPair server, NewCurveKeyPair());
    STRATA_RETURN_IF_ERROR(WriteKeyFile(server_key, server, /*with_secret=*/true));
    STRATA_RETURN_IF_ERROR(WriteKeyFile(dir + "/server.pub", server, /*with_secret=*/false));
    std::printf("made the serving key pair %s (servers and FC workers present it) and %s/server.pub\n",
                server_key.c_str(), dir.c_str());
  }
  const std::string client_key = absl::StrCat(dir, "/", name, ".key");
  if (std::filesystem::exists(client_key)) {
    return absl::AlreadyExistsError(
        absl::StrCat(client_key, " exists; pick another --client name"));
  }
  STRATA_ASSIGN_OR_RETURN(CurveKeyPair client, NewCurveKeyPair());
  STRATA_RETURN_IF_ERROR(WriteKeyFile(client_key, client, /*with_secret=*/true));
  admitted.public_key = client.public_key;
  STRATA_RETURN_IF_ERROR(AppendAuthorizedKey(dir + "/authorized_keys", admitted));
  std::printf("made client key %s, admitted for job(s) %s in %s/authorized_keys\n",
              client_key.c_str(), absl::GetFlag(FLAGS_jobs).c_str(), dir.c_str());
  return absl::OkStatus();
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  strata::StartProgram(
      argc, argv,
      "Makes ZeroMQ CURVE keys for a Strata cluster.\n  strata_keygen --keys DIR [--jobs 1,2] "
      "[--client NAME]");
  return strata::ExitCodeFor("strata_keygen", strata::Run());
}
