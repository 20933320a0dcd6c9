// CURVE keys and sockets (core/net/curve.h) in one process: key files and
// authorized_keys read back and refused when malformed or readable by
// others; a keyed client's messages reach a CURVE server carrying its key's
// jobs, an unlisted key's and a plain-text client's never do.
#include "core/net/curve.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/net/connection_security.h"
#include "core/net/transport.h"

namespace strata {
namespace {

// Every socket of this process uses `keys` from now on (none: open).
void InstallKeys(std::shared_ptr<const CurveKeys> keys) {
  ConnectionSecurity security;
  security.curve = std::move(keys);
  InstallConnectionSecurity(security);
}

class CurveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/strata_curve_test_XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    InstallKeys(nullptr);
    std::filesystem::remove_all(dir_);
  }
  // A key directory: server.key/.pub and client.key admitted for `jobs`.
  void MakeKeys(const std::vector<uint64_t>& jobs) {
    const CurveKeyPair server = *NewCurveKeyPair();
    const CurveKeyPair client = *NewCurveKeyPair();
    ASSERT_TRUE(WriteKeyFile(dir_ + "/server.key", server, true).ok());
    ASSERT_TRUE(WriteKeyFile(dir_ + "/server.pub", server, false).ok());
    ASSERT_TRUE(WriteKeyFile(dir_ + "/client.key", client, true).ok());
    ASSERT_TRUE(AppendAuthorizedKey(dir_ + "/authorized_keys", {jobs, client.public_key, "client"})
                    .ok());
  }
  std::string dir_;
};

TEST_F(CurveTest, KeyFilesReadBackAndBadOnesAreRefusedByName) {
  MakeKeys({1, 3});
  auto keys = LoadCurveKeys(dir_);
  ASSERT_TRUE(keys.ok()) << keys.status();
  ASSERT_TRUE(keys->server.has_value());
  EXPECT_EQ(keys->server->public_key, keys->server_public);
  ASSERT_EQ(keys->authorized.size(), 1u);
  EXPECT_EQ(keys->authorized[0].jobs, std::vector<uint64_t>({1, 3}));
  EXPECT_EQ(keys->authorized[0].public_key, keys->client.public_key);

  chmod((dir_ + "/client.key").c_str(), 0640);
  EXPECT_EQ(LoadCurveKeys(dir_).status().message(),
            dir_ + "/client.key is readable by others (mode 0640); chmod 600 it");
  chmod((dir_ + "/client.key").c_str(), 0600);

  std::ofstream(dir_ + "/authorized_keys", std::ios::app) << "one,two nonsense\n";
  EXPECT_EQ(LoadCurveKeys(dir_).status().message(),
            dir_ + "/authorized_keys:2: expected \"JOBS PUBLIC-KEY [NAME]\" (JOBS like 1,2; a key "
                   "of 40 Z85 characters), got \"one,two nonsense\"");
  std::ofstream(dir_ + "/server.pub") << "public = tooshort\n";
  EXPECT_EQ(LoadCurveKeys(dir_).status().message(),
            dir_ + "/server.pub: no public key of 40 Z85 characters");
}

TEST_F(CurveTest, AdmittedKeysSayWhichJobsTheySpeakFor) {
  auto peer = ParseCurveUserId("jobs=1,2 name=job_a");
  ASSERT_TRUE(peer.has_value());
  EXPECT_EQ(peer->jobs, std::vector<uint64_t>({1, 2}));
  EXPECT_EQ(peer->name, "job_a");
  EXPECT_FALSE(ParseCurveUserId("name=nobody").has_value());
  EXPECT_FALSE(ParseCurveUserId("jobs=x").has_value());
}

TEST_F(CurveTest, OnlyAListedKeyReachesACurveServerAndItsJobsComeWithEveryMessage) {
  MakeKeys({7});
  auto keys = LoadCurveKeys(dir_);
  ASSERT_TRUE(keys.ok()) << keys.status();
  auto installed = std::make_shared<const CurveKeys>(*keys);
  InstallKeys(installed);
  zmq::context_t server_context(1);
  auto server = Socket::Bind(server_context, SocketKind::kRouter, "tcp://127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->curve());

  auto send_from = [&](std::shared_ptr<const CurveKeys> client_keys) {
    InstallKeys(client_keys);
    zmq::context_t context(1);
    auto client = Socket::Connect(context, SocketKind::kDealer, (*server)->address());
    EXPECT_TRUE(client.ok());
    OutgoingMessage hello(wire::Kind::HELLO);
    EXPECT_TRUE((*client)->Send(hello).ok());
    absl::StatusOr<RawMessage> got = (*server)->Receive(absl::Seconds(2));
    (*client)->raw().set(zmq::sockopt::linger, 0);
    return got;
  };
  absl::StatusOr<RawMessage> keyed = send_from(installed);
  ASSERT_TRUE(keyed.ok()) << keyed.status();
  EXPECT_EQ(keyed->curve_user, "jobs=7 name=client");

  CurveKeys unlisted = *keys;
  unlisted.client = *NewCurveKeyPair();
  EXPECT_EQ(send_from(std::make_shared<const CurveKeys>(unlisted)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(send_from(nullptr).status().code(), absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace strata
