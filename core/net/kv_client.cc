#include "core/net/kv_client.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "core/net/ps_wire.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/log.h"

namespace strata {

namespace {
// How long a worker on its way out waits for the servers to hear its LEAVE.
constexpr absl::Duration kLeaveWait = absl::Seconds(2);
// How often the client looks for requests to send again.
constexpr absl::Duration kResendCheckEvery = absl::Milliseconds(10);
}  // namespace

KvClient::KvClient(const PsClientOptions& options, const ClusterMap& map, ClientIoLoop& loop)
    : options_(options),
      rank_(map.rank),
      server_addresses_(map.server_addresses),
      server_lane_addresses_(map.server_lane_addresses),
      loop_(loop) {}

KvClient::~KvClient() {
  if (replies_event_fd_ >= 0) ::close(replies_event_fd_);
  if (requests_resent_.load() > 0) {
    LogInfo("sent %llu unanswered requests to the servers again (%llu of them pulls)",
            static_cast<unsigned long long>(requests_resent_.load()),
            static_cast<unsigned long long>(pulls_resent_.load()));
  }
  if (answers_repeated_.load() > 0) {
    LogInfo("%llu answers came to requests already answered (%llu bytes received twice)",
            static_cast<unsigned long long>(answers_repeated_.load()),
            static_cast<unsigned long long>(answer_bytes_repeated_.load()));
  }
}

absl::StatusOr<std::unique_ptr<KvClient>> KvClient::Connect(zmq::context_t& context,
                                                            const PsClientOptions& options,
                                                            const ClusterMap& map,
                                                            ClientIoLoop& loop) {
  std::unique_ptr<KvClient> client(new KvClient(options, map, loop));
  STRATA_RETURN_IF_ERROR(client->ConnectServers(context));
  return client;
}

std::string KvClient::ServerName(int server) const {
  return absl::StrCat("server ", server, " (", server_addresses_[server], ")");
}

std::shared_ptr<SharedMemoryLane> KvClient::lane(int server) const {
  absl::MutexLock lock(&lanes_mu_);
  return lanes_[server];
}

std::vector<std::shared_ptr<SharedMemoryLane>> KvClient::all_lanes() const {
  absl::MutexLock lock(&lanes_mu_);
  return lanes_;
}

void KvClient::OpenLane(int server, bool reopening) {
  std::shared_ptr<SharedMemoryLane> old = lane(server);
  if (old != nullptr) old->Close("the server's connection was renewed");
  std::shared_ptr<SharedMemoryLane> opened;
  // A server on another host is the normal case for a cluster: no lane, no log line.
  if (options_.shared_memory && LaneIsLocal(server_lane_addresses_[server])) {
    SharedMemoryLaneOptions o;
    o.server = server;
    o.server_name = ServerName(server);
    o.lane_address = server_lane_addresses_[server];
    o.sender = sender();
    o.credentials = options_.credentials;
    o.slots = options_.shm_slots;
    o.slot_bytes = options_.shm_slot_bytes;
    o.attach_timeout = std::min(options_.timeout, absl::Seconds(10));
    o.limits = options_.limits;
    o.last_reply_ns = &last_reply_ns_;
    o.resend = [this](std::vector<PsRequest> requests) { Enqueue(std::move(requests)); };
    o.decorate_channel = options_.decorate_channel;
    absl::StatusOr<std::unique_ptr<SharedMemoryLane>> open = SharedMemoryLane::Open(o);
    // A server that is back listens for lanes just after its socket is up:
    // give it a moment.
    for (int retry = 0; reopening && retry < 25 && absl::IsUnavailable(open.status()); ++retry) {
      absl::SleepFor(absl::Milliseconds(20));
      open = SharedMemoryLane::Open(o);
    }
    if (open.ok()) {
      opened = *std::move(open);
      if (reopening) {
        LogInfo("reopened the shared memory lane to %s", ServerName(server).c_str());
      }
    } else {
      LogInfo("%s: no shared memory lane (%s); data goes over the socket",
              ServerName(server).c_str(), std::string(open.status().message()).c_str());
    }
  }
  absl::MutexLock lock(&lanes_mu_);
  if (old != nullptr) {
    retired_lane_bytes_sent_ += old->bytes_sent();
    retired_lane_bytes_received_ += old->bytes_received();
  }
  lanes_[server] = std::move(opened);
}

absl::Status KvClient::ConnectServers(zmq::context_t& context) {
  for (size_t server = 0; server < server_addresses_.size(); ++server) {
    STRATA_ASSIGN_OR_RETURN(auto s, Socket::Connect(context, SocketKind::kDealer,
                                                    server_addresses_[server], options_.limits));
    STRATA_RETURN_IF_ERROR(Introduce(*s, options_.credentials, options_.role, rank_,
                                     ServerName(static_cast<int>(server)), options_.timeout)
                               .status());
    // ZeroMQ's connection events, watched by the I/O loop (instead of the
    // socket's own handshake watch, which the hello needed).
    s->StopWatchingHandshakes();
    const std::string endpoint = absl::StrCat("inproc://strata-client-monitor-",
                                              reinterpret_cast<uintptr_t>(this), "-", server);
    if (zmq_socket_monitor(s->raw().handle(), endpoint.c_str(),
                           ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) != 0) {
      return absl::InternalError(absl::StrCat("cannot watch the connection to server ", server,
                                              ": ", zmq_strerror(zmq_errno())));
    }
    auto monitor = std::make_unique<zmq::socket_t>(context, zmq::socket_type::pair);
    monitor->connect(endpoint);
    monitors_.push_back(std::move(monitor));
    std::unique_ptr<MessageChannel> channel = std::make_unique<ZmqChannel>(std::move(s));
    if (options_.decorate_channel) channel = options_.decorate_channel(std::move(channel));
    servers_.push_back(std::move(channel));
  }
  {
    absl::MutexLock lock(&socket_mu_);
    disconnected_.assign(servers_.size(), false);
    backlog_.resize(servers_.size());
    round_trips_.assign(servers_.size(), RoundTrip(GivingUpAfter(options_.timeout)));
    last_answer_.assign(servers_.size(), absl::InfinitePast());
    for (auto& s : servers_) server_fds_.push_back(s->wait_fd());
  }
  replies_event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (replies_event_fd_ < 0) return absl::InternalError("cannot create an eventfd");
  {
    absl::MutexLock lock(&lanes_mu_);
    lanes_.resize(server_addresses_.size());
  }
  for (int server = 0; server < num_servers(); ++server) OpenLane(server, /*reopening=*/false);
  // The monitors as ZeroMQ items, the server sockets by descriptor only (a
  // descriptor may be polled while another thread uses the socket).
  std::vector<zmq::pollitem_t> items;
  for (auto& m : monitors_) items.push_back({static_cast<void*>(*m), 0, ZMQ_POLLIN, 0});
  for (int fd : server_fds_) items.push_back({nullptr, fd, ZMQ_POLLIN, 0});
  loop_.Add(this, std::move(items));
  return absl::OkStatus();
}

void KvClient::SayHello(int server) ABSL_NO_THREAD_SAFETY_ANALYSIS {  // socket_mu_ held
  OutgoingMessage hello(wire::Kind::HELLO);
  FillHello(hello.header(), options_.credentials, options_.role, rank_);
  absl::Status s = servers_[server]->Send(hello).status();
  if (!s.ok()) {
    LogWarning("cannot say hello to %s: %s", ServerName(server).c_str(),
               std::string(s.message()).c_str());
  }
}

absl::Status KvClient::SetPlan(PartitionPlan plan) {
  if (plan.servers() != num_servers()) {
    return absl::InvalidArgumentError(absl::StrCat("partition plan for ", plan.servers(),
                                                   " servers, the cluster has ", num_servers()));
  }
  plan_ = std::move(plan);
  return absl::OkStatus();
}

void KvClient::Enqueue(std::vector<PsRequest> requests) {
  {
    absl::MutexLock lock(&queue_mu_);
    for (PsRequest& r : requests) {
      r.id = next_id_++;
      queue_.push_back(std::move(r));
    }
  }
  loop_.Wake();
}

void KvClient::Dispatch(std::vector<PsRequest> requests) {
  std::vector<PsRequest> socket_requests;
  for (PsRequest& r : requests) {
    const std::shared_ptr<SharedMemoryLane> to = lane(r.server);
    if (to == nullptr || !to->TrySend(r)) socket_requests.push_back(std::move(r));
  }
  if (!socket_requests.empty()) SendNow(std::move(socket_requests));
}

void KvClient::SendNow(std::vector<PsRequest> requests) {
  std::deque<PsRequest> fresh;
  {
    absl::MutexLock lock(&queue_mu_);
    for (PsRequest& r : requests) {
      r.id = next_id_++;
      fresh.push_back(std::move(r));
    }
  }
  absl::MutexLock lock(&socket_mu_);
  ServeSocketsLocked(std::move(fresh));
}

void KvClient::ServeSocketsLocked(std::deque<PsRequest> fresh) {
  for (PsRequest& r : fresh) {
    SendRequest(r);
    const uint64_t id = r.id;
    inflight_.emplace(id, std::move(r));
  }
  bool answered = false;
  for (size_t s = 0; s < servers_.size(); ++s) {
    if (!backlog_[s].empty()) FlushBacklog(static_cast<int>(s));
    while (true) {
      absl::StatusOr<std::optional<RawMessage>> raw = servers_[s]->ReceiveNow();
      if (!raw.ok() || !raw->has_value()) break;
      last_reply_ns_.store(absl::ToUnixNanos(MonotonicNow()));
      HandleReply(static_cast<int>(s), **std::move(raw));
      answered = true;
    }
  }
  ResendOverdueLocked();
  if (answered && waiters_.load() > 0) {
    const uint64_t one = 1;
    (void)!::write(replies_event_fd_, &one, sizeof(one));
  }
}

void KvClient::DriveSockets(const Ticket& ticket, absl::Time until) {
  waiters_.fetch_add(1);
  {
    absl::MutexLock lock(&socket_mu_);
    ServeSocketsLocked({});
  }
  if (!ticket->done()) {
    std::vector<pollfd> fds;
    for (int fd : server_fds_) fds.push_back({fd, POLLIN, 0});
    fds.push_back({replies_event_fd_, POLLIN, 0});
    const int64_t ms = std::clamp<int64_t>(absl::ToInt64Milliseconds(until - MonotonicNow()), 0, 5);
    if (::poll(fds.data(), fds.size(), static_cast<int>(ms)) > 0) {
      if (fds.back().revents & POLLIN) {
        uint64_t n = 0;
        (void)!::read(replies_event_fd_, &n, sizeof(n));
      }
      absl::MutexLock lock(&socket_mu_);
      ServeSocketsLocked({});
    }
  }
  waiters_.fetch_sub(1);
}

std::vector<PsRequest> KvClient::ChunkRequests(MessageType kind, int64_t iteration, uint32_t key,
                                               const Tensor& tensor, const Ticket& op) const {
  std::vector<PsRequest> requests;
  std::vector<int> servers;
  for (const Chunk& c : plan_.chunks_of_key(key)) {
    PsRequest r;
    r.server = c.server;
    r.kind = kind;
    r.iteration = iteration;
    r.tensor = tensor;
    r.op = op;
    r.data_type = kind == wire::ps::Kind::INIT ? wire::DataType::F32 : wire_format_.load();
    r.chunks.push_back(c);
    servers.push_back(c.server);
    requests.push_back(std::move(r));
  }
  op->AddParts(servers);
  return requests;
}

Ticket KvClient::Submit(MessageType kind, int64_t iteration, uint32_t key, const Tensor& tensor) {
  auto op = std::make_shared<Operation>(
      absl::StrCat(KindName(kind), " of key ", key, " for iteration ", iteration));
  // One request per chunk: the server applies and answers each chunk as it
  // arrives.
  Dispatch(ChunkRequests(kind, iteration, key, tensor, op));
  return op;
}

KvClient::Exchange KvClient::PushThenPull(int64_t iteration, uint32_t key, const Tensor& gradient,
                                          const Tensor& destination) {
  Exchange e;
  e.push = std::make_shared<Operation>(
      absl::StrCat(KindName(wire::ps::Kind::PUSH), " of key ", key, " for iteration ", iteration));
  e.pull = std::make_shared<Operation>(absl::StrCat(KindName(wire::ps::Kind::PULL), " of key ", key,
                                                    " for iteration ", iteration + 1));
  std::vector<PsRequest> pushes =
      ChunkRequests(wire::ps::Kind::PUSH, iteration, key, gradient, e.push);
  std::vector<PsRequest> pulls =
      ChunkRequests(wire::ps::Kind::PULL, iteration + 1, key, destination, e.pull);
  std::vector<PsRequest> interleaved;
  interleaved.reserve(pushes.size() + pulls.size());
  for (size_t c = 0; c < pushes.size(); ++c) {
    interleaved.push_back(std::move(pushes[c]));
    interleaved.push_back(std::move(pulls[c]));
  }
  Dispatch(std::move(interleaved));
  return e;
}

Ticket KvClient::Init(uint32_t key, const Tensor& value) {
  return Submit(wire::ps::Kind::INIT, 0, key, value);
}

Ticket KvClient::Push(int64_t iteration, uint32_t key, const Tensor& gradient) {
  return Submit(wire::ps::Kind::PUSH, iteration, key, gradient);
}

Ticket KvClient::Pull(int64_t iteration, uint32_t key, const Tensor& destination) {
  return Submit(wire::ps::Kind::PULL, iteration, key, destination);
}

Ticket KvClient::SubmitToAll(const PsRequest& like) {
  auto op = std::make_shared<Operation>(KindName(like.kind));
  std::vector<PsRequest> requests;
  std::vector<int> servers;
  for (int s = 0; s < num_servers(); ++s) {
    PsRequest r;
    r.server = s;
    r.kind = like.kind;
    r.op = op;
    r.reason = like.reason;
    r.iteration = like.iteration;
    r.failed_checkpoint = like.failed_checkpoint;
    servers.push_back(s);
    requests.push_back(std::move(r));
  }
  op->AddParts(servers);
  Enqueue(std::move(requests));
  return op;
}

void KvClient::CancelAll() {
  // Lanes first: what a closing lane hands to the socket is then in the
  // queue dropped below.
  for (const auto& lane : all_lanes()) {
    if (lane != nullptr) lane->CancelAll();
  }
  std::deque<PsRequest> dropped;
  {
    absl::MutexLock sockets(&socket_mu_);
    {
      absl::MutexLock queue(&queue_mu_);
      dropped.swap(queue_);
    }
    for (auto& [id, r] : inflight_) dropped.push_back(std::move(r));
    inflight_.clear();
    for (auto& b : backlog_) b.clear();
  }
  // Late replies find no request: they are ignored.
  for (PsRequest& r : dropped) {
    r.op->PartAnswered(r.server, absl::CancelledError("cancelled"), -1);
  }
}

absl::Status KvClient::Done(const CheckpointReport& checkpoints) {
  // The lanes first: a server that has every worker's DONE exits, and its
  // lanes' closing is then no news.
  FinishLanes();
  // A DONE carries the newest checkpoint part written, and a part that
  // could not be: the coordinator may be waiting for them to settle the
  // final epoch.
  PsRequest done;
  done.kind = wire::Kind::DONE;
  done.iteration = checkpoints.written;
  done.failed_checkpoint = checkpoints.failed;
  done.reason = checkpoints.why;
  return Wait(SubmitToAll(done));
}

void KvClient::FinishLanes() {
  for (const auto& lane : all_lanes()) {
    if (lane != nullptr) lane->Finish();
  }
}

void KvClient::Leave(const absl::Status& why) {
  FinishLanes();
  PsRequest leave;
  leave.kind = wire::Kind::LEAVE;
  leave.reason = std::string(why.message());
  const Ticket left = SubmitToAll(leave);
  absl::Status s = WaitWhileAnswered(left, MonotonicNow(), std::min(options_.timeout, kLeaveWait));
  if (!s.ok())
    LogWarning("telling the servers why this worker stops: %s", std::string(s.message()).c_str());
}

Ticket KvClient::SubmitTo(int server, MessageType kind, std::string what) {
  auto op = std::make_shared<Operation>(std::move(what));
  PsRequest r;
  r.server = server;
  r.kind = kind;
  r.op = op;
  op->AddParts({server});
  std::vector<PsRequest> requests;
  requests.push_back(std::move(r));
  Enqueue(std::move(requests));
  return op;
}

absl::StatusOr<ClockReport> KvClient::Clocks(int server) {
  Ticket op = SubmitTo(server, wire::ps::Kind::CLOCK, "clock");
  STRATA_RETURN_IF_ERROR(Wait(op));
  return op->clocks();
}

absl::Status KvClient::Wait(const Ticket& ticket) {
  return WaitWhileAnswered(ticket, MonotonicNow());
}

absl::Status KvClient::WaitWhileAnswered(const Ticket& ticket, absl::Time started,
                                         std::optional<absl::Duration> silence) {
  const absl::Duration timeout = silence.value_or(options_.timeout);
  if (ticket->done()) return ticket->status();
  ScopedWait wait(wait_observer_);
  while (!ticket->done()) {
    // The deadline moves with every reply from any server: only `timeout`
    // of silence fails the wait.
    const int64_t last_reply = last_reply_ns_.load();
    const absl::Time deadline = std::max(started, absl::FromUnixNanos(last_reply)) + timeout;
    const int lane_server = ticket->lane_server();
    if (lane_server >= 0) {
      // A part travels on a lane: read its replies here rather than sleep.
      const std::shared_ptr<SharedMemoryLane> on = lane(lane_server);
      const bool drove = on != nullptr && on->Drive(deadline, [&ticket, lane_server] {
        return !ticket->on_lane(lane_server);
      });
      if (!drove) {
        // Another thread reads that lane and answers our part; look again soon.
        ticket->AwaitOffLane(lane_server,
                             std::min(deadline, MonotonicNow() + absl::Milliseconds(1)));
      }
    } else {
      DriveSockets(ticket, deadline);
    }
    if (ticket->done() || MonotonicNow() < deadline || last_reply_ns_.load() != last_reply) {
      continue;
    }
    const std::vector<int> waiting = ticket->waiting_on();
    std::string who;
    for (int s : std::set<int>(waiting.begin(), waiting.end())) {
      absl::StrAppend(&who, who.empty() ? "" : ", ", ServerName(s));
    }
    return absl::DeadlineExceededError(absl::StrCat("no reply to ", ticket->what(), " from ", who,
                                                    " within ", absl::FormatDuration(timeout)));
  }
  return ticket->status();
}

absl::Status KvClient::WaitAll(const std::vector<Ticket>& tickets) {
  // One silence budget for all: the wait began when the first ticket's did.
  const absl::Time started = MonotonicNow();
  ScopedWait wait(wait_observer_);
  absl::Status first;
  for (const Ticket& t : tickets) {
    absl::Status s = WaitWhileAnswered(t, started);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

uint64_t KvClient::bytes_sent() const { return Bytes(/*sent=*/true); }

uint64_t KvClient::bytes_received() const { return Bytes(/*sent=*/false); }

uint64_t KvClient::Bytes(bool sent) const {
  const auto of = [sent](const auto& end) { return sent ? end.bytes_sent() : end.bytes_received(); };
  uint64_t n = 0;
  for (const auto& s : servers_) n += of(*s);
  absl::MutexLock lock(&lanes_mu_);
  n += sent ? retired_lane_bytes_sent_ : retired_lane_bytes_received_;
  for (const auto& lane : lanes_) n += lane != nullptr ? of(*lane) : 0;
  return n;
}

void KvClient::SendRequest(PsRequest& r) {
  std::deque<uint64_t>& backlog = backlog_[r.server];
  if (!backlog.empty()) {  // keep the order of what is waiting
    backlog.push_back(r.id);
    return;
  }
  OutgoingMessage m(r.kind);
  FillRequest(r, sender(), /*region=*/nullptr, m);
  absl::Status s = servers_[r.server]->Send(m).status();
  if (IsQueueFull(s)) {
    backlog.push_back(r.id);
    return;
  }
  // A send that failed counts too: the request waits for an answer (or a
  // reconnect) like one the network lost.
  ++r.sends;
  r.sent_at = MonotonicNow();
  if (!s.ok()) {
    LogWarning("send to server %d failed (sent again if the connection comes back): %s", r.server,
               std::string(s.message()).c_str());
  }
}

void KvClient::FlushBacklog(int server) {
  std::deque<uint64_t>& backlog = backlog_[server];
  while (!backlog.empty()) {
    auto it = inflight_.find(backlog.front());
    if (it == inflight_.end()) {  // answered or cancelled meanwhile
      backlog.pop_front();
      continue;
    }
    OutgoingMessage m(it->second.kind);
    FillRequest(it->second, sender(), /*region=*/nullptr, m);
    if (IsQueueFull(servers_[server]->Send(m).status())) return;
    ++it->second.sends;
    it->second.sent_at = MonotonicNow();
    backlog.pop_front();
  }
}

void KvClient::HandleReply(int server, RawMessage raw) {
  uint64_t bytes = 0;
  for (const zmq::message_t& frame : raw.frames) bytes += frame.size();
  absl::StatusOr<IncomingMessage> message = Decode(std::move(raw), options_.limits);
  if (!message.ok()) {
    LogWarning("dropped a malformed reply from server %d: %s", server,
               std::string(message.status().message()).c_str());
    return;
  }
  const absl::Time now = MonotonicNow();
  last_answer_[server] = now;
  auto it = inflight_.find(message->header().getRequestId());
  if (it == inflight_.end()) {  // a reply to a resent request, already answered
    answers_repeated_.fetch_add(1);
    answer_bytes_repeated_.fetch_add(bytes);
    return;
  }
  // Answer times of requests sent once (Karn's rule); not of pulls, whose
  // answers wait for other workers' pushes, not for the network.
  if (it->second.sends == 1 && it->second.kind != wire::ps::Kind::PULL) {
    round_trips_[server].Sample(now - it->second.sent_at);
  }
  if (IsNotRegistered(message->header()) && it->second.hellos < kMaxHellosPerRequest) {
    // The request overtook the HELLO of a renewed connection: say it, and
    // send the request again behind it.
    it->second.hellos++;
    SayHello(server);
    SendRequest(it->second);
    return;
  }
  PsRequest r = std::move(it->second);
  inflight_.erase(it);
  const ReplyOutcome outcome = ApplyReply(*message, r, /*region=*/nullptr, ServerName(server));
  r.op->PartAnswered(server, outcome.status, outcome.version);
}

void KvClient::ResendOverdueLocked() {
  const absl::Time now = MonotonicNow();
  if (now < next_resend_check_) return;
  next_resend_check_ = now + kResendCheckEvery;
  std::vector<int> resent(servers_.size(), 0);
  for (auto& [id, r] : inflight_) {
    const int server = r.server;
    // Still in a backlog (its queue is full: a busy link, not a lossy
    // one), or waiting for a reconnect, which sends everything again.
    if (r.sends == 0 || !backlog_[server].empty() || disconnected_[server]) continue;
    const absl::Time quiet_since = std::max(r.sent_at, last_answer_[server]);
    // Every kind backs off, pulls included: a pull is a small header, but a
    // server answers each copy that is not waiting for other workers with
    // the whole slice, so on a slow link asking again at a fixed interval
    // would queue answer behind answer and the link would never drain.
    if (now - quiet_since < round_trips_[server].TimeoutAfter(r.sends)) continue;
    SendRequest(r);
    ++resent[server];
    if (r.kind == wire::ps::Kind::PULL) pulls_resent_.fetch_add(1);
  }
  for (size_t server = 0; server < resent.size(); ++server) {
    if (resent[server] == 0) continue;
    round_trips_[server].TimedOut();
    requests_resent_.fetch_add(resent[server]);
    LogDebug("%s silent for %s: resent %d unanswered requests", ServerName(server).c_str(),
             absl::FormatDuration(now - last_answer_[server]).c_str(), resent[server]);
  }
}

void KvClient::HandleConnectionEvents(int server) {
  while (const std::optional<MonitorEvent> event = NextMonitorEvent(*monitors_[server])) {
    const uint16_t id = event->id;
    absl::MutexLock lock(&socket_mu_);
    if (id == ZMQ_EVENT_DISCONNECTED) {
      disconnected_[server] = true;
      // A server exits once every worker has said DONE (or when it fails,
      // which its own exit reports): a DONE whose answer was lost on the
      // way has been heard, and nobody is left to answer it again.
      for (auto it = inflight_.begin(); it != inflight_.end();) {
        if (it->second.server == server && it->second.kind == wire::Kind::DONE) {
          it->second.op->PartAnswered(server, absl::OkStatus(), -1);
          it = inflight_.erase(it);
        } else {
          ++it;
        }
      }
    } else if (id == ZMQ_EVENT_CONNECTED && disconnected_[server]) {
      // Back after a drop: whatever the old connection carried may be lost,
      // and a restarted server has no lane to us. The old lane's requests
      // come back through Enqueue; a new lane is opened (a restarted server
      // listens at the same lane address).
      disconnected_[server] = false;
      SayHello(server);
      OpenLane(server, /*reopening=*/true);
      int resent = 0;
      backlog_[server].clear();  // everything in flight goes again, in order
      for (auto& [request_id, r] : inflight_) {
        if (r.server != server) continue;
        SendRequest(r);
        ++resent;
      }
      LogInfo("reconnected to server %d; resent %d requests", server, resent);
    }
  }
}

absl::Duration KvClient::BeforePoll(absl::Span<zmq::pollitem_t> items) {
  // A waiting caller reads its replies itself.
  const bool callers_read = waiters_.load() > 0;
  for (size_t i = monitors_.size(); i < items.size(); ++i) {
    items[i].events = callers_read ? 0 : ZMQ_POLLIN;
  }
  // A full send queue drains as the link does: look again soon.
  return backlogged_ ? absl::Milliseconds(1) : absl::InfiniteDuration();
}

void KvClient::AfterPoll(absl::Span<const zmq::pollitem_t> items) {
  {
    absl::MutexLock lock(&socket_mu_);
    std::deque<PsRequest> fresh;
    {
      absl::MutexLock queue(&queue_mu_);
      fresh.swap(queue_);
    }
    ServeSocketsLocked(std::move(fresh));
    backlogged_ = false;
    for (const auto& b : backlog_) backlogged_ = backlogged_ || !b.empty();
  }
  for (size_t s = 0; s < monitors_.size(); ++s) {
    if (items[s].revents & ZMQ_POLLIN) HandleConnectionEvents(static_cast<int>(s));
  }
  // Replies on lanes nobody is waiting for (a ticket that is never
  // waited on must still give its slot back).
  for (const auto& lane : all_lanes()) {
    if (lane != nullptr) lane->Drain();
  }
}

}  // namespace strata
