// A MessageEndpoint decorator for tests: counts by kind what the endpoint it
// wraps delivers and sends, and changes nothing.
#ifndef STRATA_TESTS_SUPPORT_COUNTING_ENDPOINT_H_
#define STRATA_TESTS_SUPPORT_COUNTING_ENDPOINT_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/net/message_endpoint.h"

namespace strata::testing {

// What a counting endpoint saw, by kind, per direction.
struct Tally {
  std::mutex mu;
  std::map<MessageType, int> received, sent;
  int Received(MessageType k) {
    std::lock_guard<std::mutex> lock(mu);
    return received[k];
  }
  int Sent(MessageType k) {
    std::lock_guard<std::mutex> lock(mu);
    return sent[k];
  }
};

// The kind of a raw message, read from a copy (the original goes on).
inline MessageType KindOf(const RawMessage& raw) {
  RawMessage copy;
  for (const zmq::message_t& frame : raw.frames)
    copy.frames.emplace_back(frame.data(), frame.size());
  absl::StatusOr<IncomingMessage> m = Decode(std::move(copy), WireLimits());
  return m.ok() ? TypeOf(m->header()) : wire::Kind::ERROR;
}

class CountingEndpoint final : public MessageEndpoint {
 public:
  CountingEndpoint(std::unique_ptr<MessageEndpoint> inner, Tally* tally)
      : inner_(std::move(inner)), tally_(tally) {}
  const std::string& address() const override { return inner_->address(); }
  bool Serves(const std::string& peer) const override { return inner_->Serves(peer); }
  absl::StatusOr<size_t> Send(const std::string& peer, OutgoingMessage& message) override {
    {
      std::lock_guard<std::mutex> lock(tally_->mu);
      ++tally_->sent[TypeOf(message.header())];
    }
    return inner_->Send(peer, message);
  }
  void AddPollItems(std::vector<zmq::pollitem_t>& items) override { inner_->AddPollItems(items); }
  void Collect(const zmq::pollitem_t* items, int max_messages, EndpointEvents& events) override {
    const size_t before = events.messages.size();
    inner_->Collect(items, max_messages, events);
    std::lock_guard<std::mutex> lock(tally_->mu);
    for (size_t i = before; i < events.messages.size(); ++i) {
      ++tally_->received[KindOf(events.messages[i])];
    }
  }
  uint64_t bytes_sent() const override { return inner_->bytes_sent(); }
  uint64_t bytes_received() const override { return inner_->bytes_received(); }

 private:
  std::unique_ptr<MessageEndpoint> inner_;
  Tally* tally_;
};

}  // namespace strata::testing

#endif  // STRATA_TESTS_SUPPORT_COUNTING_ENDPOINT_H_
