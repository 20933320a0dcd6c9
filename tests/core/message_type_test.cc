// The envelope's message types (core/net/message_type.h): one type per
// service and kind, named from each service's schema; Decode's checks of the
// envelope; and the routing of a message to its service's handler
// (core/net/service_router.h).
#include "core/net/message_type.h"

#include <string>
#include <vector>

#include <capnp/list.h>
#include <gtest/gtest.h>

#include "core/net/knob_messages.h"
#include "core/net/ps_wire.h"
#include "core/net/service_router.h"
#include "core/net/stanza_wire.h"
#include "core/net/transport.h"
#include "moe/expert_wire.h"

namespace strata {
namespace {

TEST(MessageTypeTest, KindsOfDifferentServicesAreDifferentTypes) {
  // Kind 0 of three services.
  const MessageType error = wire::Kind::ERROR;
  const MessageType push = wire::ps::Kind::PUSH;
  const MessageType activations = wire::stanza::Kind::ACTIVATIONS;
  EXPECT_EQ(error.kind(), 0);
  EXPECT_EQ(push.kind(), 0);
  EXPECT_NE(error, push);
  EXPECT_NE(push, activations);
  EXPECT_EQ(push.service(), 1);
  EXPECT_EQ(activations.service(), 2);
  EXPECT_EQ(MessageType(wire::moe::Kind::EXPERT_BLOCK).service(), 3);
  EXPECT_EQ(MessageType(wire::knob::Kind::KNOB_LEASE).service(), 4);
  EXPECT_EQ(CodeOf(wire::ps::Kind::PULL), (1u << 16) | 2u);
}

TEST(MessageTypeTest, EachKindIsNamedFromItsServicesSchema) {
  EXPECT_EQ(KindName(wire::Kind::HELLO_ACK), "hello-ack");
  EXPECT_EQ(KindName(wire::Kind::NEW_JOB), "new-job");
  EXPECT_EQ(KindName(wire::ps::Kind::PULL_REPLY), "pull-reply");
  EXPECT_EQ(KindName(wire::ps::Kind::SHM_ATTACH_ACK), "shm-attach-ack");
  EXPECT_EQ(KindName(wire::stanza::Kind::ACTIVATION_GRADS), "activation-grads");
  EXPECT_EQ(KindName(wire::moe::Kind::EXPERT_BLOCK_ACK), "expert-block-ack");
  EXPECT_EQ(KindName(wire::knob::Kind::KNOB_GET_REPLY), "knob-get-reply");
  EXPECT_EQ(KindName(MessageType(9, 2)), "service 9 kind 2");
  EXPECT_EQ(KindName(MessageType(1, 40)), "ps kind 40");
}

TEST(MessageTypeTest, ANameFindsItsKindInWhicheverServiceHasIt) {
  EXPECT_EQ(KindNamed("activation-grads"), MessageType(wire::stanza::Kind::ACTIVATION_GRADS));
  EXPECT_EQ(KindNamed("knob-set"), MessageType(wire::knob::Kind::KNOB_SET));
  EXPECT_EQ(KindNamed("heartbeat"), MessageType(wire::Kind::HEARTBEAT));
  EXPECT_EQ(KindNamed("push-ack"), MessageType(wire::ps::Kind::PUSH_ACK));
  EXPECT_FALSE(KindNamed("pushack").has_value());
}

TEST(MessageTypeTest, AServiceIdIsOneServicesOnly) {
  EXPECT_EQ(RegisterService(0, "mine", capnp::Schema::from<wire::ps::Kind>()).code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status taken = RegisterService(1, "mine", capnp::Schema::from<wire::ps::Kind>());
  EXPECT_EQ(taken.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(taken.message(), "service 1 is ps's; mine needs an id of its own");
  EXPECT_TRUE(RegisterService<wire::ps::Kind>("ps").ok());  // again: no change
  EXPECT_EQ(KindName(wire::ps::Kind::PUSH), "push");
}

// A message of one header frame.
RawMessage Frames(OutgoingMessage& m) {
  RawMessage raw;
  const std::string header = m.SerializedHeaderForTest();
  raw.frames.emplace_back(header.data(), header.size());
  return raw;
}

TEST(MessageTypeTest, DecodeRefusesABodyThatIsNotAStructAndAnUnknownControlKind) {
  OutgoingMessage listed(wire::ps::Kind::PULL);
  listed.header().getBody().initAs<capnp::List<int64_t>>(3);
  absl::StatusOr<IncomingMessage> m = Decode(Frames(listed), WireLimits{});
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(), "pull has a body that is not a struct");

  OutgoingMessage unknown(MessageType(0, 40));
  m = Decode(Frames(unknown), WireLimits{});
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(), "unknown message kind 40");

  // Another service's unknown kind is its handler's to refuse.
  OutgoingMessage later(MessageType(1, 40));
  EXPECT_TRUE(Decode(Frames(later), WireLimits{}).ok());
}

TEST(ServiceRouterTest, AMessageGoesToItsServicesHandlerWithTheSendersContext) {
  ServiceRouter<int> router("a test process");
  std::vector<std::string> seen;
  ASSERT_TRUE(router
                  .Add(wire::ps::SERVICE,
                       [&seen](const IncomingMessage& m, int sender) {
                         seen.push_back(KindName(TypeOf(m.header())) + " from " +
                                        std::to_string(sender));
                         return absl::OkStatus();
                       })
                  .ok());
  EXPECT_EQ(router.Add(wire::ps::SERVICE, nullptr).code(), absl::StatusCode::kAlreadyExists);

  OutgoingMessage pull(wire::ps::Kind::PULL);
  absl::StatusOr<IncomingMessage> m = Decode(Frames(pull), WireLimits{});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(router.Route(*m, 3).ok());
  EXPECT_EQ(seen, std::vector<std::string>{"pull from 3"});

  OutgoingMessage activations(wire::stanza::Kind::ACTIVATIONS);
  m = Decode(Frames(activations), WireLimits{});
  ASSERT_TRUE(m.ok()) << m.status();
  const absl::Status refused = router.Route(*m, 3);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(), "a test process does not accept activations messages");
  EXPECT_EQ(seen.size(), 1u);
}

}  // namespace
}  // namespace strata
