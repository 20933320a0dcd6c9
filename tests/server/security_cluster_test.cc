// Strangers get nothing in: each test here makes one attack on real
// processes and checks that it changes nothing and is refused by name.
//
//   * a ZeroMQ peer that chooses a shared-memory lane's identity as its
//     routing id (and holds the job token) cannot speak for the lane's
//     worker: the job ends with the undisturbed run's parameters;
//   * a stranger without the job token that sends a server one message of
//     24 frames of 128 MiB gets none of it buffered there;
//   * a serving role will not serve beyond loopback without a token, and
//     size flags that make no sense are refused;
//   * shutting a job down and changing its knobs take the admin token,
//     which no worker is given;
//   * a refusal never tells a peer this side's config values, and junk
//     cannot flood a server's log;
//   * a worker will not share memory through a lane that another user's
//     process serves.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <zmq.hpp>

#include "absl/strings/str_cat.h"
#include "core/net/admission.h"
#include "core/net/connection_security.h"
#include "core/net/knob_messages.h"
#include "core/net/lane_socket.h"
#include "core/net/message_endpoint.h"
#include "core/net/ps_wire.h"
#include "core/net/transport.h"
#include "core/util/log.h"
#include "tests/support/cluster_fixture.h"
#include "tests/support/requirements.h"

namespace strata {
namespace {

using testing::kBin;
using testing::kConfig;
using testing::Process;
using testing::ReadFile;
using testing::RunCommand;

// A key-0 slice of the default config: conv1's 288 weights.
constexpr uint32_t kKey0Elements = 288;

class SecurityClusterTest : public testing::ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    WriteTokens("security-test-token");
  }
  void TearDown() override {
    InstallConnectionSecurity({});
    ClusterTest::TearDown();
  }
  std::string Token() const { return "security-test-token"; }
  // strata_launch of a ps job of `steps` steps on plain SGD, 1 server and 2
  // conv workers, with the tokens, then `extra`.
  std::vector<std::string> Launch(int steps, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {kBin + "strata_launch",
                                     "--config",
                                     PlainSgdConfig(),
                                     "--mode",
                                     "ps",
                                     "--servers",
                                     "1",
                                     "--conv-workers",
                                     "2",
                                     "--max-steps",
                                     std::to_string(steps),
                                     "--evaluate=false",
                                     "--progress=false",
                                     "--job-token-file",
                                     dir_ + "/token",
                                     "--admin-token-file",
                                     dir_ + "/admin_token"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  // This process's sockets present the job token from now on.
  void PresentTheJobToken() const {
    ConnectionSecurity security;
    security.token = Token();
    InstallConnectionSecurity(security);
  }
};

// Stamps `h` as sent by conv worker `rank` of job 1.
void FromWorker(wire::Header::Builder h, int rank) {
  h.setJobId(1);
  h.setSenderRole(wire::Role::CONV_WORKER);
  h.setSenderRank(rank);
}

// Sends `message` as raw frames (header, then `frames`) on `socket`.
void SendRaw(zmq::socket_t& socket, OutgoingMessage& message,
             const std::vector<std::string>& frames = {}) {
  const std::string header = message.SerializedHeaderForTest();
  socket.send(zmq::buffer(header), frames.empty()
                                       ? zmq::send_flags::dontwait
                                       : zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  for (size_t i = 0; i < frames.size(); ++i) {
    socket.send(zmq::buffer(frames[i]), i + 1 < frames.size()
                                            ? zmq::send_flags::sndmore | zmq::send_flags::dontwait
                                            : zmq::send_flags::dontwait);
  }
}

// The error texts of every reply waiting on `socket`.
std::vector<std::string> Refusals(zmq::socket_t& socket) {
  std::vector<std::string> errors;
  while (true) {
    RawMessage raw;
    zmq::message_t frame;
    if (!socket.recv(frame, zmq::recv_flags::dontwait)) break;
    bool more = frame.more();
    raw.frames.push_back(std::move(frame));
    while (more) {
      zmq::message_t next;
      (void)socket.recv(next, zmq::recv_flags::none);
      more = next.more();
      raw.frames.push_back(std::move(next));
    }
    absl::StatusOr<IncomingMessage> reply = Decode(std::move(raw), WireLimits());
    if (reply.ok() && IsRefusal(reply->header())) {
      errors.push_back(reply->header().getErrorMessage().cStr());
    }
  }
  return errors;
}

// The peak resident memory (VmHWM) of process `pid`, in MiB: the last
// reading before it exits, polled until then.
double PeakResidentMiB(pid_t pid) {
  double peak = 0;
  while (true) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    if (!status) return peak;
    std::string line;
    bool read = false;
    while (std::getline(status, line)) {
      if (line.rfind("VmHWM:", 0) == 0) {
        peak = std::stod(line.substr(6)) / 1024.0;
        read = true;
      }
    }
    if (!read) return peak;  // a zombie: its memory is gone
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// 1. Lanes are identified by the lane itself. A holder of the job token
// connects over ZeroMQ with routing ids that spell the workers' lanes (as
// libzmq 4.3 lets a peer choose, leading zero byte and all) and sends LEAVE
// for each worker and NaN pushes for every iteration: none of it is taken
// as a worker's, and the job computes what it computes undisturbed.
TEST_F(SecurityClusterTest, NoZeroMqPeerPassesForAWorkersSharedMemoryLane) {
  const int steps = 40;
  Process reference(Launch(steps, {"--parameters-out", dir_ + "/ref.ckpt"}), dir_ + "/ref.log");
  ASSERT_EQ(reference.Wait(), 0) << reference.log();

  Process run(Launch(steps, {"--parameters-out", dir_ + "/attacked.ckpt", "--ready-file",
                             dir_ + "/launch.ready"}),
              dir_ + "/run.log");
  const std::string coordinator = run.WaitForReady(dir_ + "/launch.ready");
  ASSERT_FALSE(coordinator.empty()) << run.log();
  PresentTheJobToken();
  zmq::context_t context(1);
  std::vector<zmq::socket_t> spoofers;
  for (int lane = 1; lane <= 4; ++lane) {
    for (const std::string& identity :
         {std::string(1, '\0') + "lane:" + std::to_string(lane),
          EndpointIdentity(EndpointKind::kLane, "lane:" + std::to_string(lane))}) {
      zmq::socket_t spoofer(context, zmq::socket_type::dealer);
      spoofer.set(zmq::sockopt::linger, 0);
      spoofer.set(zmq::sockopt::routing_id, zmq::buffer(identity));
      SecureClientSocket(spoofer);
      spoofer.connect(coordinator);
      spoofers.push_back(std::move(spoofer));
    }
  }
  const std::string nans(kKey0Elements * sizeof(float), '\xff');  // NaN bit patterns
  std::vector<std::string> refusals;
  while (!run.Exited()) {
    for (zmq::socket_t& spoofer : spoofers) {
      for (int rank = 0; rank < 2; ++rank) {  // whichever worker the lane is
        OutgoingMessage leave(wire::Kind::LEAVE);
        FromWorker(leave.header(), rank);
        leave.header().setErrorMessage("spoofed");
        SendRaw(spoofer, leave);
        for (int iteration = 0; iteration < steps; ++iteration) {
          OutgoingMessage push(wire::ps::Kind::PUSH);
          FromWorker(push.header(), rank);
          push.header().setIteration(iteration);
          auto slice = BodyOf<wire::ps::Body>(push.header()).initSlices(1)[0];
          slice.setKey(0);
          slice.setLength(kKey0Elements);
          push.header().initFrameBytes(1).set(0, nans.size());
          SendRaw(spoofer, push, {nans});
        }
      }
      for (std::string& e : Refusals(spoofer)) refusals.push_back(std::move(e));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(run.Wait(), 0) << run.log();
  EXPECT_EQ(MaxDifference(dir_ + "/ref.ckpt", dir_ + "/attacked.ckpt"), 0.0f);
  // The spoofers reached the server, which took them for strangers.
  ASSERT_FALSE(refusals.empty());
  for (const std::string& refusal : refusals) {
    EXPECT_NE(refusal.find(" from a connection that never said hello to server 0"),
              std::string::npos)
        << refusal;
  }
  EXPECT_EQ(run.log().find("stopped: spoofed"), std::string::npos) << run.log();
}

// 2. Authentication at the connection. A stranger without the job token
// sends server 0 one message of 24 frames of 128 MiB: its handshake fails,
// so ZeroMQ buffers none of it; the server's peak memory stays within
// 64 MiB of an undisturbed run's, and the job ends as that run does.
TEST_F(SecurityClusterTest, AStrangersHugeMessageIsNeverBuffered) {
  const int steps = 60;
  auto peak_of_run = [&](const std::string& name, bool attack) {
    Process run(Launch(steps, {"--parameters-out", dir_ + "/" + name + ".ckpt", "--ready-file",
                               dir_ + "/" + name + ".ready"}),
                dir_ + "/" + name + ".log");
    const std::string coordinator = run.WaitForReady(dir_ + "/" + name + ".ready");
    EXPECT_FALSE(coordinator.empty()) << run.log();
    const pid_t server = testing::FindStrataChild(run.pid(), "strata_server", 0);
    EXPECT_GT(server, 0) << run.log();
    std::atomic<bool> sent{false};
    std::atomic<bool> done{false};
    std::thread stranger;
    if (attack) {
      stranger = std::thread([&] {
        constexpr size_t kFrame = size_t{128} << 20;
        std::vector<char> bytes(kFrame, 'x');
        zmq::context_t context(1);
        zmq::socket_t socket(context, zmq::socket_type::dealer);  // no token: plain NULL
        socket.set(zmq::sockopt::linger, 0);
        socket.set(zmq::sockopt::immediate, 1);  // queue only on a connection that is up
        socket.connect(coordinator);
        while (!done.load() && !sent.load()) {
          // Sent only once a connection is up (never, when the handshake
          // is refused); the frames reference one buffer.
          zmq::message_t first(
              bytes.data(), bytes.size(), [](void*, void*) {}, nullptr);
          if (!socket.send(first, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            continue;
          }
          for (int i = 1; i < 24; ++i) {
            zmq::message_t frame(
                bytes.data(), bytes.size(), [](void*, void*) {}, nullptr);
            socket.send(frame, i + 1 < 24 ? zmq::send_flags::sndmore : zmq::send_flags::none);
          }
          sent.store(true);
        }
        while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      });
    }
    const double peak = server > 0 ? PeakResidentMiB(server) : 0;
    EXPECT_EQ(run.Wait(), 0) << run.log();
    done.store(true);
    if (stranger.joinable()) stranger.join();
    if (attack) {
      EXPECT_FALSE(sent.load()) << "the stranger's connection came up";
      EXPECT_NE(run.log().find("refused a connection to " + coordinator + ": "), std::string::npos)
          << run.log();
    }
    return peak;
  };
  const double undisturbed = peak_of_run("undisturbed", false);
  const double attacked = peak_of_run("attacked", true);
  EXPECT_LE(attacked, undisturbed + 64) << "peak resident MiB of server 0";
  EXPECT_EQ(MaxDifference(dir_ + "/undisturbed.ckpt", dir_ + "/attacked.ckpt"), 0.0f);
}

// 3. Secure defaults: no serving role serves beyond loopback without a
// token unless told --insecure; with a token but no CURVE it warns once;
// size flags that make no sense are refused.
TEST_F(SecurityClusterTest, NoRoleServesBeyondLoopbackWithoutATokenUnlessToldSo) {
  const std::string refusal =
      "without a job token would let anyone who reaches it join the job: give the job token "
      "(--job-token-file FILE or $STRATA_JOB_TOKEN), or --insecure to serve openly all the same";
  // Without the token in the environment, and bounded: a server that does
  // start serves until killed.
  const std::string open = "env -u STRATA_JOB_TOKEN timeout 30 ";
  const auto [server_code, server_out] =
      RunCommand(open + kBin +
                 "strata_server --rank 0 --coordinator tcp://0.0.0.0:0 --kv-sizes 4 "
                 "--conv-workers 1");
  EXPECT_EQ(server_code, 1) << server_out;
  EXPECT_NE(server_out.find("strata_server: error: serving tcp://0.0.0.0:0 " + refusal),
            std::string::npos)
      << server_out;
  const auto [fc_code, fc_out] =
      RunCommand(open + kBin + "strata_fc_worker --config " + testing::kConfig +
                 " --rank 0 --coordinator tcp://127.0.0.1:1 --bind tcp://0.0.0.0:0");
  EXPECT_EQ(fc_code, 1) << fc_out;
  EXPECT_NE(fc_out.find("strata_fc_worker: error: serving tcp://0.0.0.0:0 " + refusal),
            std::string::npos)
      << fc_out;

  // Told so, it serves; with a token it serves and warns that the network
  // can read what it carries, once.
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--insecure"},
        std::vector<std::string>{"--job-token-file", dir_ + "/token"}}) {
    std::vector<std::string> argv = {kBin + "strata_server",
                                     "--rank",
                                     "0",
                                     "--coordinator",
                                     "tcp://0.0.0.0:0",
                                     "--kv-sizes",
                                     "4",
                                     "--conv-workers",
                                     "1",
                                     "--ready-file",
                                     dir_ + "/server.ready"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    ::unlink((dir_ + "/server.ready").c_str());
    ::unsetenv(kJobTokenEnv);
    Process server(argv, dir_ + "/server.log");
    EXPECT_FALSE(server.WaitForReady(dir_ + "/server.ready").empty()) << server.log();
    const std::string warning =
        "without CURVE: the job token and every message cross the "
        "network in plain text (--curve-keys encrypts them)";
    const std::string log = server.log();
    const size_t first = log.find(warning);
    EXPECT_EQ(first != std::string::npos, flags[0] != "--insecure") << log;
    if (first != std::string::npos) {
      EXPECT_EQ(log.find(warning, first + 1), std::string::npos);
    }
    server.Kill9();
  }

  const auto [size_code, size_out] =
      RunCommand(kBin +
                 "strata_server --rank 0 --coordinator tcp://127.0.0.1:0 --kv-sizes 4 "
                 "--max-message-mb -1");
  EXPECT_EQ(size_code, 1);
  EXPECT_NE(size_out.find("--max-message-mb -1: give a size from 1 to 4096 MiB"), std::string::npos)
      << size_out;
  const auto [chunk_code, chunk_out] =
      RunCommand(kBin + "strata_conv_worker --coordinator tcp://127.0.0.1:1 --config " +
                 testing::kConfig + " --chunk-elements -5");
  EXPECT_EQ(chunk_code, 1);
  EXPECT_NE(chunk_out.find("--chunk-elements -5: give a count from 1 to 268435456"),
            std::string::npos)
      << chunk_out;
}

// 4. Shutdown and knob changes from outside take the admin token, which
// only the servers are given: a holder of the job token alone can neither
// stop the job nor, posing as a worker other than the controller's, change
// a knob; a wrong admin token is refused by name.
TEST_F(SecurityClusterTest, ControlTakesTheAdminTokenWhichNoWorkerIsGiven) {
  Process run(Launch(400, {"--ready-file", dir_ + "/launch.ready"}), dir_ + "/run.log");
  const std::string coordinator = run.WaitForReady(dir_ + "/launch.ready");
  ASSERT_FALSE(coordinator.empty()) << run.log();
  const std::string admin_token = ReadFile(dir_ + "/admin_token");
  auto environment = [](pid_t pid) {
    std::string text = ReadFile("/proc/" + std::to_string(pid) + "/environ");
    std::replace(text.begin(), text.end(), '\0', '\n');
    return text;
  };
  const pid_t server = testing::FindStrataChild(run.pid(), "strata_server", 0);
  ASSERT_GT(server, 0);
  EXPECT_NE(environment(server).find("STRATA_ADMIN_TOKEN=" + admin_token), std::string::npos);
  for (int w = 0; w < 2; ++w) {
    // The launcher starts the workers after its ready file.
    pid_t worker = 0;
    for (int i = 0; i < 100 * testing::ScaledSeconds(10) && worker <= 0; ++i) {
      worker = testing::FindStrataChild(run.pid(), "strata_conv_worker", w);
      if (worker <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_GT(worker, 0) << w;
    EXPECT_EQ(environment(worker).find("STRATA_ADMIN_TOKEN"), std::string::npos) << w;
    EXPECT_EQ(ReadFile("/proc/" + std::to_string(worker) + "/cmdline").find("admin"),
              std::string::npos)
        << w;
  }

  PresentTheJobToken();
  zmq::context_t context(1);
  auto ask = [&](wire::Role role, int rank, const std::string& identity,
                 OutgoingMessage& request) -> std::string {
    auto socket = Socket::Connect(context, SocketKind::kDealer, coordinator);
    if (!socket.ok()) return std::string(socket.status().message());
    JobCredentials credentials{1, Token(), identity, "", ""};
    const absl::Status hello =
        Introduce(**socket, credentials, role, rank, "server 0", absl::Seconds(10)).status();
    if (!hello.ok()) return std::string(hello.message());
    if (!(*socket)->Send(request).ok()) return "<send failed>";
    absl::StatusOr<RawMessage> raw = (*socket)->Receive(absl::Seconds(10));
    if (!raw.ok()) return std::string(raw.status().message());
    absl::StatusOr<IncomingMessage> reply = Decode(*std::move(raw), WireLimits());
    if (!reply.ok()) return "<undecodable>";
    return IsRefusal(reply->header()) ? reply->header().getErrorMessage().cStr() : "<accepted>";
  };
  OutgoingMessage shutdown(wire::Kind::SHUTDOWN);
  shutdown.header().setJobId(1);
  shutdown.header().setSenderRole(wire::Role::LAUNCHER);
  shutdown.header().setSenderRank(-1);
  EXPECT_EQ(ask(wire::Role::LAUNCHER, -1, "", shutdown),
            "shutdown from the launcher without the admin token; server 0 takes it only from a "
            "tool that presents the admin token its servers were given (--admin-token-file or "
            "$STRATA_ADMIN_TOKEN)");
  OutgoingMessage knob_set(wire::knob::Kind::KNOB_SET);
  FromWorker(knob_set.header(), 1);
  knob_set.header().setIteration(-1);
  auto knob = BodyOf<wire::knob::Body>(knob_set.header()).initKnobs(1)[0];
  knob.setName("wire.format");
  knob.setValue("bf16");
  EXPECT_EQ(
      ask(wire::Role::CONV_WORKER, 1, testing::DefaultJobIdentity(400, PlainSgdConfig()), knob_set),
      "knob-set from the worker 1; knobs are changed by a tool with the admin token, or by "
      "the job's controller on worker 0");
  std::ofstream(dir_ + "/wrong_admin") << "guess\n";
  ::chmod((dir_ + "/wrong_admin").c_str(), 0600);
  const auto [wrong_code, wrong_out] =
      RunCommand(kBin + "strata_ctl --coordinator " + coordinator + " --job-token-file " + dir_ +
                 "/token --admin-token-file " + dir_ + "/wrong_admin set wire.format=bf16");
  EXPECT_EQ(wrong_code, 1);
  EXPECT_NE(wrong_out.find("tool presented a wrong admin token (server 0 of job 1)"),
            std::string::npos)
      << wrong_out;
  // None of it stopped or changed the job.
  ASSERT_EQ(run.Wait(), 0) << run.log();
  EXPECT_EQ(run.log().find("knob wire.format=bf16"), std::string::npos) << run.log();
}

// 5. A refusal names the field where a hello's config differs, never this
// side's value (else the identity could be rebuilt field by field); a flood
// of junk leaves at most a bounded number of lines in the log, and the
// server serves on.
TEST_F(SecurityClusterTest, RefusalsTellNoValueAndJunkCannotFloodTheLog) {
  Process server({kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0",
                  "--config", kConfig, "--conv-workers", "1", "--max-steps", "30",
                  "--job-token-file", dir_ + "/token", "--ready-file", dir_ + "/server.ready"},
                 dir_ + "/server.log");
  const std::string address = server.WaitForReady(dir_ + "/server.ready");
  ASSERT_FALSE(address.empty()) << server.log();
  PresentTheJobToken();
  zmq::context_t context(1);
  auto socket = Socket::Connect(context, SocketKind::kDealer, address);
  ASSERT_TRUE(socket.ok()) << socket.status();
  std::string other = testing::DefaultJobIdentity(30);
  const size_t batch = other.find("\"batch_size\":64");
  ASSERT_NE(batch, std::string::npos) << other;
  other.replace(batch, 15, "\"batch_size\":32");
  const absl::Status refused = Introduce(**socket, JobCredentials{1, Token(), other, "", ""},
                                         wire::Role::CONV_WORKER, 0, "server 0", absl::Seconds(10))
                                   .status();
  EXPECT_EQ(refused.message(),
            "server 0 refused us: worker 0 runs another job config than server 0: "
            "training.batch_size differs (every process of a job needs the same config and "
            "overrides)");
  EXPECT_EQ(std::string(refused.message()).find("64"), std::string::npos);

  // 2000 requests on a connection that never said hello: each is answered,
  // few are logged.
  zmq::socket_t junk(context, zmq::socket_type::dealer);
  junk.set(zmq::sockopt::linger, 0);
  SecureClientSocket(junk);
  junk.connect(address);
  int answered = 0;
  for (int i = 0; i < 2000; ++i) {
    OutgoingMessage pull(wire::ps::Kind::PULL);
    FromWorker(pull.header(), 0);
    const std::string header = pull.SerializedHeaderForTest();
    ASSERT_TRUE(junk.send(zmq::buffer(header), zmq::send_flags::none));
    zmq::pollitem_t item{static_cast<void*>(junk), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::seconds(10)) == 1) {
      answered += static_cast<int>(Refusals(junk).size());
    }
  }
  EXPECT_GE(answered, 1990);
  const std::string log = server.log();
  size_t lines = 0;
  for (size_t at = log.find("refused a request:"); at != std::string::npos;
       at = log.find("refused a request:", at + 1)) {
    ++lines;
  }
  // The hello's refusal and the junk's: all within one period.
  EXPECT_LE(lines, static_cast<size_t>(RefusalBudget::kLinesPerPeriod)) << log;
  EXPECT_GE(lines, 2u) << log;
  // It serves on: a tool is admitted.
  auto tool = Socket::Connect(context, SocketKind::kDealer, address);
  ASSERT_TRUE(tool.ok());
  EXPECT_TRUE(Introduce(**tool, JobCredentials{1, Token(), "", "", ""}, wire::Role::TOOL, -1,
                        "server 0", absl::Seconds(10))
                  .ok());
  server.Kill9();
}

// 6. An abstract socket name is anyone's to take: a worker connects only
// to a lane that a process of its own user serves, so another user who
// takes a lane's name (while its server restarts, say) gets no worker's
// memory, and the worker is told who holds the name.
TEST_F(SecurityClusterTest, AWorkerSharesNoMemoryWithAnotherUsersLane) {
  if (::geteuid() != 0) STRATA_SKIP_WITHOUT("root") << "needs root to listen as another user";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    if (::setuid(65534) != 0) ::_exit(2);  // nobody
    auto squatter = LaneListener::Listen(absl::StrCat("security-test-squatter-", ::getppid()));
    if (!squatter.ok()) ::_exit(1);
    const std::string address = (*squatter)->address();
    (void)!::write(ready[1], address.data(), address.size());
    ::close(ready[1]);
    ::sleep(10);
    ::_exit(0);
  }
  ::close(ready[1]);
  char buffer[256];
  const ssize_t n = ::read(ready[0], buffer, sizeof(buffer));
  ::close(ready[0]);
  ASSERT_GT(n, 0);
  const std::string address(buffer, static_cast<size_t>(n));
  absl::StatusOr<std::unique_ptr<LaneSocket>> lane = LaneSocket::Connect(address);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(lane.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(lane.status().message(),
            absl::StrCat("the lane ", address,
                         " is served by uid 65534, not by this process's uid 0: another user's "
                         "process holds the name"));
}

}  // namespace
}  // namespace strata
