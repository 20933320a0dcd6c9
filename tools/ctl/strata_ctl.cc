// strata_ctl: shows and changes a running job's runtime knobs through its
// coordinator (server 0). A change is scheduled by the coordinator from an
// iteration no process of the job has started, and every process applies
// it at that iteration boundary (server/knob_board.h).
//
//   strata_ctl --coordinator tcp://HOST:PORT [--job-id 1] get
//   strata_ctl --coordinator tcp://HOST:PORT set moe.pipeline_chunks=4 [name=value ...]
//              [--from-iteration N]
//
// The job token comes from --job-token-file or $STRATA_JOB_TOKEN, as for
// every other process of the job; `set` also takes the admin token the
// servers were given (--admin-token-file or $STRATA_ADMIN_TOKEN). Exit
// status 0 on success; 1 with the coordinator's reason on a refusal
// (unknown knob, a value it does not accept, a knob no process of the job
// applies, no admin token); 2 on a usage error.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "core/net/admission.h"
#include "core/net/connection_security.h"
#include "core/net/knob_messages.h"
#include "core/net/transport.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "flags/cluster_flags.h"
#include "startup/program_startup.h"

ABSL_FLAG(int64_t, from_iteration, -1,
          "set: the iteration the change takes effect at (refused if a process may have started "
          "it); -1: the earliest iteration no process may have started");

namespace strata {
namespace {

struct Usage {
  std::string message;
};

absl::StatusOr<IncomingMessage> Ask(Socket& socket, OutgoingMessage& request, uint64_t id,
                                    absl::Duration timeout) {
  request.header().setRequestId(id);
  STRATA_RETURN_IF_ERROR(socket.Send(request));
  const absl::Time deadline = MonotonicNow() + timeout;
  while (MonotonicNow() < deadline) {
    absl::StatusOr<RawMessage> raw = socket.Receive(deadline - MonotonicNow());
    if (!raw.ok()) break;
    STRATA_ASSIGN_OR_RETURN(IncomingMessage reply, Decode(*std::move(raw), WireLimits()));
    if (reply.header().getRequestId() != id) continue;
    if (TypeOf(reply.header()) == wire::Kind::ERROR) return ErrorFromHeader(reply.header());
    return reply;
  }
  return absl::DeadlineExceededError(
      absl::StrCat("no answer from the coordinator within ", absl::FormatDuration(timeout)));
}

absl::StatusOr<std::vector<KnobProposal>> ParseAssignments(const std::vector<std::string>& args) {
  std::vector<KnobProposal> out;
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string a = args[i];
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size()) {
      return absl::InvalidArgumentError(absl::StrCat("\"", a, "\" is not name=value"));
    }
    out.push_back({a.substr(0, eq), a.substr(eq + 1)});
  }
  if (out.empty()) return absl::InvalidArgumentError("set needs at least one name=value");
  return out;
}

int Run(const std::vector<std::string>& args) {
  const absl::StatusOr<JobAddressFlags> job = JobAddressFromFlags();
  if (!job.ok()) {
    std::fprintf(stderr, "strata_ctl: %s\n", std::string(job.status().message()).c_str());
    return 2;
  }
  const std::string address = job->coordinator;
  const std::string command = args.size() > 1 ? args[1] : "";
  if (address.empty() || (command != "get" && command != "set")) {
    std::fprintf(stderr,
                 "usage: strata_ctl --coordinator ADDR [--job-id ID] get | set NAME=VALUE... "
                 "[--from-iteration N]\n");
    return 2;
  }
  std::vector<KnobProposal> proposals;
  if (command == "set") {
    absl::StatusOr<std::vector<KnobProposal>> parsed = ParseAssignments(args);
    if (!parsed.ok()) {
      std::fprintf(stderr, "strata_ctl: %s\n", std::string(parsed.status().message()).c_str());
      return 2;
    }
    proposals = *std::move(parsed);
  }
  const absl::Duration timeout = TimeoutFromFlags();
  auto fail = [](const absl::Status& s) {
    std::fprintf(stderr, "strata_ctl: %s\n", std::string(s.message()).c_str());
    return 1;
  };
  JobCredentials credentials;
  credentials.job_id = job->job_id;
  if (absl::Status security = InstallConnectionSecurityFromFlags(); !security.ok()) {
    return fail(security);
  }
  credentials.token = ProcessConnectionSecurity().token;
  if (command == "set") {  // looking at the knobs takes the job token alone
    absl::StatusOr<std::string> admin = AdminTokenFromFlags();
    if (!admin.ok()) return fail(admin.status());
    credentials.admin_token = *admin;
  }
  zmq::context_t context(1);
  absl::StatusOr<std::unique_ptr<Socket>> socket =
      Socket::Connect(context, SocketKind::kDealer, address, WireLimits());
  if (!socket.ok()) return fail(socket.status());
  absl::Status hello = Introduce(**socket, credentials, wire::Role::TOOL, -1,
                                 absl::StrCat("the coordinator ", address), timeout)
                           .status();
  if (!hello.ok()) return fail(hello);

  OutgoingMessage request(command == "get" ? wire::knob::Kind::KNOB_GET
                                           : wire::knob::Kind::KNOB_SET);
  request.header().setJobId(credentials.job_id);
  request.header().setSenderRole(wire::Role::TOOL);
  request.header().setSenderRank(-1);
  if (command == "set") {
    SetKnobProposals(request.header(), proposals);
    request.header().setIteration(absl::GetFlag(FLAGS_from_iteration));
  }
  absl::StatusOr<IncomingMessage> reply = Ask(**socket, request, 1, timeout);
  if (!reply.ok()) return fail(reply.status());
  if (command == "set") {
    for (const KnobChange& c : KnobChangesOf(reply->header())) {
      std::printf("%s=%s from iteration %lld\n", c.name.c_str(), c.value.c_str(),
                  static_cast<long long>(c.from_iteration));
    }
    return 0;
  }
  const std::vector<KnobState> knobs = KnobStatesOf(reply->header());
  if (knobs.empty()) std::printf("(the job's processes declare no knobs yet)\n");
  for (const KnobState& k : knobs) {
    std::printf("%s=%s %s%s\n", k.name.c_str(), k.value.c_str(),
                k.since == kKnobStart ? "(since the start)"
                                      : absl::StrCat("(from iteration ", k.since, ")").c_str(),
                k.alters_math ? " [changes the math]" : "");
  }
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  const strata::ProgramArguments args = strata::StartProgram(
      argc, argv,
      "Shows or changes a running job's knobs.\n  strata_ctl --coordinator ADDR [--job-id ID] "
      "get\n  strata_ctl --coordinator ADDR [--job-id ID] set NAME=VALUE...");
  return strata::Run(args.positional);
}
