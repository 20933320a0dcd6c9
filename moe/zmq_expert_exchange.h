// ZmqExpertExchange: moe::ExpertExchange over ZeroMQ between the processes
// of an expert group (the FC workers of a stanza job). Each process binds
// one ROUTER inbox (a MessageEndpoint, core/net/message_endpoint.h) and
// connects one DEALER to every peer's inbox; blocks are
// one-way `expertBlock` messages (header: tag, counts, shape [rows, width];
// one zero-copy data frame of rows).
//
// Blocks are acknowledged and sent again until they are: the receiver
// answers every block with an `expertBlockAck` (tag), and a block
// unacknowledged for its peer's resend timeout (core/net/round_trip.h) is
// sent again; a block received twice (same sender and tag) is acknowledged
// and dropped. A courier thread owns the inbox from Connect on: it takes
// blocks in, acknowledges them and sends again what is overdue, also
// while the process's own thread is blocked elsewhere (a peer waiting for
// a block lost on its way must get it again even when this process has
// moved on to, say, a parameter-server wait). The outboxes are shared
// between the courier and the caller's thread under a mutex.
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
// one. Blocks for another tag wait in a buffer (bounded; beyond it a block
// is not acknowledged, so it comes again); a block for a call a layer has
// already finished is acknowledged and dropped. A Receive that waits
// `timeout` fails with DeadlineExceeded naming the peer and the block.
//
//   auto exchange = ZmqExpertExchange::Bind("tcp://10.0.0.5:0", options);
//   // ... learn every process's (*exchange)->address() ...
//   STRATA_RETURN_IF_ERROR((*exchange)->Connect(addresses));
//   layer.JoinExpertGroup(exchange->get(), 0);
#ifndef STRATA_MOE_ZMQ_EXPERT_EXCHANGE_H_
#define STRATA_MOE_ZMQ_EXPERT_EXCHANGE_H_

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/net/admission.h"
#include "core/net/message_endpoint.h"
#include "core/net/round_trip.h"
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
  // When an unacknowledged block is sent again (core/net/round_trip.h);
  // back-off stops at a quarter of `timeout` (GivingUpAfter).
  RoundTripLimits resend;
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
  // Lets unacknowledged blocks reach their peers (up to 2 s) before closing.
  ~ZmqExpertExchange() override;

  const std::string& address() const { return inbox_->address(); }
  // Connects to every process's inbox; `addresses` is indexed by rank (our
  // own entry is ignored) and sets size(); starts the courier. Once only.
  // InvalidArgument when our rank is not among them.
  absl::Status Connect(const std::vector<std::string>& addresses);

  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  absl::Status Send(int to, const moe::ExchangeTag& tag, const moe::ExchangeBlock& block) override;
  absl::StatusOr<moe::ExchangeBlock> Receive(int from, const moe::ExchangeTag& tag,
                                             const moe::BlockExpectation& expect) override;

  // Told while Receive waits for a block that has not arrived (null: none).
  void set_wait_observer(WaitObserver* observer) { wait_observer_ = observer; }

  uint64_t bytes_sent() const;
  uint64_t bytes_received() const { return bytes_received_.load(); }
  uint64_t refused() const;
  // Blocks sent again for want of an acknowledgement, and blocks received
  // twice (dropped).
  uint64_t resent() const { return resent_.load(); }
  uint64_t duplicates() const { return duplicates_.load(); }

 private:
  using Key = std::pair<int, moe::ExchangeTag>;  // peer (sender or receiver), tag
  // A block sent and not yet acknowledged.
  struct Unacked {
    moe::ExchangeBlock block;  // keeps its rows alive for a resend
    absl::Time sent_at;
    int sends = 1;
  };
  // What Unpack makes of one message.
  struct Unpacked {
    enum What { kHello, kBlock, kAck } what = kHello;
    Key key;
    moe::ExchangeBlock block;  // kBlock
  };
  explicit ZmqExpertExchange(const ExpertExchangeOptions& options);
  // Decodes and checks one message: a HELLO (admitted), a block or an ack.
  absl::StatusOr<Unpacked> Unpack(RawMessage raw);
  // "slots of layer 0, call 3, chunk 0/1 from FC worker 1" (built only for
  // log lines and errors, never on the way of a good block).
  std::string Describe(const Key& key) const;
  void Refuse(const std::string& what, const absl::Status& why) ABSL_LOCKS_EXCLUDED(mu_);
  // Sends `block` as `tag` to `to`.
  absl::Status SendBlockLocked(int to, const moe::ExchangeTag& tag,
                               const moe::ExchangeBlock& block)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(out_mu_);
  void SendAck(int to, const moe::ExchangeTag& tag) ABSL_LOCKS_EXCLUDED(out_mu_);

  // The courier: reads the inbox until stopped (and, stopping, until every
  // block is acknowledged or 2 s pass), files blocks and answers them,
  // takes acks, sends again what is overdue.
  void Courier();
  void Take(RawMessage raw);
  // Sends again what is overdue; returns the wait until the next is due.
  absl::Duration ResendOverdue();

  ExpertExchangeOptions options_;
  WaitObserver* wait_observer_ = nullptr;
  zmq::context_t context_;
  // The courier's alone once it runs: a ZmqEndpoint (ROUTER), maybe decorated.
  std::unique_ptr<MessageEndpoint> inbox_;
  Admission admission_;  // who may send to the inbox (the courier's)
  std::thread courier_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> bytes_received_{0};
  std::atomic<uint64_t> resent_{0};
  std::atomic<uint64_t> duplicates_{0};

  // The outboxes, and what they carried that is not acknowledged yet.
  mutable absl::Mutex out_mu_;
  std::vector<std::unique_ptr<Socket>> outboxes_ ABSL_GUARDED_BY(out_mu_);  // null: ourselves
  std::map<Key, Unacked> unacked_ ABSL_GUARDED_BY(out_mu_);      // by receiver and tag
  std::vector<RoundTrip> round_trips_ ABSL_GUARDED_BY(out_mu_);  // per peer

  // What arrived, for Receive.
  mutable absl::Mutex mu_;
  // By sender and tag, in arrival order: the copies of a block (sent again
  // before our ack got back) until Receive takes the first that fits.
  std::map<Key, std::deque<moe::ExchangeBlock>> arrived_ ABSL_GUARDED_BY(mu_);
  size_t arrived_count_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<Key> seen_ ABSL_GUARDED_BY(mu_);  // blocks Receive has taken lately
  std::map<int32_t, int64_t> current_call_ ABSL_GUARDED_BY(mu_);  // per layer
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_refusal_ ABSL_GUARDED_BY(mu_);  // named in a timeout: often its cause
};

}  // namespace strata

#endif  // STRATA_MOE_ZMQ_EXPERT_EXCHANGE_H_
