#include "moe/zmq_expert_exchange.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/log.h"
#include "moe/expert_wire.h"

namespace strata {
namespace {

// Blocks that may wait for their turn; a flood beyond it is refused.
constexpr size_t kMaxEarlyBlocks = 4096;
// Messages read from the inbox per poll; what a Receive does not reach
// waits in `delivered_` for the next.
constexpr int kMessagesPerPoll = 64;
constexpr int kCloseLingerMs = 2000;
// How long the courier's poll may block: a stop or a resend due is noticed
// within it.
constexpr absl::Duration kCourierTick = absl::Milliseconds(20);
constexpr uint8_t kLastPhase = static_cast<uint8_t>(moe::ExchangePhase::kWeightGrads);

void FillTag(wire::Header::Builder h, const moe::ExchangeTag& tag) {
  auto t = BodyOf<wire::moe::Body>(h).initTag();
  t.setCall(tag.call);
  t.setLayer(tag.layer);
  t.setPhase(static_cast<uint8_t>(tag.phase));
  t.setChunk(tag.chunk);
  t.setChunks(tag.chunks);
}

// The tag of a block or an ack, checked.
absl::StatusOr<moe::ExchangeTag> ReadTag(const wire::Header::Reader& h) {
  const auto t = BodyOf<wire::moe::Body>(h).getTag();
  if (t.getPhase() > kLastPhase || t.getChunks() < 1 || t.getChunk() < 0 ||
      t.getChunk() >= t.getChunks()) {
    return absl::InvalidArgumentError(absl::StrCat("a block with phase ", t.getPhase(), ", chunk ",
                                                   t.getChunk(), "/", t.getChunks()));
  }
  moe::ExchangeTag tag;
  tag.call = t.getCall();
  tag.layer = t.getLayer();
  tag.phase = static_cast<moe::ExchangePhase>(t.getPhase());
  tag.chunk = t.getChunk();
  tag.chunks = t.getChunks();
  return tag;
}

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
  stopping_.store(true);
  if (courier_.joinable()) courier_.join();
  absl::MutexLock lock(&out_mu_);
  for (auto& outbox : outboxes_) {
    if (outbox != nullptr) outbox->raw().set(zmq::sockopt::linger, kCloseLingerMs);
  }
}

absl::Status ZmqExpertExchange::Connect(const std::vector<std::string>& addresses) {
  if (rank() >= static_cast<int>(addresses.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("expert exchange rank ", rank(), " is outside a group of ", addresses.size()));
  }
  STRATA_CHECK(!courier_.joinable(), "expert exchange: Connect called twice");
  options_.size = static_cast<int>(addresses.size());
  {
    absl::MutexLock lock(&out_mu_);
    outboxes_.clear();
    outboxes_.resize(addresses.size());
    round_trips_.assign(addresses.size(),
                        RoundTrip(GivingUpAfter(options_.timeout, options_.resend)));
    for (int p = 0; p < size(); ++p) {
      if (p == rank()) continue;
      STRATA_ASSIGN_OR_RETURN(outboxes_[p], Socket::Connect(context_, SocketKind::kDealer,
                                                            addresses[p], options_.limits));
      // Blocks follow on the same connection, after the HELLO.
      STRATA_RETURN_IF_ERROR(
          SayHello(*outboxes_[p], admission_.credentials(), wire::Role::FC_WORKER, rank()));
    }
  }
  courier_ = std::thread([this] { Courier(); });
  return absl::OkStatus();
}

uint64_t ZmqExpertExchange::bytes_sent() const {
  absl::MutexLock lock(&out_mu_);
  uint64_t total = 0;
  for (const auto& outbox : outboxes_) {
    if (outbox != nullptr) total += outbox->counters().bytes_sent;
  }
  return total;
}

uint64_t ZmqExpertExchange::refused() const {
  absl::MutexLock lock(&mu_);
  return refused_;
}

absl::Status ZmqExpertExchange::Send(int to, const moe::ExchangeTag& tag,
                                     const moe::ExchangeBlock& block) {
  absl::MutexLock lock(&out_mu_);
  STRATA_CHECK(to >= 0 && to < size() && outboxes_[to] != nullptr,
               absl::StrCat("expert exchange: no connection to process ", to));
  STRATA_RETURN_IF_ERROR(SendBlockLocked(to, tag, block));
  unacked_[Key{to, tag}] = Unacked{block, MonotonicNow(), 1};
  return absl::OkStatus();
}

absl::Status ZmqExpertExchange::SendBlockLocked(int to, const moe::ExchangeTag& tag,
                                                const moe::ExchangeBlock& block) {
  OutgoingMessage m(wire::moe::Kind::EXPERT_BLOCK);
  auto h = m.header();
  h.setJobId(options_.credentials.job_id);
  h.setSenderRole(wire::Role::FC_WORKER);
  h.setSenderRank(rank());
  FillTag(h, tag);
  auto counts = BodyOf<wire::moe::Body>(h).initCounts(static_cast<unsigned>(block.counts.size()));
  for (size_t i = 0; i < block.counts.size(); ++i)
    counts.set(static_cast<unsigned>(i), block.counts[i]);
  int64_t rows = 0;
  for (int64_t c : block.counts) rows += c;
  auto shape = BodyOf<wire::moe::Body>(h).initShape(2);
  shape.set(0, rows);
  shape.set(1, block.rows.defined() ? block.rows.dim(1) : 0);
  if (block.rows.defined()) m.AddFrame(block.rows);
  return outboxes_[to]->Send(m);
}

void ZmqExpertExchange::SendAck(int to, const moe::ExchangeTag& tag) {
  OutgoingMessage m(wire::moe::Kind::EXPERT_BLOCK_ACK);
  auto h = m.header();
  h.setJobId(options_.credentials.job_id);
  h.setSenderRole(wire::Role::FC_WORKER);
  h.setSenderRank(rank());
  FillTag(h, tag);
  absl::MutexLock lock(&out_mu_);
  // A lost ack costs a resend, which is acknowledged again.
  (void)outboxes_[to]->Send(m);
}

absl::StatusOr<ReceivedBlock> ReadExpertBlock(const IncomingMessage& m, int rank, int size) {
  const auto h = m.header();
  if (TypeOf(h) != wire::moe::Kind::EXPERT_BLOCK) {
    return absl::InvalidArgumentError(
        absl::StrCat("an expert exchange does not accept ", KindName(TypeOf(h)), " messages"));
  }
  ReceivedBlock out;
  out.sender = h.getSenderRank();
  if (out.sender < 0 || out.sender >= size || out.sender == rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a block from process ", out.sender, ", which is not a peer in this group of ", size));
  }
  STRATA_ASSIGN_OR_RETURN(out.tag, ReadTag(h));
  const moe::ExchangeTag& tag = out.tag;
  moe::ExchangeBlock& block = out.block;
  int64_t rows = 0;
  for (int64_t c : BodyOf<wire::moe::Body>(h).getCounts()) {
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
  const auto shape = BodyOf<wire::moe::Body>(h).getShape();
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

absl::StatusOr<ZmqExpertExchange::Unpacked> ZmqExpertExchange::Unpack(RawMessage raw) {
  STRATA_ASSIGN_OR_RETURN(IncomingMessage m, Decode(std::move(raw), options_.limits));
  const auto h = m.header();
  Unpacked out;
  if (TypeOf(h) == wire::Kind::HELLO) {
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
    return out;
  }
  STRATA_RETURN_IF_ERROR(admission_.Check(m).status());
  if (TypeOf(h) == wire::moe::Kind::EXPERT_BLOCK_ACK) {
    const int from = h.getSenderRank();
    if (from < 0 || from >= size() || from == rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat("an ack from process ", from, ", which is not a peer in this group"));
    }
    STRATA_ASSIGN_OR_RETURN(moe::ExchangeTag tag, ReadTag(h));
    out.what = Unpacked::kAck;
    out.key = Key{from, tag};
    return out;
  }
  STRATA_ASSIGN_OR_RETURN(ReceivedBlock received, ReadExpertBlock(m, rank(), size()));
  out.what = Unpacked::kBlock;
  out.key = Key{received.sender, received.tag};
  out.block = std::move(received.block);
  return out;
}

std::string ZmqExpertExchange::Describe(const Key& key) const {
  return absl::StrCat(key.second.ToString(), " from ", options_.peer_name, " ", key.first);
}

void ZmqExpertExchange::Refuse(const std::string& what, const absl::Status& why) {
  {
    absl::MutexLock lock(&mu_);
    ++refused_;
    last_refusal_ = absl::StrCat(what, ": ", why.message());
  }
  LogRefusal("refused %s: %s", what.c_str(), std::string(why.message()).c_str());
}

void ZmqExpertExchange::Courier() {
  MessageEndpoint* inbox[] = {inbox_.get()};
  absl::Time give_up = absl::InfiniteFuture();  // once stopping
  while (true) {
    const absl::Duration next_resend = ResendOverdue();
    if (stopping_.load()) {
      if (give_up == absl::InfiniteFuture())
        give_up = MonotonicNow() + absl::Milliseconds(kCloseLingerMs);
      absl::MutexLock lock(&out_mu_);
      if (unacked_.empty() || MonotonicNow() >= give_up) return;
    }
    // Short enough to notice a stop and the next resend in time.
    const absl::Duration wait = std::min(next_resend, kCourierTick);
    absl::StatusOr<EndpointEvents> events = PollEndpoints(inbox, wait, kMessagesPerPoll);
    if (!events.ok()) {
      Refuse("the inbox", events.status());
      continue;
    }
    bytes_received_.store(inbox_->bytes_received());
    for (const auto& [peer, why] : events->refused) Refuse("a message", why);
    for (RawMessage& raw : events->messages) Take(std::move(raw));
  }
}

void ZmqExpertExchange::Take(RawMessage raw) {
  absl::StatusOr<Unpacked> got = Unpack(std::move(raw));
  if (!got.ok()) {
    Refuse("a block", got.status());
    return;
  }
  if (got->what == Unpacked::kHello) return;  // a peer registered
  const Key& key = got->key;
  if (got->what == Unpacked::kAck) {
    absl::MutexLock lock(&out_mu_);
    auto it = unacked_.find(key);
    if (it == unacked_.end()) return;  // a repeated ack
    // Answer times of blocks sent once only (Karn's rule).
    if (it->second.sends == 1) round_trips_[key.first].Sample(MonotonicNow() - it->second.sent_at);
    unacked_.erase(it);
    return;
  }
  const moe::ExchangeTag& t = key.second;
  bool acknowledge = true;
  std::string refusal;
  absl::Status why;
  {
    absl::MutexLock lock(&mu_);
    auto layer_call = current_call_.find(t.layer);
    const bool finished = layer_call != current_call_.end() && t.call < layer_call->second;
    if (seen_.count(key) > 0 || finished) {
      // Taken already: sent again before our ack reached the sender, or
      // repeated on the way. Answered again and dropped.
      duplicates_.fetch_add(1);
    } else if (arrived_count_ >= kMaxEarlyBlocks) {
      acknowledge = false;  // it will come again
      refusal = Describe(key);
      why = absl::ResourceExhaustedError(
          absl::StrCat(kMaxEarlyBlocks, " blocks are already waiting for their turn"));
    } else {
      arrived_[key].push_back(std::move(got->block));
      ++arrived_count_;
    }
  }
  if (!refusal.empty()) Refuse(refusal, why);
  if (acknowledge) SendAck(key.first, t);
}

absl::Duration ZmqExpertExchange::ResendOverdue() {
  absl::MutexLock lock(&out_mu_);
  const absl::Time now = MonotonicNow();
  absl::Duration next = absl::InfiniteDuration();
  std::vector<bool> timed_out(round_trips_.size(), false);
  std::vector<bool> hello_again(round_trips_.size(), false);
  for (auto& [key, u] : unacked_) {
    const absl::Time due = u.sent_at + round_trips_[key.first].TimeoutAfter(u.sends);
    if (now < due) {
      next = std::min(next, due - now);
      continue;
    }
    // Sent twice and still unanswered: perhaps our HELLO was lost and the
    // peer refuses the blocks of a connection it does not know. Saying it
    // again costs little (a peer takes a repeated HELLO).
    if (u.sends >= 2 && !hello_again[key.first]) {
      hello_again[key.first] = true;
      (void)SayHello(*outboxes_[key.first], admission_.credentials(), wire::Role::FC_WORKER,
                     rank());
    }
    if (!SendBlockLocked(key.first, key.second, u.block).ok()) continue;  // a full queue: later
    ++u.sends;
    u.sent_at = now;
    timed_out[key.first] = true;
    resent_.fetch_add(1);
    next = std::min(next, round_trips_[key.first].TimeoutAfter(u.sends));
  }
  for (size_t p = 0; p < timed_out.size(); ++p) {
    if (timed_out[p]) round_trips_[p].TimedOut();
  }
  return next;
}

absl::StatusOr<moe::ExchangeBlock> ZmqExpertExchange::Receive(int from, const moe::ExchangeTag& tag,
                                                              const moe::BlockExpectation& expect) {
  STRATA_CHECK(from >= 0 && from < size() && from != rank(),
               absl::StrCat("expert exchange: cannot receive from process ", from));
  const Key wanted{from, tag};
  const absl::Time deadline = MonotonicNow() + options_.timeout;
  std::optional<ScopedWait> wait;
  absl::MutexLock lock(&mu_);
  int64_t& current = current_call_[tag.layer];
  current = std::max(current, tag.call);
  // Takes the copies of `key` out of arrived_.
  auto take = [this](std::map<Key, std::deque<moe::ExchangeBlock>>::iterator it)
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                    std::deque<moe::ExchangeBlock> copies = std::move(it->second);
                    arrived_count_ -= copies.size();
                    arrived_.erase(it);
                    return copies;
                  };
  std::vector<std::pair<std::string, absl::Status>> refusals;  // logged without the lock
  auto refuse_all = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (refusals.empty()) return;
    mu_.Unlock();
    for (const auto& [what, why] : refusals) Refuse(what, why);
    mu_.Lock();
    refusals.clear();
  };
  while (true) {
    // A block of this call and phase from a sender that pipelines
    // differently is never the one awaited.
    for (auto other = arrived_.begin(); other != arrived_.end();) {
      const Key& key = other->first;
      const moe::ExchangeTag& t = key.second;
      if (key.first == from && t.call == tag.call && t.layer == tag.layer && t.phase == tag.phase &&
          t.chunks != tag.chunks) {
        refusals.emplace_back(Describe(key),
                              absl::InvalidArgumentError(absl::StrCat(
                                  "the sender uses pipelining degree ", t.chunks, ", this process ",
                                  tag.chunks, " (the group must agree)")));
        auto next = std::next(other);
        take(other);
        other = next;
      } else {
        ++other;
      }
    }
    auto it = arrived_.find(wanted);
    if (it != arrived_.end()) {
      std::deque<moe::ExchangeBlock> copies = take(it);
      while (!copies.empty()) {
        moe::ExchangeBlock block = std::move(copies.front());
        copies.pop_front();
        const absl::Status fits = moe::CheckBlock(block, expect);
        if (!fits.ok()) {
          refusals.emplace_back(Describe(wanted), fits);
          continue;
        }
        // Taken: later copies are duplicates, and so are copies of blocks
        // two or more calls behind (no peer sends those again).
        duplicates_.fetch_add(copies.size());
        seen_.insert(wanted);
        for (auto s = seen_.begin(); s != seen_.end();) {
          s = s->second.layer == tag.layer && s->second.call + 2 < current ? seen_.erase(s)
                                                                           : std::next(s);
        }
        refuse_all();
        return block;
      }
      refuse_all();
      continue;
    }
    refuse_all();
    if (!wait.has_value()) wait.emplace(wait_observer_);
    auto has_wanted = [this, &wanted]()
                          ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return arrived_.count(wanted) > 0; };
    // The deadline is on the monotonic clock, the Mutex's on the wall clock.
    const absl::Duration left = deadline - MonotonicNow();
    if (!mu_.AwaitWithTimeout(absl::Condition(&has_wanted), left) && arrived_.count(wanted) == 0) {
      return absl::DeadlineExceededError(absl::StrCat(
          "no ", Describe(wanted), " within ", absl::FormatDuration(options_.timeout),
          last_refusal_.empty()
              ? " (is it alive and in the same step?)"
              : absl::StrCat(" (the last message refused here: ", last_refusal_, ")")));
    }
  }
}

}  // namespace strata
