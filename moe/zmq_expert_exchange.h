// ZmqExpertExchange: moe::ExpertExchange over ZeroMQ between the processes
// of an expert group (the FC workers of a stanza job). Each process binds
// one ROUTER inbox (a MessageEndpoint, core/net/message_endpoint.h) and
// connects one DEALER to every peer's inbox; blocks are
// one-way `expertBlock` messages (header: tag, counts, shape [rows, width];
// one zero-copy data frame of rows).
//
// Each DEALER says HELLO first (core/net/admission.h: job id, token,
// identity); blocks from a connection that did not, or that claim another
// sender, are refused. A DEALER says HELLO once, when it connects: if its
// connection is renewed without a restart (a dropped TCP connection), its
// blocks are refused and the receiver's wait ends with a timeout that
// names the last refusal. Everything received is checked: the protocol
// (Decode), the kind, the sender's rank, the header's counts against its
// shape and frame,
// and finally the receiver's expectation. A bad block is refused with a log
// line naming the sender and the problem; the wait goes on for the real
// one. Blocks for another tag wait in a buffer (bounded); blocks for a call
// a layer has already finished are refused. A peer silent for `timeout` fails the
// Receive with DeadlineExceeded naming it and the block.
//
//   auto exchange = ZmqExpertExchange::Bind("tcp://10.0.0.5:0", options);
//   // ... learn every process's (*exchange)->address() ...
//   STRATA_RETURN_IF_ERROR((*exchange)->Connect(addresses));
//   layer.JoinExpertGroup(exchange->get(), 0);
#ifndef STRATA_MOE_ZMQ_EXPERT_EXCHANGE_H_
#define STRATA_MOE_ZMQ_EXPERT_EXCHANGE_H_

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "core/net/admission.h"
#include "core/net/message_endpoint.h"
#include "core/net/transport.h"
#include "core/util/wait_observer.h"
#include "moe/expert_exchange.h"

namespace strata {

struct ExpertExchangeOptions {
  int rank = 0;
  int size = 1;                // until Connect, which sets it to the number of addresses
  JobCredentials credentials;  // job id, token and identity of our HELLO
  absl::Duration timeout = absl::Seconds(60);  // of silence from the awaited peer
  WireLimits limits;
  std::string peer_name = "FC worker";  // how log lines and errors name a process
  // Wraps the inbox (core/net/message_endpoint.h); unset: none.
  EndpointDecorator decorate_endpoint;
};

// An EXPERT_BLOCK message as read: who sent it, for which tag, and its
// counts and rows.
struct ReceivedBlock {
  int sender = -1;
  moe::ExchangeTag tag;
  moe::ExchangeBlock block;
};

// Reads the block `m` carries to process `rank` of a group of `size`,
// every field checked against the others: the kind, the sender (a peer,
// not `rank`), the tag's phase and chunk, non-negative counts whose sum is
// the rows of a shape [rows, width], and one data frame of exactly that
// many floats (none for no rows). InvalidArgument naming what disagrees.
absl::StatusOr<ReceivedBlock> ReadExpertBlock(const IncomingMessage& m, int rank, int size);

class ZmqExpertExchange final : public moe::ExpertExchange {
 public:
  // Binds the inbox where `serving` says (core/net/serving_address.h;
  // "tcp://HOST:0" picks a free port). InvalidArgument for a negative rank.
  static absl::StatusOr<std::unique_ptr<ZmqExpertExchange>> Bind(
      const ServingAddress& serving, const ExpertExchangeOptions& options);
  // Lets queued blocks reach their peers (up to 2 s) before closing.
  ~ZmqExpertExchange() override;

  const std::string& address() const { return inbox_->address(); }
  // Connects to every process's inbox; `addresses` is indexed by rank (our
  // own entry is ignored) and sets size(). InvalidArgument when our rank is
  // not among them.
  absl::Status Connect(const std::vector<std::string>& addresses);

  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  absl::Status Send(int to, const moe::ExchangeTag& tag, const moe::ExchangeBlock& block) override;
  absl::StatusOr<moe::ExchangeBlock> Receive(int from, const moe::ExchangeTag& tag,
                                             const moe::BlockExpectation& expect) override;

  // Told while Receive waits for a block that has not arrived (null: none).
  void set_wait_observer(WaitObserver* observer) { wait_observer_ = observer; }

  uint64_t bytes_sent() const;
  uint64_t bytes_received() const { return inbox_->bytes_received(); }
  uint64_t refused() const { return refused_; }

 private:
  using Key = std::pair<int, moe::ExchangeTag>;  // sender, tag
  explicit ZmqExpertExchange(const ExpertExchangeOptions& options);
  // Decodes and checks one message into (sender, tag, block). A HELLO is
  // admitted and yields no block (nullopt).
  absl::StatusOr<std::optional<std::pair<Key, moe::ExchangeBlock>>> Unpack(RawMessage raw);
  // "slots of layer 0, call 3, chunk 0/1 from FC worker 1" (built only for
  // log lines and errors, never on the way of a good block).
  std::string Describe(const Key& key) const;
  void Refuse(const std::string& what, const absl::Status& why);

  ExpertExchangeOptions options_;
  WaitObserver* wait_observer_ = nullptr;
  zmq::context_t context_;
  std::unique_ptr<MessageEndpoint> inbox_;         // a ZmqEndpoint (ROUTER), maybe decorated
  Admission admission_;                            // who may send to the inbox
  std::vector<std::unique_ptr<Socket>> outboxes_;  // DEALER per peer; null for ourselves
  std::deque<RawMessage> delivered_;               // read from the inbox, not yet unpacked
  std::map<Key, moe::ExchangeBlock> early_;        // arrived before they were awaited
  std::map<int32_t, int64_t> current_call_;        // per layer: blocks of earlier calls are stale
  uint64_t refused_ = 0;
  std::string last_refusal_;  // named in a timeout: often its cause
};

}  // namespace strata

#endif  // STRATA_MOE_ZMQ_EXPERT_EXCHANGE_H_
