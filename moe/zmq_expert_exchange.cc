#include "moe/zmq_expert_exchange.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/log.h"

namespace strata {
namespace {

// Blocks that may wait for their turn; a flood beyond it is refused.
constexpr size_t kMaxEarlyBlocks = 4096;
// Messages read from the inbox per poll; what a Receive does not reach
// waits in `delivered_` for the next.
constexpr int kMessagesPerPoll = 64;
constexpr int kCloseLingerMs = 2000;
constexpr uint8_t kLastPhase = static_cast<uint8_t>(moe::ExchangePhase::kWeightGrads);

}  // namespace

absl::StatusOr<std::unique_ptr<ZmqExpertExchange>> ZmqExpertExchange::Bind(
    const ServingAddress& serving, const ExpertExchangeOptions& options) {
  if (options.rank < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("expert exchange rank ", options.rank, " is negative"));
  }
  std::unique_ptr<ZmqExpertExchange> exchange(new ZmqExpertExchange(options));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ZmqEndpoint> inbox,
                          ZmqEndpoint::Bind(exchange->context_, serving, options.limits));
  exchange->inbox_ = Decorated(std::move(inbox), options.decorate_endpoint);
  return exchange;
}

ZmqExpertExchange::ZmqExpertExchange(const ExpertExchangeOptions& options)
    : options_(options),
      context_(1),
      admission_(absl::StrCat(options.peer_name, " ", options.rank, "'s expert exchange"),
                 options.credentials) {}

ZmqExpertExchange::~ZmqExpertExchange() {
  for (auto& outbox : outboxes_) {
    if (outbox != nullptr) outbox->raw().set(zmq::sockopt::linger, kCloseLingerMs);
  }
}

absl::Status ZmqExpertExchange::Connect(const std::vector<std::string>& addresses) {
  if (rank() >= static_cast<int>(addresses.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("expert exchange rank ", rank(), " is outside a group of ", addresses.size()));
  }
  options_.size = static_cast<int>(addresses.size());
  outboxes_.clear();
  outboxes_.resize(addresses.size());
  for (int p = 0; p < size(); ++p) {
    if (p == rank()) continue;
    STRATA_ASSIGN_OR_RETURN(outboxes_[p], Socket::Connect(context_, SocketKind::kDealer,
                                                          addresses[p], options_.limits));
    // Blocks follow on the same connection, after the HELLO.
    STRATA_RETURN_IF_ERROR(
        SayHello(*outboxes_[p], admission_.credentials(), wire::Role::FC_WORKER, rank()));
  }
  return absl::OkStatus();
}

uint64_t ZmqExpertExchange::bytes_sent() const {
  uint64_t total = 0;
  for (const auto& outbox : outboxes_) {
    if (outbox != nullptr) total += outbox->counters().bytes_sent;
  }
  return total;
}

absl::Status ZmqExpertExchange::Send(int to, const moe::ExchangeTag& tag,
                                     const moe::ExchangeBlock& block) {
  STRATA_CHECK(to >= 0 && to < size() && outboxes_[to] != nullptr,
               absl::StrCat("expert exchange: no connection to process ", to));
  OutgoingMessage m(wire::Kind::EXPERT_BLOCK);
  auto h = m.header();
  h.setJobId(options_.credentials.job_id);
  h.setSenderRole(wire::Role::FC_WORKER);
  h.setSenderRank(rank());
  auto t = h.initExchangeTag();
  t.setCall(tag.call);
  t.setLayer(tag.layer);
  t.setPhase(static_cast<uint8_t>(tag.phase));
  t.setChunk(tag.chunk);
  t.setChunks(tag.chunks);
  auto counts = h.initCounts(static_cast<unsigned>(block.counts.size()));
  for (size_t i = 0; i < block.counts.size(); ++i)
    counts.set(static_cast<unsigned>(i), block.counts[i]);
  int64_t rows = 0;
  for (int64_t c : block.counts) rows += c;
  auto shape = h.initShape(2);
  shape.set(0, rows);
  shape.set(1, block.rows.defined() ? block.rows.dim(1) : 0);
  if (block.rows.defined()) m.AddFrame(block.rows);
  return outboxes_[to]->Send(m);
}

absl::StatusOr<ReceivedBlock> ReadExpertBlock(const IncomingMessage& m, int rank, int size) {
  const auto h = m.header();
  if (h.getKind() != wire::Kind::EXPERT_BLOCK) {
    return absl::InvalidArgumentError(
        absl::StrCat("an expert exchange does not accept ", KindName(h.getKind()), " messages"));
  }
  ReceivedBlock out;
  out.sender = h.getSenderRank();
  if (out.sender < 0 || out.sender >= size || out.sender == rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a block from process ", out.sender, ", which is not a peer in this group of ", size));
  }
  const auto t = h.getExchangeTag();
  if (t.getPhase() > kLastPhase || t.getChunks() < 1 || t.getChunk() < 0 ||
      t.getChunk() >= t.getChunks()) {
    return absl::InvalidArgumentError(absl::StrCat("a block with phase ", t.getPhase(), ", chunk ",
                                                   t.getChunk(), "/", t.getChunks()));
  }
  moe::ExchangeTag& tag = out.tag;
  tag.call = t.getCall();
  tag.layer = t.getLayer();
  tag.phase = static_cast<moe::ExchangePhase>(t.getPhase());
  tag.chunk = t.getChunk();
  tag.chunks = t.getChunks();
  moe::ExchangeBlock& block = out.block;
  int64_t rows = 0;
  for (int64_t c : h.getCounts()) {
    if (c < 0) return absl::InvalidArgumentError(absl::StrCat("a negative count ", c));
    // Bounded so that the sum cannot overflow.
    if (c > (int64_t{1} << 40)) {
      return absl::InvalidArgumentError(absl::StrCat("a count of ", c, " rows"));
    }
    block.counts.push_back(c);
    rows += c;
  }
  if (rows > (int64_t{1} << 40)) {
    return absl::InvalidArgumentError(absl::StrCat("counts of ", rows, " rows in all"));
  }
  const auto shape = h.getShape();
  if (shape.size() != 2 || shape[0] != rows || shape[1] < 0 || shape[1] > (int64_t{1} << 20)) {
    std::vector<int64_t> dims;
    for (int64_t d : shape) dims.push_back(d);
    return absl::InvalidArgumentError(absl::StrCat(tag.ToString(), ": shape [",
                                                   absl::StrJoin(dims, ", "), "] for ", rows,
                                                   " counted rows, expected [", rows, ", width]"));
  }
  const uint64_t bytes = static_cast<uint64_t>(rows) * static_cast<uint64_t>(shape[1]) * 4;
  const size_t frames = bytes > 0 ? 1 : 0;
  if (m.num_frames() != frames || (frames == 1 && m.frame_size(0) != bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(tag.ToString(), ": ", m.num_frames(), " data frames of ",
                     m.num_frames() > 0 ? m.frame_size(0) : 0, " bytes for rows [", rows, ", ",
                     shape[1], "], expected ", frames, " of ", bytes));
  }
  if (frames == 1) {
    block.rows = Tensor::Empty({rows, shape[1]});
    m.CopyFrameTo(0, block.rows.data());
  }
  return out;
}

absl::StatusOr<std::optional<std::pair<ZmqExpertExchange::Key, moe::ExchangeBlock>>>
ZmqExpertExchange::Unpack(RawMessage raw) {
  STRATA_ASSIGN_OR_RETURN(IncomingMessage m, Decode(std::move(raw), options_.limits));
  const auto h = m.header();
  if (h.getKind() == wire::Kind::HELLO) {
    STRATA_RETURN_IF_ERROR(admission_
                               .Admit(m,
                                      [this](const Peer& peer) {
                                        if (peer.role == wire::Role::FC_WORKER && peer.rank >= 0 &&
                                            peer.rank < size() && peer.rank != rank()) {
                                          return absl::OkStatus();
                                        }
                                        return absl::PermissionDeniedError(absl::StrCat(
                                            DescribePeer(peer.role, peer.rank),
                                            " is not a peer in this group of ", size()));
                                      })
                               .status());
    return std::nullopt;
  }
  STRATA_RETURN_IF_ERROR(admission_.Check(m).status());
  STRATA_ASSIGN_OR_RETURN(ReceivedBlock received, ReadExpertBlock(m, rank(), size()));
  return std::make_optional(
      std::make_pair(Key{received.sender, received.tag}, std::move(received.block)));
}

std::string ZmqExpertExchange::Describe(const Key& key) const {
  return absl::StrCat(key.second.ToString(), " from ", options_.peer_name, " ", key.first);
}

void ZmqExpertExchange::Refuse(const std::string& what, const absl::Status& why) {
  ++refused_;
  last_refusal_ = absl::StrCat(what, ": ", why.message());
  LogWarning("refused %s: %s", what.c_str(), std::string(why.message()).c_str());
}

absl::StatusOr<moe::ExchangeBlock> ZmqExpertExchange::Receive(int from, const moe::ExchangeTag& tag,
                                                              const moe::BlockExpectation& expect) {
  STRATA_CHECK(from >= 0 && from < size() && from != rank(),
               absl::StrCat("expert exchange: cannot receive from process ", from));
  int64_t& current = current_call_[tag.layer];
  current = std::max(current, tag.call);
  const Key wanted{from, tag};
  auto early = early_.find(wanted);
  if (early != early_.end()) {
    moe::ExchangeBlock block = std::move(early->second);
    early_.erase(early);
    const absl::Status fits = moe::CheckBlock(block, expect);
    if (fits.ok()) return block;
    Refuse(Describe(wanted), fits);
  }
  const absl::Time deadline = MonotonicNow() + options_.timeout;
  ScopedWait wait(wait_observer_);
  MessageEndpoint* inbox[] = {inbox_.get()};
  while (true) {
    const absl::Time now = MonotonicNow();
    if (delivered_.empty()) {
      if (now >= deadline) {
        return absl::DeadlineExceededError(absl::StrCat(
            "no ", Describe(wanted), " within ", absl::FormatDuration(options_.timeout),
            last_refusal_.empty()
                ? " (is it alive and in the same step?)"
                : absl::StrCat(" (the last message refused here: ", last_refusal_, ")")));
      }
      STRATA_ASSIGN_OR_RETURN(EndpointEvents events,
                              PollEndpoints(inbox, deadline - now, kMessagesPerPoll));
      for (const auto& [peer, why] : events.refused) Refuse("a message", why);
      for (RawMessage& raw : events.messages) delivered_.push_back(std::move(raw));
      continue;
    }
    RawMessage raw = std::move(delivered_.front());
    delivered_.pop_front();
    absl::StatusOr<std::optional<std::pair<Key, moe::ExchangeBlock>>> got = Unpack(std::move(raw));
    if (!got.ok()) {
      Refuse("a block", got.status());
      continue;
    }
    if (!got->has_value()) continue;  // a peer registered
    auto& [key, block] = **got;
    if (key == wanted) {
      const absl::Status fits = moe::CheckBlock(block, expect);
      if (fits.ok()) return std::move(block);
      Refuse(Describe(wanted), fits);
      continue;
    }
    const moe::ExchangeTag& t = key.second;
    auto layer_call = current_call_.find(t.layer);
    if (layer_call != current_call_.end() && t.call < layer_call->second) {
      Refuse(Describe(key), absl::FailedPreconditionError("that call is already finished here"));
    } else if (t.call == tag.call && t.layer == tag.layer && t.phase == tag.phase &&
               t.chunks != tag.chunks) {
      Refuse(Describe(key), absl::InvalidArgumentError(absl::StrCat(
                                "the sender uses pipelining degree ", t.chunks, ", this process ",
                                tag.chunks, " (the group must agree)")));
    } else if (early_.size() >= kMaxEarlyBlocks) {
      Refuse(Describe(key), absl::ResourceExhaustedError(absl::StrCat(
                                kMaxEarlyBlocks, " blocks are already waiting for their turn")));
    } else {
      early_[key] = std::move(block);
    }
  }
}

}  // namespace strata
