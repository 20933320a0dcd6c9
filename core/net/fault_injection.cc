#include "core/net/fault_injection.h"

#include <deque>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "core/net/transport.h"
#include "core/util/process_name.h"
#include "core/util/rng.h"

namespace strata {
namespace {

class RealClock final : public FaultClock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

RawMessage Copy(const RawMessage& m) {
  RawMessage out;
  out.identity = m.identity;
  out.curve_user = m.curve_user;
  out.dropped_bytes = m.dropped_bytes;
  out.dropped_frames = m.dropped_frames;
  out.descriptor = m.descriptor;
  for (const zmq::message_t& frame : m.frames) out.frames.emplace_back(frame.data(), frame.size());
  return out;
}

// Cuts the last frame to half its bytes (the header when there is no data
// frame): what a connection that broke mid-message would have left.
void Truncate(RawMessage& m) {
  if (m.frames.empty()) return;
  zmq::message_t& last = m.frames.back();
  zmq::message_t half(last.data(), last.size() / 2);
  last = std::move(half);
}

// The name of the process that sent a message with header `h`; "" when
// the header cannot be read or names no such process (a tool, the
// launcher).
std::string SenderName(const std::optional<HeaderGlance>& h) {
  if (!h.has_value()) return "";
  // A cluster map carries its recipient's rank in senderRank (that is how a
  // node learns its rank); only the coordinator, server 0, sends one.
  if (h->type == wire::Kind::CLUSTER_MAP) return ProcessName("server", 0);
  switch (h->sender_role) {
    case wire::Role::SERVER:
      return ProcessName("server", h->sender_rank);
    case wire::Role::CONV_WORKER:
      return ProcessName("conv_worker", h->sender_rank);
    case wire::Role::FC_WORKER:
      return ProcessName("fc_worker", h->sender_rank);
    default:
      return "";
  }
}

// How many messages each of a FaultRates' losses has taken so far, shared
// by the objects one decorator wraps (which may be driven by different
// threads).
class LossTally {
 public:
  explicit LossTally(size_t losses) : taken_(losses, 0) {}

  // Whether loss `i`, which takes `count` messages, takes one more.
  bool TakeOne(size_t i, int count) {
    absl::MutexLock lock(&mu_);
    if (taken_[i] >= count) return false;
    ++taken_[i];
    return true;
  }

 private:
  absl::Mutex mu_;
  std::vector<int> taken_ ABSL_GUARDED_BY(mu_);
};

// The faults of one decorated channel or endpoint: messages go in as they
// are received and come out as they are to be delivered. `origin` is when
// the rates' cuts are timed from.
class FaultyInbox {
 public:
  FaultyInbox(const FaultRates& rates, absl::Time origin, std::shared_ptr<LossTally> tally,
              uint64_t stream, FaultCounts* counts, const FaultClock* clock)
      : rates_(rates),
        origin_(origin),
        tally_(std::move(tally)),
        rng_(DeriveSeed(rates.seed, stream)),
        counts_(counts),
        clock_(clock != nullptr ? clock : &RealFaultClock()) {}

  void Take(RawMessage m) {
    if (!rates_.cuts.empty() || !rates_.losses.empty()) {
      const std::optional<HeaderGlance> header = PeekHeader(m, WireLimits{});
      const std::string sender = SenderName(header);
      if (Cut(sender)) {
        Count(&FaultCounts::cut);
        return;
      }
      if (Lost(header, sender)) {
        Count(&FaultCounts::lost);
        return;
      }
    }
    const double u = rng_.Uniform();
    double edge = rates_.drop;
    if (u < edge) {
      Count(&FaultCounts::dropped);
      return;
    }
    if (u < (edge += rates_.truncate)) {
      Count(&FaultCounts::truncated);
      Truncate(m);
      Deliver(std::move(m));
      return;
    }
    if (u < (edge += rates_.duplicate)) {
      Count(&FaultCounts::duplicated);
      Deliver(Copy(m));
      Deliver(std::move(m));
      return;
    }
    if (u < (edge += rates_.delay)) {
      Count(&FaultCounts::delayed);
      delayed_.emplace(clock_->Now() + rates_.delay_by, std::move(m));
      return;
    }
    if (u < (edge += rates_.reorder)) {
      Count(&FaultCounts::reordered);
      behind_.emplace_back(clock_->Now() + rates_.delay_by, std::move(m));
      return;
    }
    Deliver(std::move(m));
  }

  // The messages due now, in delivery order. A message held back for
  // reordering that no later one has overtaken within `delay_by` goes too.
  std::deque<RawMessage>& Ready() {
    const absl::Time now = clock_->Now();
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      Deliver(std::move(delayed_.begin()->second));
      delayed_.erase(delayed_.begin());
    }
    while (!behind_.empty() && behind_.front().first <= now) {
      ready_.push_back(std::move(behind_.front().second));
      behind_.pop_front();
      Count(&FaultCounts::delivered);
    }
    return ready_;
  }

  bool holding() const { return !delayed_.empty() || !behind_.empty(); }

 private:
  // Hands `m` on; a message held back for reordering follows it.
  void Deliver(RawMessage m) {
    ready_.push_back(std::move(m));
    Count(&FaultCounts::delivered);
    while (!behind_.empty()) {
      ready_.push_back(std::move(behind_.front().second));
      behind_.pop_front();
      Count(&FaultCounts::delivered);
    }
  }

  // Whether a cut in force now takes a message from `sender` (SenderName).
  bool Cut(const std::string& sender) const {
    if (rates_.cuts.empty()) return false;
    const absl::Duration since_origin = clock_->Now() - origin_;
    for (const MessageCut& cut : rates_.cuts) {
      if (cut.Takes(sender, rates_.self, since_origin)) return true;
    }
    return false;
  }

  // Whether a loss takes the message with `header` from `sender` (counting
  // it taken).
  bool Lost(const std::optional<HeaderGlance>& header, const std::string& sender) {
    if (rates_.losses.empty() || !header.has_value() || rates_.self.empty()) return false;
    for (size_t i = 0; i < rates_.losses.size(); ++i) {
      const MessageLoss& loss = rates_.losses[i];
      if (loss.kind == header->type && loss.iteration == header->iteration && loss.from == sender &&
          loss.to == rates_.self && tally_->TakeOne(i, loss.count)) {
        return true;
      }
    }
    return false;
  }

  void Count(std::atomic<uint64_t> FaultCounts::*field) {
    if (counts_ != nullptr) (counts_->*field)++;
  }

  const FaultRates rates_;
  const absl::Time origin_;
  std::shared_ptr<LossTally> tally_;
  Rng rng_;
  FaultCounts* counts_;
  const FaultClock* clock_;
  std::multimap<absl::Time, RawMessage> delayed_;
  std::deque<std::pair<absl::Time, RawMessage>> behind_;  // with when they go anyway
  std::deque<RawMessage> ready_;
};

class FaultyChannel final : public MessageChannel {
 public:
  FaultyChannel(std::unique_ptr<MessageChannel> inner, FaultyInbox inbox)
      : inner_(std::move(inner)), inbox_(std::move(inbox)) {}

  absl::StatusOr<size_t> Send(OutgoingMessage& message) override { return inner_->Send(message); }

  absl::StatusOr<std::optional<RawMessage>> ReceiveNow() override {
    while (inbox_.Ready().empty()) {
      absl::StatusOr<std::optional<RawMessage>> got = inner_->ReceiveNow();
      if (!got.ok()) {
        // Messages received before the close still come first.
        if (!inbox_.holding()) return got.status();
        return std::optional<RawMessage>();
      }
      if (!got->has_value()) return std::optional<RawMessage>();
      inbox_.Take(std::move(**got));
    }
    RawMessage m = std::move(inbox_.Ready().front());
    inbox_.Ready().pop_front();
    return std::make_optional(std::move(m));
  }

  int wait_fd() const override { return inner_->wait_fd(); }
  void Shutdown() override { inner_->Shutdown(); }
  uint64_t bytes_sent() const override { return inner_->bytes_sent(); }
  uint64_t bytes_received() const override { return inner_->bytes_received(); }

 private:
  std::unique_ptr<MessageChannel> inner_;
  FaultyInbox inbox_;
};

class FaultyEndpoint final : public MessageEndpoint {
 public:
  FaultyEndpoint(std::unique_ptr<MessageEndpoint> inner, FaultyInbox inbox)
      : inner_(std::move(inner)), inbox_(std::move(inbox)) {}

  const std::string& address() const override { return inner_->address(); }
  bool Serves(const std::string& peer) const override { return inner_->Serves(peer); }
  absl::StatusOr<size_t> Send(const std::string& peer, OutgoingMessage& message) override {
    return inner_->Send(peer, message);
  }
  void AddPollItems(std::vector<zmq::pollitem_t>& items) override { inner_->AddPollItems(items); }
  void Collect(const zmq::pollitem_t* items, int max_messages, EndpointEvents& events) override {
    EndpointEvents received;
    inner_->Collect(items, max_messages, received);
    for (RawMessage& m : received.messages) inbox_.Take(std::move(m));
    for (RawMessage& m : inbox_.Ready()) events.messages.push_back(std::move(m));
    inbox_.Ready().clear();
    for (auto& refusal : received.refused) events.refused.push_back(std::move(refusal));
    for (auto& peer : received.closed) events.closed.push_back(std::move(peer));
  }
  uint64_t bytes_sent() const override { return inner_->bytes_sent(); }
  uint64_t bytes_received() const override { return inner_->bytes_received(); }

 private:
  std::unique_ptr<MessageEndpoint> inner_;
  FaultyInbox inbox_;
};

}  // namespace

bool MessageCut::Takes(const std::string& sender, const std::string& receiver,
                       absl::Duration since_origin) const {
  if (since_origin < start || since_origin >= start + length) return false;
  const auto names = [](const std::string& side, const std::string& process) {
    return side == "*" || (!process.empty() && side == process);
  };
  return names(from, sender) && names(to, receiver);
}

namespace {

// "START[+LENGTH]" (what follows the @ of a cut or silence): the window
// into `cut`; an error saying what is wrong, else "".
std::string ParseCutWindow(absl::string_view when, MessageCut& cut) {
  const std::vector<absl::string_view> parts = absl::StrSplit(when, absl::MaxSplits('+', 1));
  if (!absl::ParseDuration(parts[0], &cut.start) || cut.start < absl::ZeroDuration()) {
    return absl::StrCat("\"", parts[0], "\" is not a start time such as 3s or 1500ms");
  }
  if (parts.size() > 1 &&
      (!absl::ParseDuration(parts[1], &cut.length) || cut.length <= absl::ZeroDuration())) {
    return absl::StrCat("\"", parts[1], "\" is not a length such as 5s or 800ms");
  }
  return "";
}

// `name` is a process name, or the error that says it is not.
std::string CheckProcessName(absl::string_view name) {
  if (ParseProcessName(name).has_value()) return "";
  return absl::StrCat("\"", name, "\" is not a process (", kProcessNameForms, ")");
}

// The cuts of one "cut=" or "silence=" entry's value into `cuts`; an error
// saying what is wrong, else "".
std::string ParseCut(absl::string_view kind, absl::string_view value,
                     std::vector<MessageCut>& cuts) {
  const std::vector<absl::string_view> at = absl::StrSplit(value, absl::MaxSplits('@', 1));
  if (at.size() != 2) {
    return kind == "silence" ? "not silence=PROCESS@START[+LENGTH]"
                             : "not cut=A:B@START[+LENGTH] or cut=A>B@START[+LENGTH]";
  }
  MessageCut cut;
  if (const std::string why = ParseCutWindow(at[1], cut); !why.empty()) return why;
  if (kind == "silence") {
    if (const std::string why = CheckProcessName(at[0]); !why.empty()) return why;
    cut.from = std::string(at[0]);
    cut.to = "*";
    cuts.push_back(cut);
    std::swap(cut.from, cut.to);
    cuts.push_back(cut);
    return "";
  }
  const bool one_way = absl::StrContains(at[0], '>');
  const std::vector<absl::string_view> ends = absl::StrSplit(at[0], one_way ? '>' : ':');
  if (ends.size() != 2) return "not cut=A:B@START[+LENGTH] or cut=A>B@START[+LENGTH]";
  for (absl::string_view end : ends) {
    if (const std::string why = CheckProcessName(end); !why.empty()) return why;
  }
  if (ends[0] == ends[1]) return "a cut is between two different processes";
  cut.from = std::string(ends[0]);
  cut.to = std::string(ends[1]);
  cuts.push_back(cut);
  if (!one_way) {
    std::swap(cut.from, cut.to);
    cuts.push_back(cut);
  }
  return "";
}

// A "lose=" entry's value into `losses`; an error saying what is wrong,
// else "".
std::string ParseLoss(absl::string_view value, std::vector<MessageLoss>& losses) {
  constexpr absl::string_view kForm = "not lose=A>B:KIND@ITERATION[xCOUNT]";
  const std::vector<absl::string_view> at = absl::StrSplit(value, absl::MaxSplits('@', 1));
  if (at.size() != 2) return std::string(kForm);
  const std::vector<absl::string_view> route = absl::StrSplit(at[0], absl::MaxSplits(':', 1));
  const std::vector<absl::string_view> ends = absl::StrSplit(route[0], '>');
  if (route.size() != 2 || ends.size() != 2) return std::string(kForm);
  for (absl::string_view end : ends) {
    if (const std::string why = CheckProcessName(end); !why.empty()) return why;
  }
  if (ends[0] == ends[1]) return "a loss is between two different processes";
  MessageLoss loss;
  loss.from = std::string(ends[0]);
  loss.to = std::string(ends[1]);
  const std::optional<MessageType> kind = KindNamed(route[1]);
  if (!kind.has_value()) {
    return absl::StrCat("\"", route[1], "\" is not a message kind (activations, activation-grads, ",
                        "push, pull-reply, ...)");
  }
  loss.kind = *kind;
  const std::vector<absl::string_view> times = absl::StrSplit(at[1], absl::MaxSplits('x', 1));
  if (!absl::SimpleAtoi(times[0], &loss.iteration) || loss.iteration < 0) {
    return absl::StrCat("\"", times[0], "\" is not an iteration");
  }
  if (times.size() > 1 && (!absl::SimpleAtoi(times[1], &loss.count) || loss.count < 1)) {
    return absl::StrCat("\"", times[1], "\" is not a count of messages (1 or more)");
  }
  losses.push_back(loss);
  return "";
}

}  // namespace

absl::StatusOr<FaultRates> ParseFaultRates(const std::string& spec) {
  FaultRates r;
  for (absl::string_view part : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    const absl::string_view entry = absl::StripAsciiWhitespace(part);
    const std::vector<std::string> kv = absl::StrSplit(entry, absl::MaxSplits('=', 1));
    const std::string name = kv[0];
    const std::string value = kv.size() > 1 ? kv[1] : "";
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrCat("fault \"", entry, "\": ", why));
    };
    if (name == "seed") {
      if (!absl::SimpleAtoi(value, &r.seed)) return bad("the seed is a whole number");
      continue;
    }
    if (name == "cut" || name == "silence") {
      if (const std::string why = ParseCut(name, value, r.cuts); !why.empty()) return bad(why);
      continue;
    }
    if (name == "lose") {
      if (const std::string why = ParseLoss(value, r.losses); !why.empty()) return bad(why);
      continue;
    }
    if (name == "origin_ms") {
      int64_t ms = 0;
      if (!absl::SimpleAtoi(value, &ms) || ms < 0) {
        return bad("the origin is milliseconds since the Unix epoch");
      }
      r.origin = absl::FromUnixMillis(ms);
      continue;
    }
    double number = 0;
    if (!absl::SimpleAtod(value, &number)) return bad("not NAME=NUMBER");
    if (name == "delay_ms") {
      if (number < 0) return bad("a delay is >= 0");
      r.delay_by = absl::Milliseconds(number);
      continue;
    }
    double* rate = name == "drop"        ? &r.drop
                   : name == "truncate"  ? &r.truncate
                   : name == "duplicate" ? &r.duplicate
                   : name == "delay"     ? &r.delay
                   : name == "reorder"   ? &r.reorder
                                         : nullptr;
    if (rate == nullptr) {
      return bad(
          "unknown fault (drop, truncate, duplicate, delay, delay_ms, reorder, seed, cut, "
          "silence, lose, origin_ms)");
    }
    if (!(number >= 0 && number <= 1)) return bad("a probability is in [0, 1]");
    *rate = number;
  }
  if (r.drop + r.truncate + r.duplicate + r.delay + r.reorder > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("faults \"", spec, "\": the probabilities add up to more than 1"));
  }
  return r;
}

std::string FaultCounts::Summary() const {
  return absl::StrFormat(
      "delivered %d, dropped %d, truncated %d, duplicated %d, delayed %d, reordered %d, cut %d, "
      "lost %d",
      delivered.load(), dropped.load(), truncated.load(), duplicated.load(), delayed.load(),
      reordered.load(), cut.load(), lost.load());
}

const FaultClock& RealFaultClock() {
  static const RealClock* clock = new RealClock();
  return *clock;
}

namespace {

// When the cuts of decorators made now from `rates` are timed from.
absl::Time OriginOf(const FaultRates& rates, const FaultClock* clock) {
  if (rates.origin != absl::InfinitePast()) return rates.origin;
  return (clock != nullptr ? clock : &RealFaultClock())->Now();
}

}  // namespace

ChannelDecorator FaultyChannels(const FaultRates& rates, FaultCounts* counts,
                                const FaultClock* clock) {
  auto wrapped = std::make_shared<std::atomic<uint64_t>>(0);
  auto tally = std::make_shared<LossTally>(rates.losses.size());
  const absl::Time origin = OriginOf(rates, clock);
  return [rates, origin, counts, clock, wrapped, tally](std::unique_ptr<MessageChannel> inner) {
    if (inner->same_host()) return inner;
    return std::unique_ptr<MessageChannel>(new FaultyChannel(
        std::move(inner), FaultyInbox(rates, origin, tally, (*wrapped)++, counts, clock)));
  };
}

EndpointDecorator FaultyEndpoints(const FaultRates& rates, FaultCounts* counts,
                                  const FaultClock* clock) {
  auto wrapped = std::make_shared<std::atomic<uint64_t>>(0);
  auto tally = std::make_shared<LossTally>(rates.losses.size());
  const absl::Time origin = OriginOf(rates, clock);
  return [rates, origin, counts, clock, wrapped, tally](std::unique_ptr<MessageEndpoint> inner) {
    if (inner->same_host()) return inner;
    return std::unique_ptr<MessageEndpoint>(new FaultyEndpoint(
        std::move(inner), FaultyInbox(rates, origin, tally, (*wrapped)++, counts, clock)));
  };
}

}  // namespace strata
