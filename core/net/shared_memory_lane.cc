#include "core/net/shared_memory_lane.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "core/net/ps_wire.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/log.h"

namespace strata {
namespace {

// Requests in flight on one lane at most: their replies must fit the
// server's socket buffer even when nobody reads for a while.
constexpr size_t kMaxInFlight = 256;

uint64_t ChunkBytes(const PsRequest& r) { return r.chunks[0].length * sizeof(float); }

}  // namespace

SharedMemoryLane::SharedMemoryLane(SharedMemoryLaneOptions options,
                                   std::unique_ptr<MessageChannel> channel,
                                   std::unique_ptr<ShmRegion> region)
    : options_(std::move(options)),
      channel_(std::move(channel)),
      region_(std::move(region)),
      free_slots_(region_->slots()) {}

// In-flight requests are abandoned with the client that owns the lane.
SharedMemoryLane::~SharedMemoryLane() { channel_->Shutdown(); }

absl::StatusOr<std::unique_ptr<SharedMemoryLane>> SharedMemoryLane::Open(
    SharedMemoryLaneOptions options) {
  STRATA_ASSIGN_OR_RETURN(auto socket, LaneSocket::Connect(options.lane_address));
  STRATA_ASSIGN_OR_RETURN(auto region, ShmRegion::Create(options.slots, options.slot_bytes));
  std::unique_ptr<MessageChannel> channel = std::make_unique<LaneChannel>(std::move(socket));
  if (options.decorate_channel) channel = options.decorate_channel(std::move(channel));
  std::unique_ptr<SharedMemoryLane> lane(
      new SharedMemoryLane(std::move(options), std::move(channel), std::move(region)));
  STRATA_RETURN_IF_ERROR(lane->Attach());
  return lane;
}

absl::Status SharedMemoryLane::Attach() {
  // The lane is a connection of its own: it registers before the offer.
  OutgoingMessage hello(wire::Kind::HELLO);
  FillHello(hello.header(), options_.credentials, options_.sender.role, options_.sender.rank);
  STRATA_RETURN_IF_ERROR(channel_->Send(hello).status());
  OutgoingMessage offer(wire::ps::Kind::SHM_ATTACH);
  auto h = offer.header();
  h.setJobId(options_.sender.job_id);
  h.setSenderRole(options_.sender.role);
  h.setSenderRank(options_.sender.rank);
  offer.PassDescriptor(region_->fd());  // the region itself: only the server gets it
  BodyOf<wire::ps::Body>(h).setShmSlotCount(region_->slots());
  BodyOf<wire::ps::Body>(h).setShmSlotBytes(region_->slot_bytes());
  BodyOf<wire::ps::Body>(h).setShmHost(ColocationId());
  STRATA_RETURN_IF_ERROR(channel_->Send(offer).status());
  const absl::Time deadline = MonotonicNow() + options_.attach_timeout;
  while (MonotonicNow() < deadline) {
    WaitReadable(*channel_, deadline - MonotonicNow());
    STRATA_ASSIGN_OR_RETURN(std::optional<RawMessage> packet, channel_->ReceiveNow());
    if (!packet.has_value()) continue;
    STRATA_ASSIGN_OR_RETURN(IncomingMessage reply, Decode(*std::move(packet), options_.limits));
    const auto r = reply.header();
    if (r.getErrorCode() != 0) return ErrorFromHeader(r);
    if (TypeOf(r) == wire::ps::Kind::SHM_ATTACH_ACK) return absl::OkStatus();
  }
  return absl::DeadlineExceededError(absl::StrCat(options_.server_name,
                                                  " did not answer the shared memory offer within ",
                                                  absl::FormatDuration(options_.attach_timeout)));
}

bool SharedMemoryLane::TrySend(PsRequest& request) {
  if (closed_.load() || !MovesData(request.kind) || request.chunks.size() != 1 ||
      ChunkBytes(request) > region_->slot_bytes()) {
    return false;
  }
  uint64_t id = 0;
  uint32_t slot = 0;
  {
    absl::MutexLock lock(&mu_);
    if (in_flight_.size() >= kMaxInFlight) return false;
    const std::optional<uint32_t> free = free_slots_.Acquire();
    if (!free.has_value()) return false;
    slot = *free;
    id = next_id_++;
  }
  request.slot = slot;
  request.id = id;
  OutgoingMessage message(request.kind);
  FillRequest(request, options_.sender, region_.get(), message);
  const uint64_t data_bytes = request.kind == wire::ps::Kind::PULL ? 0 : ChunkBytes(request);
  const Ticket op = request.op;
  // On the books before it is sent: the reply may come at once.
  op->EnterLane(options_.server);
  {
    absl::MutexLock lock(&mu_);
    in_flight_.emplace(id, InFlight{std::move(request)});
  }
  absl::StatusOr<size_t> sent;
  {
    absl::MutexLock lock(&channel_mu_);  // callers send from their own threads
    sent = channel_->Send(message);
  }
  if (sent.ok()) {
    bytes_sent_ += *sent + data_bytes;
    return true;
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = in_flight_.find(id);
    if (it == in_flight_.end()) return true;  // the lane closed meanwhile and resent it
    // Never sent: no reply will use the slot.
    free_slots_.Release(slot);
    if (it->second.cancelled) {  // CancelAll has answered it
      in_flight_.erase(it);
      return true;
    }
    request = std::move(it->second.request);
    in_flight_.erase(it);
  }
  request.slot = -1;
  op->LeaveLane(options_.server);
  Close(std::string(sent.status().message()));
  return false;
}

bool SharedMemoryLane::Drive(absl::Time deadline, absl::FunctionRef<bool()> done) {
  if (!reader_mu_.TryLock()) return false;
  while (!done() && !closed_.load()) {
    ReadReplies();
    if (done() || closed_.load()) break;
    const absl::Time now = MonotonicNow();
    if (now >= deadline) break;
    // Bounded: a part cancelled by another thread wakes nobody here.
    WaitReadable(*channel_, std::min(deadline - now, absl::Milliseconds(100)));
  }
  reader_mu_.Unlock();
  return true;
}

void SharedMemoryLane::Drain() {
  if (!reader_mu_.TryLock()) return;
  if (!closed_.load()) ReadReplies();
  reader_mu_.Unlock();
}

void SharedMemoryLane::ReadReplies() {
  while (true) {
    absl::StatusOr<std::optional<RawMessage>> packet;
    {
      absl::MutexLock lock(&channel_mu_);
      packet = channel_->ReceiveNow();
    }
    if (!packet.ok()) {
      if (absl::IsUnavailable(packet.status())) {
        Close(std::string(packet.status().message()));
        return;
      }
      LogWarning("dropped a reply from %s: %s", options_.server_name.c_str(),
                 std::string(packet.status().message()).c_str());
      continue;
    }
    if (!packet->has_value()) return;
    HandleReply(**std::move(packet));
  }
}

void SharedMemoryLane::HandleReply(RawMessage raw) {
  const uint64_t header_bytes = raw.frames[0].size();
  absl::StatusOr<IncomingMessage> message = Decode(std::move(raw), options_.limits);
  if (!message.ok()) {
    LogWarning("dropped a malformed reply from %s: %s", options_.server_name.c_str(),
               std::string(message.status().message()).c_str());
    return;
  }
  options_.last_reply_ns->store(absl::ToUnixNanos(MonotonicNow()));
  InFlight entry;
  ReplyOutcome outcome;
  {
    // Applied under the lock, so that once CancelAll has returned no
    // reply writes into a caller's tensor.
    absl::MutexLock lock(&mu_);
    auto it = in_flight_.find(message->header().getRequestId());
    if (it == in_flight_.end()) return;
    entry = std::move(it->second);
    in_flight_.erase(it);
    if (!entry.cancelled) {
      outcome = ApplyReply(*message, entry.request, region_.get(), options_.server_name);
    }
    free_slots_.Release(static_cast<uint32_t>(entry.request.slot));
  }
  if (entry.cancelled) return;
  const PsRequest& r = entry.request;
  const bool pulled = r.kind == wire::ps::Kind::PULL && outcome.status.ok();
  bytes_received_ += header_bytes + (pulled ? ChunkBytes(r) : 0);
  r.op->LeaveLane(options_.server);
  r.op->PartAnswered(options_.server, outcome.status, outcome.version);
}

void SharedMemoryLane::CancelAll() {
  std::vector<Ticket> cancelled;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, entry] : in_flight_) {
      if (entry.cancelled) continue;
      entry.cancelled = true;  // its slot waits for the reply (see the header)
      cancelled.push_back(entry.request.op);
    }
  }
  for (const Ticket& op : cancelled) {
    op->LeaveLane(options_.server);
    op->PartAnswered(options_.server, absl::CancelledError("cancelled"), -1);
  }
}

void SharedMemoryLane::Finish() { Shut("the worker is done", /*quiet_when_idle=*/true); }

void SharedMemoryLane::Close(const std::string& why) { Shut(why, /*quiet_when_idle=*/false); }

void SharedMemoryLane::Shut(const std::string& why, bool quiet_when_idle) {
  if (closed_.exchange(true)) return;
  channel_->Shutdown();
  // Handed over under the lock: a CancelAll that finds none of them here
  // finds them in the socket's queue.
  absl::MutexLock lock(&mu_);
  std::vector<PsRequest> orphans;
  for (auto& [id, entry] : in_flight_) {
    if (entry.cancelled) continue;
    entry.request.slot = -1;  // the region is not used again
    entry.request.op->LeaveLane(options_.server);
    orphans.push_back(std::move(entry.request));
  }
  in_flight_.clear();
  if (!quiet_when_idle || !orphans.empty()) {
    LogInfo(
        "the shared memory lane to %s closed (%s); %zu requests in flight and all later ones go "
        "over the socket",
        options_.server_name.c_str(), why.c_str(), orphans.size());
  }
  if (!orphans.empty()) options_.resend(std::move(orphans));
}

}  // namespace strata
