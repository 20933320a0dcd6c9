#include "core/net/fc_link.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/net/stanza_wire.h"
#include "core/net/wire_format.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/log.h"

namespace strata {
namespace {

// How long Finish waits for the FC worker to hear our DONE.
constexpr absl::Duration kFinishWithin = absl::Seconds(5);

}  // namespace

absl::StatusOr<std::unique_ptr<FcLink>> FcLink::Connect(const FcLinkOptions& options) {
  std::unique_ptr<FcLink> link(new FcLink(options));
  STRATA_ASSIGN_OR_RETURN(auto socket, Socket::Connect(link->context_, SocketKind::kDealer,
                                                       options.address, options.limits));
  auto channel = std::make_unique<ZmqChannel>(std::move(socket));
  // The FC worker's state for an exchange dies with its connection.
  STRATA_RETURN_IF_ERROR(channel->WatchForClose(link->context_));
  link->channel_ = std::move(channel);
  if (options.decorate_channel)
    link->channel_ = options.decorate_channel(std::move(link->channel_));
  STRATA_RETURN_IF_ERROR(link->SayHello());
  return link;
}

FcLink::~FcLink() {
  if (resent_ > 0) {
    LogInfo("sent activations to fc worker %d again %llu times", options_.fc_rank,
            static_cast<unsigned long long>(resent_));
  }
}

absl::Status FcLink::SayHello() {
  hello_request_ = next_request_++;
  OutgoingMessage hello(wire::Kind::HELLO);
  FillHello(hello.header(), options_.credentials, wire::Role::CONV_WORKER, options_.conv_rank);
  hello.header().setRequestId(hello_request_);
  return channel_->Send(hello).status();
}

absl::Status FcLink::Send(int64_t iteration, const Tensor& activations, const Tensor& frame,
                          const Tensor& labels) {
  OutgoingMessage m(wire::stanza::Kind::ACTIVATIONS);
  auto h = m.header();
  h.setJobId(options_.credentials.job_id);
  h.setIteration(iteration);
  h.setSenderRole(wire::Role::CONV_WORKER);
  h.setSenderRank(options_.conv_rank);
  h.setRequestId(current_request_);
  auto shape = BodyOf<wire::stanza::Body>(h).initShape(static_cast<unsigned>(activations.rank()));
  for (int i = 0; i < activations.rank(); ++i)
    shape.set(static_cast<unsigned>(i), activations.dim(i));
  h.setDataType(wire_format_);
  m.AddFrame(frame);
  m.AddFrame(labels);
  return channel_->Send(m).status();
}

absl::StatusOr<Tensor> FcLink::Exchange(int64_t iteration, const Tensor& activations,
                                        const std::vector<int32_t>& labels) {
  // Labels travel as a frame of int32 values.
  Tensor label_frame = Tensor::Empty({static_cast<int64_t>(labels.size())});
  std::memcpy(label_frame.raw_data(), labels.data(), labels.size() * sizeof(int32_t));
  current_request_ = next_request_++;
  const wire::DataType type = wire_format_;
  const Tensor frame = EncodeFloats(activations, type);  // once, for every send
  STRATA_RETURN_IF_ERROR(Send(iteration, activations, frame, label_frame));
  const std::string who = absl::StrCat("fc worker ", options_.fc_rank, " (", options_.address, ")");
  const absl::Time deadline = MonotonicNow() + options_.timeout;
  ScopedWait wait(wait_observer_);
  // Resends back off exponentially: a slow FC worker is not flooded.
  int sends = 1;
  absl::Time sent_at = MonotonicNow();
  absl::Time resend_at = sent_at + round_trip_.TimeoutAfter(sends);
  int hellos = 0;  // HELLOs said again for this exchange
  while (true) {
    const absl::Time now = MonotonicNow();
    if (now >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("no activation gradients from ", who,
                                                      " for iteration ", iteration, " within ",
                                                      absl::FormatDuration(options_.timeout)));
    }
    absl::StatusOr<std::optional<RawMessage>> raw = channel_->ReceiveNow();
    if (!raw.ok()) {
      return WithContext(raw.status(), absl::StrCat("no activation gradients from ", who,
                                                    " for iteration ", iteration));
    }
    if (!raw->has_value()) {
      WaitReadable(*channel_, std::min(deadline, resend_at) - now);
      if (MonotonicNow() >= resend_at) {
        STRATA_RETURN_IF_ERROR(Send(iteration, activations, frame, label_frame));
        ++resent_;
        round_trip_.TimedOut();
        sent_at = MonotonicNow();
        resend_at = sent_at + round_trip_.TimeoutAfter(++sends);
      }
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(IncomingMessage reply, Decode(**std::move(raw), options_.limits));
    const auto h = reply.header();
    if (h.getRequestId() == hello_request_ && hello_request_ != 0) {
      // The answer to our hello comes before that of what followed it.
      if (IsRefusal(h)) {
        return WithContext(ErrorFromHeader(h), absl::StrCat(who, " refused us"));
      }
      continue;
    }
    if (h.getRequestId() != current_request_) continue;  // an answer to an older request
    if (IsNotRegistered(h) && hellos < kMaxHellosPerRequest) {
      // A renewed connection: register it again, then resend.
      ++hellos;
      STRATA_RETURN_IF_ERROR(SayHello());
      STRATA_RETURN_IF_ERROR(Send(iteration, activations, frame, label_frame));
      sent_at = MonotonicNow();
      resend_at = sent_at + round_trip_.TimeoutAfter(++sends);
      continue;
    }
    if (TypeOf(h) == wire::Kind::ERROR) {
      return WithContext(ErrorFromHeader(h), absl::StrCat(who, " refused our activations"));
    }
    if (TypeOf(h) != wire::stanza::Kind::ACTIVATION_GRADS || reply.num_frames() != 1 ||
        h.getDataType() != type ||
        reply.frame_size(0) != static_cast<size_t>(activations.numel()) * ElementBytes(type)) {
      return absl::DataLossError(absl::StrCat(who, " answered iteration ", iteration,
                                              " with a malformed gradient message"));
    }
    // Karn's rule: an answer to a request sent twice cannot say which send
    // it answers.
    if (sends == 1) round_trip_.Sample(MonotonicNow() - sent_at);
    Tensor grad = Tensor::Empty(activations.shape());
    DecodeFloats(reply, 0, type, grad.data(), grad.numel());
    return grad;
  }
}

void FcLink::Finish() {
  // Bounded: the FC worker may already have gone (it also stops waiting for
  // us after its timeout), and we hold everything we need.
  const absl::Time give_up = MonotonicNow() + std::min(options_.timeout, kFinishWithin);
  const uint64_t request = next_request_++;
  OutgoingMessage done(wire::Kind::DONE);
  done.header().setJobId(options_.credentials.job_id);
  done.header().setSenderRole(wire::Role::CONV_WORKER);
  done.header().setSenderRank(options_.conv_rank);
  done.header().setRequestId(request);
  int sends = 0;
  absl::Time resend_at = absl::InfinitePast();
  while (true) {
    const absl::Time now = MonotonicNow();
    if (now >= give_up) {
      LogInfo("fc worker %d did not answer our done (it may have gone)", options_.fc_rank);
      return;
    }
    if (now >= resend_at) {
      if (!channel_->Send(done).ok()) return;  // the FC worker is gone
      resend_at = now + round_trip_.TimeoutAfter(++sends);
    }
    absl::StatusOr<std::optional<RawMessage>> raw = channel_->ReceiveNow();
    if (!raw.ok()) return;  // closed: the FC worker has gone
    if (!raw->has_value()) {
      WaitReadable(*channel_, std::min(give_up, resend_at) - now);
      continue;
    }
    absl::StatusOr<IncomingMessage> reply = Decode(**std::move(raw), options_.limits);
    if (reply.ok() && reply->header().getRequestId() == request) return;
  }
}

absl::StatusOr<std::vector<int32_t>> ReadActivations(const IncomingMessage& m,
                                                     const Shape& expected, int64_t classes) {
  const auto h = m.header();
  if (TypeOf(h) != wire::stanza::Kind::ACTIVATIONS) {
    return absl::InvalidArgumentError(
        absl::StrCat("an FC worker does not accept ", KindName(TypeOf(h)), " messages"));
  }
  std::vector<int64_t> dims;
  for (int64_t d : BodyOf<wire::stanza::Body>(h).getShape()) dims.push_back(d);
  if (dims != expected.dims()) {
    // Shape() of any dims, even negative ones, prints them as received.
    std::string received = "[";
    for (size_t i = 0; i < dims.size(); ++i) absl::StrAppend(&received, i ? ", " : "", dims[i]);
    received += "]";
    return absl::InvalidArgumentError(absl::StrCat("activations of shape ", received,
                                                   ", expected ", expected.ToString()));
  }
  const int64_t batch = expected[0];
  const wire::DataType type = h.getDataType();
  if (type != wire::DataType::F32 && type != wire::DataType::BF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("activations of unknown data type ", static_cast<int>(type)));
  }
  const size_t element = ElementBytes(type);
  if (m.num_frames() != 2 || m.frame_size(0) != static_cast<size_t>(expected.numel()) * element ||
      m.frame_size(1) != static_cast<size_t>(batch) * 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "activations of shape ", expected.ToString(), " in ", WireFormatName(type),
        " need 2 frames of ", expected.numel() * element, " and ", batch * 4,
        " bytes (activations, int32 labels)"));
  }
  std::vector<int32_t> labels(batch);
  std::memcpy(labels.data(), m.frame_data(1), batch * sizeof(int32_t));
  for (int64_t i = 0; i < batch; ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", labels[i], " of sample ", i, " is outside [0, ", classes, ")"));
    }
  }
  return labels;
}

}  // namespace strata
