// Admission of connections (hello, job id, token, job identity, impostors)
// and what it rests on: the job identity of a config, the first difference
// between two identities, and the loading of job tokens.
#include "core/net/admission.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "core/model/job_identity.h"
#include "core/net/ps_wire.h"
#include "core/util/json_difference.h"

namespace strata {
namespace {

void LoadDefaultConfig(JobConfig* out) {
  auto config = LoadJobConfig(std::string(STRATA_SOURCE_DIR) + "/configs/fashion_mnist.json");
  ASSERT_TRUE(config.ok()) << config.status();
  *out = *config;
}

TEST(JobIdentityTest, NamesTheFirstFieldThatDiffers) {
  JobConfig a;
  ASSERT_NO_FATAL_FAILURE(LoadDefaultConfig(&a));
  EXPECT_EQ(FirstDifference(JobIdentity(a), JobIdentity(a)), "");
  JobConfig b = a;
  b.training.batch_size = 32;
  EXPECT_EQ(FirstDifference(JobIdentity(a), JobIdentity(b)),
            "training.batch_size: 64 here, 32 there");
  JobConfig c = a;
  c.model.layers[3].out_channels = 48;
  EXPECT_EQ(FirstDifference(JobIdentity(a), JobIdentity(c)),
            "model.layers[3].out_channels: 64 here, 48 there");
  JobConfig d = a;
  d.model.layers.pop_back();
  EXPECT_EQ(FirstDifference(JobIdentity(a), JobIdentity(d)),
            "model.layers: 10 entries here, 9 there");
  // What may differ between processes does not count: where the data lies,
  // the seed, the threads.
  JobConfig e = a;
  e.data.path = "/elsewhere";
  e.training.seed = 7;
  e.training.threads = 1;
  EXPECT_EQ(FirstDifference(JobIdentity(a), JobIdentity(e)), "");
}

TEST(JobIdentityTest, UntrustedTextIsComparedSafely) {
  JobConfig config;
  ASSERT_NO_FATAL_FAILURE(LoadDefaultConfig(&config));
  const std::string mine = JobIdentity(config);
  EXPECT_EQ(FirstDifference(mine, "{not json"), "(the whole document): JSON here, not JSON there");
  EXPECT_EQ(FirstDifference(mine, ""), "(the whole document): JSON here, empty there");
  EXPECT_EQ(FirstDifference(mine, std::string(100000, '[')),
            "(the whole document): JSON here, not JSON there");
  EXPECT_EQ(FirstDifference(R"({"a": {"b": 1}})", R"({"a": 5})"),
            "a: an object of 1 field here, 5 there");
  // Deep but valid: nothing recurses that deep, and the difference is named.
  std::string deep = R"({"batch_shares": "even", "data": )" + std::string(30000, '[') +
                     std::string(30000, ']') + "}";
  EXPECT_EQ(FirstDifference(mine, deep),
            "data: an object of 6 fields here, an array of 1 entry there");
  EXPECT_EQ(FirstDifference(R"({"a": 1})", R"({"a": 1, "z": 2})"), "z: absent here, set there");
  // A key the other side chose cannot forge a line of a log it lands in.
  EXPECT_EQ(FirstDifferingField(R"({"a": 1})", R"({"a": 1, "x\n2026-01-01 W forged": 2})"),
            "x\\n2026-01-01 W forged");
  EXPECT_EQ(FirstDifferingField(R"({"a": 1})", R"({"a": 2})"), "a");
  EXPECT_EQ(FirstDifferingField(R"({"a": 1})", R"({"a": 1})"), "");
}

// A HELLO (or another request) as decoded on a serving socket.
class AdmissionTest : public ::testing::Test {
 protected:
  IncomingMessage Receive(OutgoingMessage& m, const std::string& identity) {
    RawMessage raw;
    raw.identity = identity;
    const std::string header = m.SerializedHeaderForTest();
    raw.frames.emplace_back(header.data(), header.size());
    auto decoded = Decode(std::move(raw), WireLimits());
    EXPECT_TRUE(decoded.ok()) << decoded.status();
    return *std::move(decoded);
  }
  IncomingMessage Hello(const JobCredentials& c, wire::Role role, int rank,
                        const std::string& identity) {
    OutgoingMessage m(wire::Kind::HELLO);
    FillHello(m.header(), c, role, rank);
    return Receive(m, identity);
  }
  IncomingMessage Push(wire::Role role, int rank, const std::string& identity) {
    OutgoingMessage m(wire::ps::Kind::PUSH);
    m.header().setJobId(3);
    m.header().setSenderRole(role);
    m.header().setSenderRank(rank);
    return Receive(m, identity);
  }
  const JobCredentials mine_{3, "token-3", R"({"training":{"batch_size":64}})", "", ""};
};

TEST_F(AdmissionTest, AdmitsTheRightCredentialsAndRefusesTheRestByName) {
  Admission admission("server 0", mine_);
  EXPECT_FALSE(admission.open());
  JobCredentials wrong_job = mine_;
  wrong_job.job_id = 4;
  EXPECT_EQ(admission.Admit(Hello(wrong_job, wire::Role::CONV_WORKER, 1, "a")).status().message(),
            "worker 1 says hello for job 4; server 0 serves job 3");
  JobCredentials no_token = mine_;
  no_token.token = "";
  EXPECT_EQ(admission.Admit(Hello(no_token, wire::Role::CONV_WORKER, 1, "a")).status().message(),
            "worker 1 presented no job token; server 0 requires one");
  JobCredentials wrong_token = mine_;
  wrong_token.token = "token-4";
  auto refused = admission.Admit(Hello(wrong_token, wire::Role::FC_WORKER, 0, "a"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(refused.status().message(),
            "fc worker 0 presented a wrong job token (server 0 of job 3)");
  JobCredentials other_config = mine_;
  other_config.identity = R"({"training":{"batch_size":32}})";
  // The refusal names the field, never this side's value (the identity
  // could otherwise be rebuilt field by field).
  EXPECT_EQ(
      admission.Admit(Hello(other_config, wire::Role::CONV_WORKER, 1, "a")).status().message(),
      "worker 1 runs another job config than server 0: training.batch_size differs (every "
      "process of a job needs the same config and overrides)");
  // Nothing refused was bound.
  EXPECT_TRUE(IsNotRegistered(admission.Check(Push(wire::Role::CONV_WORKER, 1, "a")).status()));

  auto admitted = admission.Admit(Hello(mine_, wire::Role::CONV_WORKER, 1, "a"));
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  EXPECT_EQ(admitted->rank, 1);
  auto checked = admission.Check(Push(wire::Role::CONV_WORKER, 1, "a"));
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ(checked->role, wire::Role::CONV_WORKER);
  // The same connection cannot speak for someone else.
  EXPECT_EQ(admission.Check(Push(wire::Role::CONV_WORKER, 2, "a")).status().message(),
            "push claiming to come from worker 2 on the connection of worker 1");
  // Another connection has to say hello itself.
  EXPECT_EQ(admission.Check(Push(wire::Role::CONV_WORKER, 1, "b")).status().message(),
            "push from a connection that never said hello to server 0 (every connection "
            "registers first)");
  admission.Forget("a");
  EXPECT_TRUE(IsNotRegistered(admission.Check(Push(wire::Role::CONV_WORKER, 1, "a")).status()));
}

// Shutting a job down and changing its knobs take the admin token, which a
// tool presents beside the job token; workers are never admins.
TEST_F(AdmissionTest, OnlyAToolWithTheAdminTokenIsAnAdmin) {
  JobCredentials server = mine_;
  server.admin_token = "admin-3";
  Admission admission("server 0", server);
  JobCredentials tool = mine_;
  tool.identity = "";
  auto plain = admission.Admit(Hello(tool, wire::Role::TOOL, -1, "t1"));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->admin);
  tool.admin_token = "guess";
  auto wrong = admission.Admit(Hello(tool, wire::Role::TOOL, -1, "t2"));
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(wrong.status().message(), "tool presented a wrong admin token (server 0 of job 3)");
  tool.admin_token = "admin-3";
  auto admin = admission.Admit(Hello(tool, wire::Role::LAUNCHER, -1, "t3"));
  ASSERT_TRUE(admin.ok()) << admin.status();
  EXPECT_TRUE(admin->admin);
  EXPECT_TRUE(admission.Check(Push(wire::Role::LAUNCHER, -1, "t3"))->admin);
  // A worker that presents it (FillHello never does) stays a worker.
  OutgoingMessage hello(wire::Kind::HELLO);
  FillHello(hello.header(), mine_, wire::Role::CONV_WORKER, 0);
  hello.header().setAdminToken("admin-3");
  auto worker = admission.Admit(Receive(hello, "w0"));
  ASSERT_TRUE(worker.ok()) << worker.status();
  EXPECT_FALSE(worker->admin);
  EXPECT_EQ(NeedsAdmin(*plain, "server 0", "shutdown").message(),
            "shutdown from the tool without the admin token; server 0 takes it only from a tool "
            "that presents the admin token its servers were given (--admin-token-file or "
            "$STRATA_ADMIN_TOKEN)");

  // With a job token but no admin token, no tool is an admin, and one that
  // presents an admin token is told there is none; an open process without
  // one takes every tool as an admin.
  Admission no_admin("server 0", mine_);
  EXPECT_EQ(no_admin.Admit(Hello(tool, wire::Role::TOOL, -1, "t")).status().message(),
            "tool presented an admin token, but server 0 of job 3 was given none "
            "(--admin-token-file or $STRATA_ADMIN_TOKEN)");
  tool.admin_token = "";
  EXPECT_FALSE(no_admin.Admit(Hello(tool, wire::Role::TOOL, -1, "t"))->admin);
  JobCredentials open = mine_;
  open.token = "";
  Admission open_admission("server 0", open);
  tool.token = "";
  EXPECT_TRUE(open_admission.Admit(Hello(tool, wire::Role::TOOL, -1, "t"))->admin);
}

TEST_F(AdmissionTest, AnOpenClusterTakesAnyTokenAndAssignedRanksBind) {
  JobCredentials open = mine_;
  open.token = "";
  Admission admission("server 0", open);
  EXPECT_TRUE(admission.open());
  JobCredentials some_token = mine_;
  some_token.token = "whatever";
  ASSERT_TRUE(admission.Admit(Hello(some_token, wire::Role::CONV_WORKER, -1, "c")).ok());
  admission.AssignRank("c", 5);
  EXPECT_TRUE(admission.Check(Push(wire::Role::CONV_WORKER, 5, "c")).ok());
  EXPECT_FALSE(admission.Check(Push(wire::Role::CONV_WORKER, -1, "c")).ok());
}

class JobTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/token_test_" + std::to_string(::getpid());
    ::mkdir(dir_.c_str(), 0700);
    ::unsetenv(kJobTokenEnv);
  }
  void TearDown() override { ::unsetenv(kJobTokenEnv); }
  std::string Write(const std::string& name, const std::string& text, mode_t mode) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  std::string dir_;
};

TEST_F(JobTokenTest, ReadsTheFileThenTheEnvironmentElseNone) {
  EXPECT_EQ(*LoadJobToken(""), "");
  ::setenv(kJobTokenEnv, "from-the-environment", 1);
  EXPECT_EQ(*LoadJobToken(""), "from-the-environment");
  EXPECT_EQ(*LoadJobToken(Write("t", "from-the-file\nsecond line\n", 0600)), "from-the-file");
}

TEST_F(JobTokenTest, RefusesFilesOthersCanReadAndMalformedTokens) {
  const std::string shared = Write("shared", "abc\n", 0644);
  EXPECT_EQ(LoadJobToken(shared).status().message(),
            "job token file " + shared + " is readable by others (mode 0644); chmod 600 it");
  const std::string empty = Write("empty", "\n", 0600);
  EXPECT_EQ(LoadJobToken(empty).status().message(), "job token file " + empty + " is empty");
  EXPECT_EQ(LoadJobToken(dir_ + "/missing").status().code(), absl::StatusCode::kNotFound);
  ::setenv(kJobTokenEnv, "two words", 1);
  EXPECT_EQ(LoadJobToken("").status().message(),
            "$STRATA_JOB_TOKEN has a space or a non-printable character");
}

TEST_F(JobTokenTest, TheAdminTokenComesFromItsOwnFileOrVariable) {
  ::setenv(kJobTokenEnv, "the-job-token", 1);
  EXPECT_EQ(*LoadAdminToken(""), "");
  ::setenv(kAdminTokenEnv, "the-admin-token", 1);
  EXPECT_EQ(*LoadAdminToken(""), "the-admin-token");
  const std::string shared = Write("admin", "abc\n", 0640);
  EXPECT_EQ(LoadAdminToken(shared).status().message(),
            "admin token file " + shared + " is readable by others (mode 0640); chmod 600 it");
  ::unsetenv(kAdminTokenEnv);
}

TEST(NewJobTokenTest, IsFreshEachTime) {
  const std::string a = NewJobToken(), b = NewJobToken();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace strata
