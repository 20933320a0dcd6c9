#include "core/net/ps_client.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace strata {

int64_t Operation::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

void Operation::AddParts(int n) {
  absl::MutexLock lock(&mu_);
  remaining_ += n;
}

void Operation::PartDone(const absl::Status& status, int64_t version) {
  absl::MutexLock lock(&mu_);
  if (!status.ok() && status_.ok()) status_ = status;
  if (version >= 0) version_ = version_ < 0 ? version : std::min(version_, version);
  remaining_--;
}

PsClient::PsClient(const PsClientOptions& options) : options_(options) {}

PsClient::~PsClient() {
  {
    absl::MutexLock lock(&queue_mu_);
    stop_ = true;
  }
  Wake();
  if (io_thread_.joinable()) io_thread_.join();
}

absl::StatusOr<std::unique_ptr<PsClient>> PsClient::Connect(const PsClientOptions& options) {
  if (options.coordinator.empty()) return absl::InvalidArgumentError("--coordinator is required");
  std::unique_ptr<PsClient> client(new PsClient(options));
  STRATA_RETURN_IF_ERROR(client->Bootstrap());
  client->AttachSharedMemory();
  return client;
}

void PsClient::AttachSharedMemory() {
  std::vector<std::pair<int, Ticket>> offers;
  for (int s = 0; s < num_servers(); ++s) {
    if (regions_[s] == nullptr) continue;
    offers.emplace_back(
        s, SubmitTo(s, wire::Kind::SHM_ATTACH, absl::StrCat("shared memory offer to server ", s)));
  }
  for (const auto& [s, op] : offers) {
    absl::Status shared = Wait(op);
    if (!shared.ok()) {
      std::fprintf(stderr, "[worker %d] server %d: %s; data goes over the socket\n", rank_, s,
                   std::string(shared.message()).c_str());
    }
  }
}

int64_t PsClient::TakeSlot(const Request& r) {
  const bool moves_data =
      r.kind == wire::Kind::PUSH || r.kind == wire::Kind::INIT || r.kind == wire::Kind::PULL;
  if (!moves_data || !sharing_[r.server] || r.chunks.size() != 1 ||
      r.chunks[0].length * sizeof(float) > regions_[r.server]->slot_bytes()) {
    return -1;
  }
  const std::optional<uint32_t> slot = free_slots_[r.server]->Acquire();
  return slot.has_value() ? static_cast<int64_t>(*slot) : -1;
}

void PsClient::ReleaseSlot(Request& r) {
  if (r.slot < 0) return;
  free_slots_[r.server]->Release(static_cast<uint32_t>(r.slot));
  r.slot = -1;
}

void PsClient::StopSharingMemory(int server) {
  if (!sharing_[server]) return;
  sharing_[server] = false;
  for (auto& [id, r] : inflight_) {
    if (r.server == server) ReleaseSlot(r);
  }
  std::fprintf(stderr,
               "[worker %d] server %d's connection was renewed; its data goes over the "
               "socket from now on\n",
               rank_, server);
}

absl::Status PsClient::Bootstrap() {
  STRATA_ASSIGN_OR_RETURN(coordinator_, Socket::Connect(context_, SocketKind::kDealer,
                                                        options_.coordinator, options_.limits));
  const absl::Time deadline = absl::Now() + options_.timeout;
  while (true) {
    OutgoingMessage m(wire::Kind::REGISTER);
    auto h = m.header();
    h.setJobId(options_.job_id);
    h.setSenderRole(options_.role);
    h.setSenderRank(options_.rank);
    auto nodes = h.initNodes(1);
    nodes[0].setRole(options_.role);
    nodes[0].setRank(options_.rank);
    nodes[0].setAddress(options_.serving_address);
    nodes[0].setPeerAddress(options_.peer_address);
    STRATA_RETURN_IF_ERROR(coordinator_->Send(m));
    // The map comes once every node has registered; re-register every few
    // seconds in case the coordinator restarted meanwhile.
    const absl::Time retry = std::min(deadline, absl::Now() + absl::Seconds(5));
    while (absl::Now() < retry) {
      absl::StatusOr<RawMessage> raw = coordinator_->Receive(retry - absl::Now());
      if (!raw.ok()) break;
      STRATA_ASSIGN_OR_RETURN(IncomingMessage reply, Decode(*std::move(raw), options_.limits));
      const auto r = reply.header();
      if (r.getKind() == wire::Kind::ERROR) {
        return WithContext(ErrorFromHeader(r), absl::StrCat("coordinator ", options_.coordinator,
                                                            " refused to register us"));
      }
      if (r.getKind() != wire::Kind::CLUSTER_MAP) continue;
      rank_ = r.getSenderRank();
      const auto expected = r.getExpectedNodes();
      num_workers_ = expected.size() >= 2 ? static_cast<int>(expected[1]) : 0;
      num_fc_workers_ = expected.size() >= 3 ? static_cast<int>(expected[2]) : 0;
      server_addresses_.clear();
      fc_addresses_.clear();
      fc_peer_addresses_.clear();
      for (const auto node : r.getNodes()) {
        if (node.getRole() == wire::Role::FC_WORKER) {
          fc_addresses_.push_back(node.getAddress().cStr());
          fc_peer_addresses_.push_back(node.getPeerAddress().cStr());
        } else {
          server_addresses_.push_back(node.getAddress().cStr());
        }
      }
      break;
    }
    if (rank_ >= 0) break;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("no cluster map from the coordinator ", options_.coordinator, " within ",
                       absl::FormatDuration(options_.timeout),
                       " (is strata_server --rank 0 running there, and have all nodes started?)"));
    }
  }
  for (const std::string& address : server_addresses_) {
    STRATA_ASSIGN_OR_RETURN(
        auto s, Socket::Connect(context_, SocketKind::kDealer, address, options_.limits));
    servers_.push_back(std::move(s));
  }
  for (size_t s = 0; s < servers_.size(); ++s) {
    const std::string endpoint =
        absl::StrCat("inproc://strata-client-monitor-", reinterpret_cast<uintptr_t>(this), "-", s);
    if (zmq_socket_monitor(servers_[s]->raw().handle(), endpoint.c_str(),
                           ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) != 0) {
      return absl::InternalError(absl::StrCat("cannot watch the connection to server ", s, ": ",
                                              zmq_strerror(zmq_errno())));
    }
    auto monitor = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pair);
    monitor->connect(endpoint);
    monitors_.push_back(std::move(monitor));
  }
  disconnected_.assign(servers_.size(), false);
  // Our shared memory regions, offered to the servers once the I/O thread runs.
  regions_.resize(servers_.size());
  free_slots_.resize(servers_.size());
  sharing_.assign(servers_.size(), false);
  for (size_t s = 0; s < servers_.size() && options_.shared_memory; ++s) {
    absl::StatusOr<std::unique_ptr<ShmRegion>> region =
        ShmRegion::Create(options_.shm_slots, options_.shm_slot_bytes);
    if (!region.ok()) {
      std::fprintf(stderr, "[worker %d] no shared memory (%s)\n", rank_,
                   std::string(region.status().message()).c_str());
      break;
    }
    regions_[s] = *std::move(region);
    free_slots_[s] = std::make_unique<ShmSlots>(options_.shm_slots);
  }
  const std::string wake =
      absl::StrCat("inproc://strata-client-wake-", reinterpret_cast<uintptr_t>(this));
  wake_receiver_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pair);
  wake_receiver_->bind(wake);
  {
    absl::MutexLock lock(&queue_mu_);
    wake_sender_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pair);
    wake_sender_->connect(wake);
  }
  io_thread_ = std::thread([this] { IoLoop(); });
  return absl::OkStatus();
}

absl::Status PsClient::SetPlan(PartitionPlan plan) {
  if (plan.servers() != num_servers()) {
    return absl::InvalidArgumentError(absl::StrCat("partition plan for ", plan.servers(),
                                                   " servers, the cluster has ", num_servers()));
  }
  plan_ = std::move(plan);
  return absl::OkStatus();
}

void PsClient::Wake() {
  absl::MutexLock lock(&queue_mu_);
  if (wake_sender_ == nullptr) return;
  try {
    wake_sender_->send(zmq::str_buffer("w"), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    // The I/O thread also polls with a timeout; a lost wake-up only delays it.
  }
}

void PsClient::Enqueue(std::vector<Request> requests) {
  {
    absl::MutexLock lock(&queue_mu_);
    for (Request& r : requests) {
      r.id = next_id_++;
      queue_.push_back(std::move(r));
    }
  }
  Wake();
}

Ticket PsClient::Submit(wire::Kind kind, int64_t iteration, uint32_t key, const Tensor& tensor) {
  auto op = std::make_shared<Operation>(
      absl::StrCat(KindName(kind), " of key ", key, " for iteration ", iteration));
  // One request per chunk: the server applies and answers each chunk as it
  // arrives, so the pull of one chunk overlaps the push of the next.
  std::vector<Request> requests;
  {
    absl::MutexLock lock(&op->mu_);
    for (const Chunk& c : plan_.chunks_of_key(key)) {
      Request r;
      r.server = c.server;
      r.kind = kind;
      r.iteration = iteration;
      r.tensor = tensor;
      r.op = op;
      r.chunks.push_back(c);
      op->waiting_on_.push_back(c.server);
      requests.push_back(std::move(r));
    }
  }
  op->AddParts(static_cast<int>(requests.size()));
  Enqueue(std::move(requests));
  return op;
}

Ticket PsClient::Init(uint32_t key, const Tensor& value) {
  return Submit(wire::Kind::INIT, 0, key, value);
}

Ticket PsClient::Push(int64_t iteration, uint32_t key, const Tensor& gradient) {
  return Submit(wire::Kind::PUSH, iteration, key, gradient);
}

Ticket PsClient::Pull(int64_t iteration, uint32_t key, const Tensor& destination) {
  return Submit(wire::Kind::PULL, iteration, key, destination);
}

Ticket PsClient::SubmitToAll(wire::Kind kind) {
  auto op = std::make_shared<Operation>(KindName(kind));
  std::vector<Request> requests;
  {
    absl::MutexLock lock(&op->mu_);
    for (int s = 0; s < num_servers(); ++s) {
      Request r;
      r.server = s;
      r.kind = kind;
      r.op = op;
      op->waiting_on_.push_back(s);
      requests.push_back(std::move(r));
    }
  }
  op->AddParts(static_cast<int>(requests.size()));
  Enqueue(std::move(requests));
  return op;
}

void PsClient::CancelAll() {
  std::deque<Request> dropped;
  {
    absl::MutexLock lock(&queue_mu_);
    dropped.swap(queue_);
    cancel_ = true;
  }
  for (Request& r : dropped) r.op->PartDone(absl::CancelledError("cancelled"), -1);
  Wake();
  // Wait until the I/O thread has dropped its in-flight requests.
  absl::MutexLock lock(&queue_mu_);
  auto cancelled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(queue_mu_) { return !cancel_; };
  queue_mu_.Await(absl::Condition(&cancelled));
}

absl::Status PsClient::Done() { return Wait(SubmitToAll(wire::Kind::DONE)); }

Ticket PsClient::SubmitTo(int server, wire::Kind kind, std::string what) {
  auto op = std::make_shared<Operation>(std::move(what));
  Request r;
  r.server = server;
  r.kind = kind;
  r.op = op;
  {
    absl::MutexLock lock(&op->mu_);
    op->waiting_on_.push_back(server);
  }
  op->AddParts(1);
  std::vector<Request> requests;
  requests.push_back(std::move(r));
  Enqueue(std::move(requests));
  return op;
}

absl::StatusOr<ClockReport> PsClient::Clocks(int server) {
  Ticket op = SubmitTo(server, wire::Kind::CLOCK, "clock");
  STRATA_RETURN_IF_ERROR(Wait(op));
  absl::MutexLock lock(&op->mu_);
  return op->clocks_;
}

absl::Status PsClient::Wait(const Ticket& ticket) { return WaitWhileAnswered(ticket, absl::Now()); }

absl::Status PsClient::WaitWhileAnswered(const Ticket& ticket, absl::Time started) {
  absl::MutexLock lock(&ticket->mu_);
  auto done = [&ticket]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(ticket->mu_) { return ticket->remaining_ == 0; };
  while (true) {
    // The deadline moves with every reply from any server: only `timeout`
    // of silence fails the wait.
    const absl::Time last_reply = absl::FromUnixNanos(last_reply_unix_ns_.load());
    const absl::Time deadline = std::max(started, last_reply) + options_.timeout;
    if (ticket->mu_.AwaitWithDeadline(absl::Condition(&done), deadline)) break;
    if (absl::FromUnixNanos(last_reply_unix_ns_.load()) > last_reply) continue;
    const std::set<int> servers(ticket->waiting_on_.begin(), ticket->waiting_on_.end());
    std::string who;
    for (int s : servers) {
      absl::StrAppend(&who, who.empty() ? "" : ", ", "server ", s, " (", server_addresses_[s], ")");
    }
    return absl::DeadlineExceededError(absl::StrCat("no reply to ", ticket->what_, " from ", who,
                                                    " within ",
                                                    absl::FormatDuration(options_.timeout)));
  }
  return ticket->status_;
}

absl::Status PsClient::WaitAll(const std::vector<Ticket>& tickets) {
  // One silence budget for all: the wait began when the first ticket's did.
  const absl::Time started = absl::Now();
  absl::Status first;
  for (const Ticket& t : tickets) {
    absl::Status s = WaitWhileAnswered(t, started);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

// Bytes through shared memory count as sent and received: the traffic
// accounting compares with a plan that knows no transport.
uint64_t PsClient::bytes_sent() const {
  uint64_t n = coordinator_->counters().bytes_sent + shm_bytes_sent_;
  for (const auto& s : servers_) n += s->counters().bytes_sent;
  return n;
}

uint64_t PsClient::bytes_received() const {
  uint64_t n = coordinator_->counters().bytes_received + shm_bytes_received_;
  for (const auto& s : servers_) n += s->counters().bytes_received;
  return n;
}

void PsClient::SendRequest(Request& r) {
  OutgoingMessage m(r.kind);
  auto h = m.header();
  h.setJobId(options_.job_id);
  h.setIteration(r.iteration);
  h.setSenderRole(options_.role);
  h.setSenderRank(rank_);
  h.setRequestId(r.id);
  auto slices = h.initSlices(static_cast<unsigned>(r.chunks.size()));
  const bool carries_data = r.kind == wire::Kind::PUSH || r.kind == wire::Kind::INIT;
  Tensor flat = r.tensor.defined() ? r.tensor.View({r.tensor.numel()}) : Tensor();
  if (r.kind == wire::Kind::SHM_ATTACH) {
    const ShmRegion& region = *regions_[r.server];
    h.setShmRegion(region.name());
    h.setShmToken(region.token());
    h.setShmSlotCount(region.slots());
    h.setShmSlotBytes(region.slot_bytes());
    h.setShmHost(ColocationId());
  }
  if (r.slot < 0) r.slot = TakeSlot(r);
  if (r.slot >= 0) {  // the floats go through shared memory (one chunk)
    h.initShmSlots(1).set(0, static_cast<uint32_t>(r.slot));
    if (carries_data) {
      const Chunk& c = r.chunks[0];
      std::memcpy(regions_[r.server]->slot(static_cast<uint32_t>(r.slot)), flat.data() + c.offset,
                  c.length * sizeof(float));
      shm_bytes_sent_ += c.length * sizeof(float);
    }
  }
  for (size_t i = 0; i < r.chunks.size(); ++i) {
    const Chunk& c = r.chunks[i];
    slices[i].setKey(c.key);
    slices[i].setOffset(c.offset);
    slices[i].setLength(c.length);
    if (carries_data && r.slot < 0) {
      m.AddFrame(
          flat.Slice(static_cast<int64_t>(c.offset), static_cast<int64_t>(c.offset + c.length)));
    }
  }
  absl::Status s = servers_[r.server]->Send(m);
  if (!s.ok()) {
    std::fprintf(
        stderr,
        "[worker %d] send to server %d failed (sent again if the connection comes back): %s\n",
        rank_, r.server, std::string(s.message()).c_str());
  }
}

void PsClient::HandleReply(int server, RawMessage raw) {
  absl::StatusOr<IncomingMessage> message = Decode(std::move(raw), options_.limits);
  if (!message.ok()) {
    std::fprintf(stderr, "[worker %d] dropped a malformed reply from server %d: %s\n", rank_,
                 server, std::string(message.status().message()).c_str());
    return;
  }
  const auto h = message->header();
  auto it = inflight_.find(h.getRequestId());
  if (it == inflight_.end()) return;  // a reply to a resent request, already answered
  Request r = std::move(it->second);
  inflight_.erase(it);
  const std::string who = absl::StrCat("server ", server, " (", server_addresses_[server], ")");
  absl::Status status;
  int64_t version = -1;
  switch (h.getKind()) {
    case wire::Kind::ERROR:
      status = WithContext(ErrorFromHeader(h), absl::StrCat(who, " refused ", r.op->what()));
      break;
    case wire::Kind::SHM_ATTACH_ACK:
      // An ack with an error code: the server cannot map our region.
      if (h.getErrorCode() != 0) status = ErrorFromHeader(h);
      sharing_[server] = status.ok();
      break;
    case wire::Kind::PULL_REPLY: {
      // The values come in data frames, or in the shared memory slot the
      // request named.
      const bool shared = r.slot >= 0;
      const auto slices = h.getSlices();
      const auto slots = h.getShmSlots();
      if (shared && (slots.size() != 1 || slots[0] != r.slot)) {
        status = absl::DataLossError(absl::StrCat(who, " answered ", r.op->what(),
                                                  " without the shared memory slot it was given"));
        break;
      }
      if (slices.size() != r.chunks.size() ||
          message->num_frames() != (shared ? 0 : r.chunks.size())) {
        status = absl::DataLossError(
            absl::StrCat(who, " answered ", r.op->what(), " with the wrong number of slices"));
        break;
      }
      float* dst = r.tensor.data();
      for (size_t i = 0; i < r.chunks.size(); ++i) {
        const Chunk& c = r.chunks[i];
        const size_t bytes = c.length * sizeof(float);
        if (slices[i].getOffset() != c.offset || slices[i].getLength() != c.length ||
            (!shared && message->frame_size(i) != bytes)) {
          status = absl::DataLossError(
              absl::StrCat(who, " answered ", r.op->what(), " with a mismatched slice"));
          break;
        }
        if (shared) {
          std::memcpy(dst + c.offset, regions_[server]->slot(static_cast<uint32_t>(r.slot)), bytes);
          shm_bytes_received_ += bytes;
        } else {
          message->CopyFrameTo(i, dst + c.offset);
        }
      }
      version = h.getIteration();
      break;
    }
    case wire::Kind::CLOCK_REPLY: {
      absl::MutexLock lock(&r.op->mu_);
      r.op->clocks_.clocks.clear();
      for (int64_t c : h.getClocks()) r.op->clocks_.clocks.push_back(c);
      r.op->clocks_.max_served_lead = h.getIteration();
      break;
    }
    default:
      break;  // acks
  }
  ReleaseSlot(r);
  if (r.kind == wire::Kind::SHM_ATTACH && regions_[server] != nullptr) {
    regions_[server]->Unlink();  // whatever the answer: the name is not needed any more
  }
  {
    absl::MutexLock lock(&r.op->mu_);
    auto& w = r.op->waiting_on_;
    auto pos = std::find(w.begin(), w.end(), server);
    if (pos != w.end()) w.erase(pos);
  }
  r.op->PartDone(status, version);
}

void PsClient::HandleConnectionEvents(int server) {
  zmq::message_t event, endpoint;
  while (monitors_[server]->recv(event, zmq::recv_flags::dontwait)) {
    if (!monitors_[server]->recv(endpoint, zmq::recv_flags::none) || event.size() < 2) continue;
    uint16_t id = 0;
    std::memcpy(&id, event.data(), sizeof(id));
    if (id == ZMQ_EVENT_DISCONNECTED) {
      disconnected_[server] = true;
    } else if (id == ZMQ_EVENT_CONNECTED && disconnected_[server]) {
      // Back after a drop: whatever the old connection carried may be lost.
      disconnected_[server] = false;
      StopSharingMemory(server);
      int resent = 0;
      for (auto& [request_id, r] : inflight_) {
        if (r.server != server) continue;
        SendRequest(r);
        ++resent;
      }
      std::fprintf(stderr, "[worker %d] reconnected to server %d; resent %d requests\n", rank_,
                   server, resent);
    }
  }
}

void PsClient::IoLoop() {
  std::vector<zmq::pollitem_t> items;
  items.push_back({static_cast<void*>(*wake_receiver_), 0, ZMQ_POLLIN, 0});
  items.push_back({static_cast<void*>(coordinator_->raw()), 0, ZMQ_POLLIN, 0});
  for (auto& s : servers_) items.push_back({static_cast<void*>(s->raw()), 0, ZMQ_POLLIN, 0});
  for (auto& m : monitors_) items.push_back({static_cast<void*>(*m), 0, ZMQ_POLLIN, 0});
  absl::Time next_heartbeat = absl::Now();
  while (true) {
    try {
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(50));
    } catch (const zmq::error_t&) {
      continue;
    }
    if (items[0].revents & ZMQ_POLLIN) {
      zmq::message_t m;
      while (wake_receiver_->recv(m, zmq::recv_flags::dontwait)) {
      }
    }
    std::deque<Request> fresh;
    bool cancel = false;
    {
      absl::MutexLock lock(&queue_mu_);
      if (stop_) break;
      fresh.swap(queue_);
      cancel = cancel_;
    }
    if (cancel) {
      for (auto& [id, r] : inflight_) {
        ReleaseSlot(r);
        r.op->PartDone(absl::CancelledError("cancelled"), -1);
      }
      inflight_.clear();
      absl::MutexLock lock(&queue_mu_);
      cancel_ = false;
    }
    for (Request& r : fresh) {
      SendRequest(r);
      const uint64_t id = r.id;
      inflight_.emplace(id, std::move(r));
    }
    if (items[1].revents & ZMQ_POLLIN) {
      while (coordinator_->ReceiveNow().ok()) {
      }
    }
    for (size_t s = 0; s < servers_.size(); ++s) {
      if (!(items[2 + s].revents & ZMQ_POLLIN)) continue;
      while (true) {
        absl::StatusOr<RawMessage> raw = servers_[s]->ReceiveNow();
        if (!raw.ok()) break;
        last_reply_unix_ns_.store(absl::ToUnixNanos(absl::Now()));
        HandleReply(static_cast<int>(s), *std::move(raw));
      }
    }
    for (size_t s = 0; s < servers_.size(); ++s) {
      if (items[2 + servers_.size() + s].revents & ZMQ_POLLIN) {
        HandleConnectionEvents(static_cast<int>(s));
      }
    }
    const absl::Time now = absl::Now();
    if (now >= next_heartbeat) {
      OutgoingMessage beat(wire::Kind::HEARTBEAT);
      beat.header().setJobId(options_.job_id);
      beat.header().setSenderRole(options_.role);
      beat.header().setSenderRank(rank_);
      (void)coordinator_->Send(beat);
      next_heartbeat = now + options_.heartbeat_every;
    }
  }
}

}  // namespace strata
