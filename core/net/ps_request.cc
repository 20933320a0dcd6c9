#include "core/net/ps_request.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/net/ps_wire.h"
#include "core/net/wire_format.h"
#include "core/status.h"
#include "core/util/clock.h"

namespace strata {

int64_t Operation::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

ClockReport Operation::clocks() const {
  absl::MutexLock lock(&mu_);
  return clocks_;
}

bool Operation::done() const {
  absl::MutexLock lock(&mu_);
  return remaining_ == 0;
}

absl::Status Operation::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

std::vector<int> Operation::waiting_on() const {
  absl::MutexLock lock(&mu_);
  return waiting_on_;
}

int Operation::lane_server() const {
  absl::MutexLock lock(&mu_);
  return on_lane_.empty() ? -1 : on_lane_.front();
}

bool Operation::on_lane(int server) const {
  absl::MutexLock lock(&mu_);
  return std::find(on_lane_.begin(), on_lane_.end(), server) != on_lane_.end();
}

bool Operation::AwaitOffLane(int server, absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto off = [this, server]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return std::find(on_lane_.begin(), on_lane_.end(), server) == on_lane_.end();
  };
  // absl's deadline waits read the wall clock: wait for the time left.
  return mu_.AwaitWithTimeout(absl::Condition(&off), deadline - MonotonicNow());
}

void Operation::AddParts(const std::vector<int>& servers) {
  absl::MutexLock lock(&mu_);
  remaining_ += static_cast<int>(servers.size());
  waiting_on_.insert(waiting_on_.end(), servers.begin(), servers.end());
}

void Operation::EnterLane(int server) {
  absl::MutexLock lock(&mu_);
  on_lane_.push_back(server);
}

void Operation::LeaveLane(int server) {
  absl::MutexLock lock(&mu_);
  auto at = std::find(on_lane_.begin(), on_lane_.end(), server);
  if (at != on_lane_.end()) on_lane_.erase(at);
}

void Operation::SetClocks(ClockReport clocks) {
  absl::MutexLock lock(&mu_);
  clocks_ = std::move(clocks);
}

void Operation::PartAnswered(int server, const absl::Status& status, int64_t version) {
  absl::MutexLock lock(&mu_);
  if (remaining_ == 0) return;  // each part is answered once; a stray answer changes nothing
  if (!status.ok() && status_.ok()) status_ = status;
  if (version >= 0) version_ = version_ < 0 ? version : std::min(version_, version);
  auto at = std::find(waiting_on_.begin(), waiting_on_.end(), server);
  if (at != waiting_on_.end()) waiting_on_.erase(at);
  remaining_--;
}

bool MovesData(MessageType kind) {
  return kind == wire::ps::Kind::PUSH || kind == wire::ps::Kind::INIT ||
         kind == wire::ps::Kind::PULL;
}

void FillRequest(const PsRequest& r, const RequestSender& sender, ShmRegion* region,
                 OutgoingMessage& message) {
  auto h = message.header();
  h.setJobId(sender.job_id);
  h.setIteration(r.iteration);
  h.setSenderRole(sender.role);
  h.setSenderRank(sender.rank);
  h.setRequestId(r.id);
  if (!r.reason.empty()) h.setErrorMessage(r.reason);
  if (r.failed_checkpoint >= 0) h.setFailedCheckpoint(r.failed_checkpoint);
  const bool carries_data = r.kind == wire::ps::Kind::PUSH || r.kind == wire::ps::Kind::INIT;
  const Tensor flat = r.tensor.defined() ? r.tensor.View({r.tensor.numel()}) : Tensor();
  const wire::DataType type =
      r.slot < 0 && (r.kind == wire::ps::Kind::PUSH || r.kind == wire::ps::Kind::PULL)
          ? r.data_type
          : wire::DataType::F32;
  h.setDataType(type);
  if (r.slot >= 0) {  // the floats go through shared memory (one chunk)
    BodyOf<wire::ps::Body>(h).initShmSlots(1).set(0, static_cast<uint32_t>(r.slot));
    if (carries_data) {
      const Chunk& c = r.chunks[0];
      std::memcpy(region->slot(static_cast<uint32_t>(r.slot)), flat.data() + c.offset,
                  c.length * sizeof(float));
    }
  }
  auto slices = BodyOf<wire::ps::Body>(h).initSlices(static_cast<unsigned>(r.chunks.size()));
  for (size_t i = 0; i < r.chunks.size(); ++i) {
    const Chunk& c = r.chunks[i];
    slices[i].setKey(c.key);
    slices[i].setOffset(c.offset);
    slices[i].setLength(c.length);
    if (carries_data && r.slot < 0) {
      message.AddFrame(EncodeFloats(
          flat.Slice(static_cast<int64_t>(c.offset), static_cast<int64_t>(c.offset + c.length)),
          type));
    }
  }
}

namespace {

// A pull reply's values, from its data frames or the request's slot.
ReplyOutcome ApplyPullReply(const IncomingMessage& reply, PsRequest& r, const ShmRegion* region,
                            const std::string& who) {
  const auto h = reply.header();
  const bool shared = r.slot >= 0;
  const auto slices = BodyOf<wire::ps::Body>(h).getSlices();
  const auto slots = BodyOf<wire::ps::Body>(h).getShmSlots();
  auto mismatch = [&](const char* what) {
    return ReplyOutcome{
        absl::DataLossError(absl::StrCat(who, " answered ", r.op->what(), " ", what)), -1};
  };
  if (shared && (slots.size() != 1 || slots[0] != r.slot)) {
    return mismatch("without the shared memory slot it was given");
  }
  if (slices.size() != r.chunks.size() || reply.num_frames() != (shared ? 0 : r.chunks.size())) {
    return mismatch("with the wrong number of slices");
  }
  // Frames carry what the pull asked for; a slot, floats.
  const wire::DataType type = shared ? wire::DataType::F32 : h.getDataType();
  if (type != (shared ? wire::DataType::F32 : r.data_type)) {
    return mismatch(absl::StrCat("in ", WireFormatName(type), ", not the ",
                                 WireFormatName(r.data_type), " it asked for")
                        .c_str());
  }
  float* dst = r.tensor.data();
  for (size_t i = 0; i < r.chunks.size(); ++i) {
    const Chunk& c = r.chunks[i];
    if (slices[i].getOffset() != c.offset || slices[i].getLength() != c.length ||
        (!shared && reply.frame_size(i) != c.length * ElementBytes(type))) {
      return mismatch("with a mismatched slice");
    }
    if (shared) {
      std::memcpy(dst + c.offset, region->slot(static_cast<uint32_t>(r.slot)),
                  c.length * sizeof(float));
    } else {
      DecodeFloats(reply, i, type, dst + c.offset, static_cast<int64_t>(c.length));
    }
  }
  return ReplyOutcome{absl::OkStatus(), h.getIteration()};
}

}  // namespace

ReplyOutcome ApplyReply(const IncomingMessage& reply, PsRequest& r, const ShmRegion* region,
                        const std::string& who) {
  const auto h = reply.header();
  switch (TypeOf(h).code()) {
    case CodeOf(wire::Kind::ERROR):
      return {WithContext(ErrorFromHeader(h), absl::StrCat(who, " refused ", r.op->what())), -1};
    case CodeOf(wire::ps::Kind::PULL_REPLY):
      return ApplyPullReply(reply, r, region, who);
    case CodeOf(wire::ps::Kind::CLOCK_REPLY): {
      ClockReport report;
      for (int64_t c : BodyOf<wire::ps::Body>(h).getClocks()) report.clocks.push_back(c);
      report.max_served_lead = h.getIteration();
      r.op->SetClocks(std::move(report));
      return {};
    }
    default:
      // Acks; one with an error code is a refusal (a shared memory offer).
      if (h.getErrorCode() != 0) return {ErrorFromHeader(h), -1};
      return {};
  }
}

}  // namespace strata
