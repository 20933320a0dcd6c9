// The requests a KvClient sends to parameter servers, and the completion
// state behind the Ticket a caller waits on. Both of the client's paths use
// them: the ZeroMQ socket (any server) and the shared-memory lane (a server
// on the same host, core/net/shared_memory_lane.h).
//
// An Operation (one Push, Pull, Init, ...) has one part per request: one
// chunk of the partition plan, or one server. Each part is answered once,
// by whichever path carried it last. While a part travels on a lane the
// operation records that server, so a caller waiting for it reads that
// lane itself instead of sleeping until another thread does.
#ifndef STRATA_CORE_NET_PS_REQUEST_H_
#define STRATA_CORE_NET_PS_REQUEST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/net/partition_plan.h"
#include "core/net/ps_wire.h"
#include "core/net/shm_region.h"
#include "core/net/transport.h"

namespace strata {

struct ClockReport {
  std::vector<int64_t> clocks;  // iterations pushed, per worker
  int64_t max_served_lead = 0;  // see ParameterStore::max_served_lead
};

class Operation {
 public:
  explicit Operation(std::string what) : what_(std::move(what)) {}

  const std::string& what() const { return what_; }
  // Smallest version seen in pull replies (-1 before any).
  int64_t version() const;
  ClockReport clocks() const;
  bool done() const;
  // The first error of any part, once done().
  absl::Status status() const;
  // The servers of the parts not answered yet (for error messages).
  std::vector<int> waiting_on() const;
  // A server whose lane carries an unanswered part, or -1.
  int lane_server() const;
  bool on_lane(int server) const;
  // Waits until no part is on `server`'s lane; false when `deadline` (on
  // the monotonic clock, core/util/clock.h) passed first.
  bool AwaitOffLane(int server, absl::Time deadline) const;

  // For the client's paths. AddParts comes before any part is sent.
  void AddParts(const std::vector<int>& servers);
  void EnterLane(int server);
  void LeaveLane(int server);
  void SetClocks(ClockReport clocks);
  void PartAnswered(int server, const absl::Status& status, int64_t version);

 private:
  const std::string what_;
  mutable absl::Mutex mu_;
  int remaining_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  int64_t version_ ABSL_GUARDED_BY(mu_) = -1;
  std::vector<int> waiting_on_ ABSL_GUARDED_BY(mu_);  // server of each unanswered part
  std::vector<int> on_lane_ ABSL_GUARDED_BY(mu_);     // server of each part on a lane
  ClockReport clocks_ ABSL_GUARDED_BY(mu_);
};
using Ticket = std::shared_ptr<Operation>;

// One request to one server: a data request carries chunks of `tensor`.
struct PsRequest {
  uint64_t id = 0;  // unique per path and server connection
  int server = 0;
  MessageType kind = wire::ps::Kind::PULL;
  int64_t iteration = 0;
  std::vector<Chunk> chunks;
  Tensor tensor;  // push/init source or pull destination (whole parameter)
  // What a push's or pull's floats travel as on a socket (core/net/wire_format.h);
  // inits and shared-memory slots carry fp32 whatever it says.
  wire::DataType data_type = wire::DataType::F32;
  Ticket op;
  int64_t slot = -1;   // the shared memory slot carrying its floats, or -1: frames
  int hellos = 0;      // times sent again behind a HELLO (a renewed connection)
  int sends = 0;       // times sent over the socket (0: still in a backlog)
  absl::Time sent_at;  // its last send (monotonic clock)
  std::string reason;  // a LEAVE's: why the worker stops
  // A DONE's: an epoch whose checkpoint part could not be written (-1:
  // none); `reason` says why.
  int64_t failed_checkpoint = -1;
};

// Who sends: stamped on every request.
struct RequestSender {
  uint64_t job_id = 1;
  wire::Role role = wire::Role::CONV_WORKER;
  int rank = -1;
};

// Whether `kind` moves floats (push, init, pull).
bool MovesData(MessageType kind);

// Fills `message` (made with request.kind) for `request`. A push's or
// init's floats go as data frames (a push's in request.data_type, which a
// pull asks its reply to carry), or, when request.slot >= 0, are copied
// into that slot of `region`.
void FillRequest(const PsRequest& request, const RequestSender& sender, ShmRegion* region,
                 OutgoingMessage& message);

// What a server's reply means for its request: the error it carries, the
// version of a pull (whose values it copies into request.tensor, from the
// data frames or from the request's slot of `region`), the clocks of a
// clock request. DataLoss when a pull reply does not match its request.
// `who` names the server in errors.
struct ReplyOutcome {
  absl::Status status;
  int64_t version = -1;
};
ReplyOutcome ApplyReply(const IncomingMessage& reply, PsRequest& request, const ShmRegion* region,
                        const std::string& who);

}  // namespace strata

#endif  // STRATA_CORE_NET_PS_REQUEST_H_
