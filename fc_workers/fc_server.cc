#include "fc_workers/fc_server.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/net/fc_link.h"
#include "core/net/stanza_wire.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/log.h"

namespace strata {

FcServer::FcServer(MessageEndpoint& endpoint, const WireLimits& limits,
                   const std::vector<int>& conv_ranks, Shape boundary, int64_t classes,
                   const JobCredentials& credentials, int rank)
    : endpoint_(endpoint),
      limits_(limits),
      admission_(absl::StrCat("fc worker ", rank), credentials),
      boundary_(std::move(boundary)),
      classes_(classes),
      job_id_(credentials.job_id),
      rank_(rank) {
  for (int r : conv_ranks) peers_[r] = ConvPeer();
}

void FcServer::TakeRows(const std::vector<int64_t>& rows) {
  for (auto& [r, p] : peers_) p.rows = rows[r];
}

void FcServer::Begin(int64_t iteration) {
  int64_t total = 0;
  for (const auto& [r, p] : peers_) total += p.rows;
  std::vector<int64_t> dims = {total};
  for (int64_t d : boundary_.dims()) dims.push_back(d);
  batch_ = Tensor::Empty(Shape(dims));
  int64_t row = 0;
  for (auto& [r, p] : peers_) {
    p.activations = batch_.Slice(row, row + p.rows);
    p.arrived = false;
    p.taken = false;
    row += p.rows;
  }
  for (auto& [r, p] : peers_) {
    if (!p.early.has_value()) continue;
    IncomingMessage m = std::move(*p.early);
    p.early.reset();
    absl::Status s = Accept(m, iteration);
    if (!s.ok()) Refuse(m.identity(), m.header().getRequestId(), s);
  }
}

absl::Status FcServer::Gather(int64_t iteration, absl::Duration timeout) {
  Begin(iteration);
  return ReceiveUntil([this] { return AllArrived(); }, iteration, timeout);
}

absl::StatusOr<int> FcServer::NextArrival(int64_t iteration, absl::Duration timeout) {
  auto untaken = [this]() -> int {
    for (const auto& [r, p] : peers_) {
      if (p.arrived && !p.taken) return r;
    }
    return -1;
  };
  STRATA_RETURN_IF_ERROR(ReceiveUntil([&untaken] { return untaken() >= 0; }, iteration, timeout));
  const int rank = untaken();
  peers_[rank].taken = true;
  return rank;
}

std::pair<Tensor, std::vector<int32_t>> FcServer::Batch() const {
  std::vector<int32_t> labels;
  for (const auto& [r, p] : peers_) labels.insert(labels.end(), p.labels.begin(), p.labels.end());
  return {batch_, labels};
}

std::pair<Tensor, std::vector<int32_t>> FcServer::Rows(int rank) const {
  const ConvPeer& p = peers_.at(rank);
  return {p.activations, p.labels};
}

void FcServer::AnswerOne(int rank, int64_t iteration, const Tensor& grads) {
  ConvPeer& p = peers_.at(rank);
  p.answered_grads = EncodeFloats(grads, p.data_type);
  p.answered_type = p.data_type;
  p.answered_iteration = iteration;
  p.answered_request = p.request_id;
  Send(p);
}

void FcServer::Answer(int64_t iteration, const Tensor& grads) {
  int64_t row = 0;
  for (auto& [r, p] : peers_) {
    AnswerOne(r, iteration, grads.Slice(row, row + p.rows).Clone());
    row += p.rows;
  }
}

void FcServer::ServeUntilDone(int64_t iterations, absl::Duration timeout) {
  const absl::Time deadline = MonotonicNow() + timeout;
  MessageEndpoint* endpoints[] = {&endpoint_};
  while (!AllDone()) {
    const absl::Time now = MonotonicNow();
    if (now >= deadline) {
      LogInfo("not every conv worker said it is done within %s; leaving",
              absl::FormatDuration(timeout).c_str());
      return;
    }
    absl::StatusOr<EndpointEvents> events =
        PollEndpoints(endpoints, deadline - now, kMaxMessagesPerPoll);
    if (!events.ok()) return;
    HandleAll(*events, iterations);
  }
}

absl::Status FcServer::ReceiveUntil(const std::function<bool()>& done, int64_t iteration,
                                    absl::Duration timeout) {
  if (done()) return absl::OkStatus();  // no wait: the device stays held
  const absl::Time deadline = MonotonicNow() + timeout;
  ScopedWait wait(wait_observer_);
  while (!done()) {
    const absl::Time now = MonotonicNow();
    if (now >= deadline) {
      std::vector<int> missing;
      for (const auto& [r, p] : peers_) {
        if (!p.arrived) missing.push_back(r);
      }
      return absl::DeadlineExceededError(
          absl::StrCat("no activations from conv worker(s) ", absl::StrJoin(missing, ", "),
                       " for iteration ", iteration, " within ", absl::FormatDuration(timeout)));
    }
    MessageEndpoint* endpoints[] = {&endpoint_};
    STRATA_ASSIGN_OR_RETURN(EndpointEvents events,
                            PollEndpoints(endpoints, deadline - now, kMaxMessagesPerPoll));
    HandleAll(events, iteration);
  }
  return absl::OkStatus();
}

void FcServer::HandleAll(EndpointEvents& events, int64_t iteration) {
  for (RawMessage& raw : events.messages) {
    const std::string identity = raw.identity;
    const uint64_t request_id = PeekRequestId(raw, limits_);
    absl::StatusOr<IncomingMessage> message = Decode(std::move(raw), limits_);
    absl::Status s = message.ok() ? Handle(*message, iteration) : message.status();
    if (!s.ok()) Refuse(identity, request_id, s);
  }
  for (const auto& [identity, status] : events.refused) Refuse(identity, 0, status);
}

void FcServer::Refuse(const std::string& identity, uint64_t request_id, const absl::Status& why) {
  ++refused_;
  LogRefusal("refused a request: %s", std::string(why.message()).c_str());
  OutgoingMessage reply(wire::Kind::ERROR);
  reply.header().setJobId(job_id_);
  reply.header().setRequestId(request_id);
  FillError(reply.header(), why);
  (void)endpoint_.Send(identity, reply);
}

bool FcServer::AllDone() const {
  for (const auto& [r, p] : peers_) {
    if (!p.done) return false;
  }
  return true;
}

bool FcServer::AllArrived() const {
  for (const auto& [r, p] : peers_) {
    if (!p.arrived) return false;
  }
  return true;
}

void FcServer::Send(const ConvPeer& p) {
  OutgoingMessage reply(wire::stanza::Kind::ACTIVATION_GRADS);
  auto h = reply.header();
  h.setJobId(job_id_);
  h.setIteration(p.answered_iteration);
  h.setRequestId(p.answered_request);
  h.setSenderRole(wire::Role::FC_WORKER);
  h.setSenderRank(rank_);
  auto shape =
      BodyOf<wire::stanza::Body>(h).initShape(static_cast<unsigned>(p.answered_grads.rank()));
  for (int i = 0; i < p.answered_grads.rank(); ++i) {
    shape.set(static_cast<unsigned>(i), p.answered_grads.dim(i));
  }
  h.setDataType(p.answered_type);
  reply.AddFrame(p.answered_grads);
  (void)endpoint_.Send(p.identity, reply);
}

absl::Status FcServer::Handle(IncomingMessage& m, int64_t iteration) {
  if (TypeOf(m.header()) != wire::Kind::HELLO) {
    STRATA_RETURN_IF_ERROR(admission_.Check(m).status());
    return Accept(m, iteration);
  }
  STRATA_RETURN_IF_ERROR(admission_
                             .Admit(m,
                                    [this](const Peer& peer) {
                                      if (peer.role == wire::Role::CONV_WORKER &&
                                          peers_.count(peer.rank) != 0) {
                                        return absl::OkStatus();
                                      }
                                      return absl::PermissionDeniedError(absl::StrCat(
                                          DescribePeer(peer.role, peer.rank),
                                          " is not a conv worker served by fc worker ", rank_));
                                    })
                             .status());
  OutgoingMessage ack(wire::Kind::HELLO_ACK);
  ack.header().setJobId(job_id_);
  ack.header().setRequestId(m.header().getRequestId());
  return endpoint_.Send(m.identity(), ack).status();
}

absl::Status FcServer::Accept(IncomingMessage& m, int64_t iteration) {
  const auto h = m.header();
  if (TypeOf(h) == wire::Kind::DONE) {
    auto it = peers_.find(h.getSenderRank());
    if (it == peers_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("done from conv worker ", h.getSenderRank(), ", which we do not serve"));
    }
    it->second.done = true;
    OutgoingMessage ack(wire::Kind::SHUTDOWN_ACK);  // answered every time: the ack may be lost
    ack.header().setJobId(job_id_);
    ack.header().setRequestId(h.getRequestId());
    return endpoint_.Send(m.identity(), ack).status();
  }
  const int sender = h.getSenderRank();
  auto it = peers_.find(sender);
  if (it == peers_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("activations from conv worker ", sender,
                                                   ", which is not served by FC worker ", rank_));
  }
  ConvPeer& peer = it->second;
  if (h.getIteration() == iteration + 1 && peer.answered_iteration == iteration) {
    // Answered on arrival and ahead of the others: its rows may change
    // with the next iteration's batch shares, so it is checked then.
    if (peer.early.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("conv worker ", sender,
                                                     " sent activations for iteration ",
                                                     h.getIteration(), " twice before it began"));
    }
    peer.early = std::move(m);
    return absl::OkStatus();
  }
  std::vector<int64_t> expected = {peer.rows};
  for (int64_t d : boundary_.dims()) expected.push_back(d);
  STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> labels,
                          ReadActivations(m, Shape(expected), classes_));
  if (h.getIteration() == peer.answered_iteration && h.getIteration() >= iteration - 1) {
    peer.identity = m.identity();  // a resent request: answer it again
    Send(peer);
    return absl::OkStatus();
  }
  if (h.getIteration() != iteration) {
    return absl::InvalidArgumentError(absl::StrCat("activations for iteration ", h.getIteration(),
                                                   ", expected iteration ", iteration));
  }
  peer.identity = m.identity();
  peer.request_id = h.getRequestId();
  peer.data_type = h.getDataType();
  DecodeFloats(m, 0, peer.data_type, peer.activations.data(), peer.activations.numel());
  peer.labels = std::move(labels);
  peer.arrived = true;
  return absl::OkStatus();
}

}  // namespace strata
