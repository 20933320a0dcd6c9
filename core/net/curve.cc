#include "core/net/curve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <zmq.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status.h"

namespace strata {
namespace {

constexpr size_t kZ85KeyLength = 40;

bool IsZ85Key(const std::string& key) {
  if (key.size() != kZ85KeyLength) return false;
  uint8_t decoded[32];
  return zmq_z85_decode(decoded, key.c_str()) != nullptr;
}

absl::Status CheckPrivate(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "%s is readable by others (mode %04o); chmod 600 it", path, st.st_mode & 0777));
  }
  return absl::OkStatus();
}

std::string JobList(const std::vector<uint64_t>& jobs) { return absl::StrJoin(jobs, ","); }

}  // namespace

absl::StatusOr<std::vector<uint64_t>> ParseJobList(const std::string& text) {
  std::vector<uint64_t> jobs;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    uint64_t job = 0;
    if (!absl::SimpleAtoi(part, &job) || job == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", text, "\" is not a list of job ids >= 1 (like 1,2)"));
    }
    jobs.push_back(job);
  }
  return jobs;
}

absl::StatusOr<CurveKeyPair> NewCurveKeyPair() {
  char public_key[kZ85KeyLength + 1] = {};
  char secret_key[kZ85KeyLength + 1] = {};
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot make a CURVE key pair: ", zmq_strerror(zmq_errno()),
                     " (this libzmq has no CURVE support)"));
  }
  return CurveKeyPair{public_key, secret_key};
}

absl::Status WriteKeyFile(const std::string& path, const CurveKeyPair& pair, bool with_secret) {
  std::string text = with_secret ? "# A Strata CURVE key pair (ZeroMQ Z85). Keep it secret.\n"
                                 : "# The public half of a Strata CURVE key pair (ZeroMQ Z85).\n";
  absl::StrAppend(&text, "public = ", pair.public_key, "\n");
  if (with_secret) absl::StrAppend(&text, "secret = ", pair.secret_key, "\n");
  // The file is private before the secret is in it.
  const mode_t mode = with_secret ? 0600 : 0644;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  bool ok = fd >= 0 && ::fchmod(fd, mode) == 0 &&
            ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int error = errno;
  if (fd >= 0) ok = ::close(fd) == 0 && ok;
  if (!ok) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

absl::StatusOr<CurveKeyPair> ReadKeyFile(const std::string& path, bool with_secret) {
  if (with_secret) STRATA_RETURN_IF_ERROR(CheckPrivate(path));
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  CurveKeyPair pair;
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text.front() == '#') continue;
    const std::vector<std::string> parts = absl::StrSplit(text, absl::MaxSplits('=', 1));
    const std::string field(absl::StripAsciiWhitespace(parts[0]));
    const std::string value(parts.size() > 1 ? absl::StripAsciiWhitespace(parts[1]) : "");
    if (field == "public") {
      pair.public_key = value;
    } else if (field == "secret") {
      pair.secret_key = value;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": unknown line \"", text, "\" (public = ..., secret = ...)"));
    }
  }
  if (!IsZ85Key(pair.public_key)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no public key of 40 Z85 characters"));
  }
  if (with_secret && !IsZ85Key(pair.secret_key)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no secret key of 40 Z85 characters"));
  }
  return pair;
}

absl::StatusOr<std::vector<AuthorizedKey>> ReadAuthorizedKeys(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::vector<AuthorizedKey> keys;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text.front() == '#') continue;
    const std::vector<std::string> parts =
        absl::StrSplit(text, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    AuthorizedKey key;
    absl::StatusOr<std::vector<uint64_t>> jobs = ParseJobList(parts[0]);
    if (parts.size() < 2 || !jobs.ok() || !IsZ85Key(parts[1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", number, ": expected \"JOBS PUBLIC-KEY [NAME]\" (JOBS like 1,2; a key of 40 "
          "Z85 characters), got \"", text, "\""));
    }
    key.jobs = *jobs;
    key.public_key = parts[1];
    key.name = parts.size() > 2 ? parts[2] : absl::StrCat("line ", number);
    keys.push_back(std::move(key));
  }
  return keys;
}

absl::Status AppendAuthorizedKey(const std::string& path, const AuthorizedKey& key) {
  if (key.name.empty() || key.name.find_first_of(" \t\n#") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("a key's name is one word without '#', not \"", key.name, "\""));
  }
  std::ofstream out(path, std::ios::app);
  out << JobList(key.jobs) << " " << key.public_key << " " << key.name << "\n";
  out.close();
  if (!out) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<CurveKeys> LoadCurveKeys(const std::string& dir, const std::string& client_name) {
  CurveKeys keys;
  keys.dir = dir;
  keys.client_name = client_name;
  STRATA_ASSIGN_OR_RETURN(CurveKeyPair server_public,
                          ReadKeyFile(dir + "/server.pub", /*with_secret=*/false));
  keys.server_public = server_public.public_key;
  STRATA_ASSIGN_OR_RETURN(keys.client,
                          ReadKeyFile(absl::StrCat(dir, "/", client_name, ".key"), true));
  const std::string server_key = dir + "/server.key";
  if (std::ifstream(server_key).good()) {
    STRATA_ASSIGN_OR_RETURN(CurveKeyPair server, ReadKeyFile(server_key, true));
    if (server.public_key != keys.server_public) {
      return absl::InvalidArgumentError(
          absl::StrCat(server_key, " and ", dir, "/server.pub hold different keys"));
    }
    keys.server = server;
  }
  const std::string authorized = dir + "/authorized_keys";
  if (std::ifstream(authorized).good()) {
    STRATA_ASSIGN_OR_RETURN(keys.authorized, ReadAuthorizedKeys(authorized));
  }
  return keys;
}

std::optional<std::string> AdmittedCurveUser(const CurveKeys& keys,
                                             const std::string& public_key) {
  for (const AuthorizedKey& key : keys.authorized) {
    if (key.public_key == public_key) {
      return absl::StrCat("jobs=", JobList(key.jobs), " name=", key.name);
    }
  }
  return std::nullopt;
}

std::optional<CurvePeer> ParseCurveUserId(const std::string& user_id) {
  CurvePeer peer;
  bool has_jobs = false;
  for (absl::string_view part : absl::StrSplit(user_id, ' ', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&part, "jobs=")) {
      absl::StatusOr<std::vector<uint64_t>> jobs = ParseJobList(std::string(part));
      if (!jobs.ok()) return std::nullopt;
      peer.jobs = *jobs;
      has_jobs = true;
    } else if (absl::ConsumePrefix(&part, "name=")) {
      peer.name = std::string(part);
    }
  }
  if (!has_jobs) return std::nullopt;
  return peer;
}

}  // namespace strata
