// FcLink: a conv worker's connection to its FC worker in stanza mode.
//
// Connect() says HELLO to the FC worker (core/net/admission.h) without
// waiting (the FC worker answers once it starts serving); a refusal fails
// the first Exchange. Exchange() sends one iteration's boundary activations (zero-copy) and
// labels, and returns the gradient of the loss with respect to those
// activations. Every message goes through the link's MessageChannel
// (core/net/message_channel.h). It runs on the calling thread, sends the
// request again when no answer comes within the resend timeout, adaptive
// from the answer times seen and doubling with each send
// (core/net/round_trip.h; the FC worker answers a repeated iteration
// again), and fails after `timeout` naming the FC worker, so a lossy
// network costs a resend and a silent FC worker never hangs a conv worker.
// An FC worker whose connection closes (a killed one) fails the exchange at
// once, naming it: what it held of the exchange died with it.
// Finish() tells the FC worker we have the last gradients (DONE), so that
// it stops answering repeats and exits: an FC worker that left at once
// could not answer the repeat of a last exchange whose answer was lost.
#ifndef STRATA_CORE_NET_FC_LINK_H_
#define STRATA_CORE_NET_FC_LINK_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/net/admission.h"
#include "core/net/message_channel.h"
#include "core/net/round_trip.h"
#include "core/net/transport.h"
#include "core/util/wait_observer.h"

namespace strata {

struct FcLinkOptions {
  std::string address;  // the FC worker's
  int fc_rank = 0;
  int conv_rank = 0;
  JobCredentials credentials;  // job id, token and identity of our HELLO
  absl::Duration timeout = absl::Seconds(60);
  // An answer waits for every conv worker of the FC worker and its head's
  // compute, so the first one (before any answer time is known) is given
  // longer than a server's, though never more than a quarter of `timeout`.
  // Back-off stops there too (GivingUpAfter), so a lost answer, the first
  // one included, is asked for again several times before the exchange
  // gives up.
  RoundTripLimits resend{absl::Seconds(5), absl::Milliseconds(200), absl::Seconds(10)};
  WireLimits limits;
  // Wraps the link's channel (core/net/message_channel.h); unset: none.
  ChannelDecorator decorate_channel;
};

// The FC worker's side: reads the ACTIVATIONS message `m` a conv worker
// sent, checked whole before anything is used: the kind, the shape (which
// must be `expected`, {batch, boundary...}), the data type, two data frames
// of exactly the activations' (in that type) and the int32 labels' bytes,
// and every label in [0, classes). Returns the labels; InvalidArgument
// naming what is wrong. The gradients go back in the activations' type.
absl::StatusOr<std::vector<int32_t>> ReadActivations(const IncomingMessage& m,
                                                     const Shape& expected, int64_t classes);

class FcLink {
 public:
  static absl::StatusOr<std::unique_ptr<FcLink>> Connect(const FcLinkOptions& options);
  ~FcLink();
  // `activations` is {b, boundary shape...}; returns a tensor of the same shape.
  absl::StatusOr<Tensor> Exchange(int64_t iteration, const Tensor& activations,
                                  const std::vector<int32_t>& labels);
  // Says DONE and waits for the FC worker's answer, sending it again as an
  // exchange is; gives up quietly after a few seconds (the FC worker then
  // waits out its own timeout). Call after the last Exchange.
  void Finish();
  // Told while Exchange waits for the gradients (null: none).
  void set_wait_observer(WaitObserver* observer) { wait_observer_ = observer; }
  // What the activations (and so their gradients) travel as from the next
  // Exchange on (core/net/wire_format.h): fp32 by default, or bf16.
  void set_wire_format(wire::DataType type) { wire_format_ = type; }
  uint64_t bytes_sent() const { return channel_->bytes_sent(); }
  uint64_t bytes_received() const { return channel_->bytes_received(); }
  // Activations sent again because their answer was late.
  uint64_t resent() const { return resent_; }

 private:
  explicit FcLink(const FcLinkOptions& options)
      : options_(options), round_trip_(GivingUpAfter(options.timeout, options.resend)) {}
  // `frame`: the activations as they travel (in wire_format_).
  absl::Status Send(int64_t iteration, const Tensor& activations, const Tensor& frame,
                    const Tensor& labels);
  absl::Status SayHello();

  FcLinkOptions options_;
  WaitObserver* wait_observer_ = nullptr;
  wire::DataType wire_format_ = wire::DataType::F32;
  zmq::context_t context_{1};
  std::unique_ptr<MessageChannel> channel_;  // a ZmqChannel, maybe decorated
  uint64_t next_request_ = 1;
  uint64_t current_request_ = 0;
  uint64_t hello_request_ = 0;  // the request id of our last HELLO
  RoundTrip round_trip_;        // the FC worker's answer times
  uint64_t resent_ = 0;
};

}  // namespace strata

#endif  // STRATA_CORE_NET_FC_LINK_H_
