// FcServer: the stanza FC worker's side of its conv workers' exchange
// (core/net/fc_link.h is the conv worker's): it admits the conv workers it
// serves, receives each iteration's activations and labels straight into
// their rows of one batch tensor (in conv-rank order), and answers each
// conv worker the gradients of its rows, keeping them to answer a resent
// request again.
//
// Per iteration, either gathered (all at once) or on arrival:
//
//   server.Gather(i, timeout);                   // every conv worker's rows
//   auto [x, labels] = server.Batch();
//   server.Answer(i, grads_of_x);
//
//   server.Begin(i);
//   for (int n = 0; n < server.conv_workers(); ++n) {
//     STRATA_ASSIGN_OR_RETURN(int rank, server.NextArrival(i, timeout));
//     auto [x, labels] = server.Rows(rank);
//     server.AnswerOne(rank, i, grads_of_x);
//   }
//
// Bad input (wrong shape, batch, byte count, label range, iteration, or a
// conv worker that is not ours) gets an error reply naming what is wrong,
// and the server keeps serving the others. A conv worker answered before
// the others may send its next iteration's activations early (under SSP
// or ASP): they are kept and taken in, checked against that iteration's
// rows, when it begins.
//
// Not thread-safe: the FC worker's loop thread drives it.
#ifndef STRATA_FC_WORKERS_FC_SERVER_H_
#define STRATA_FC_WORKERS_FC_SERVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/net/admission.h"
#include "core/net/message_endpoint.h"
#include "core/net/transport.h"
#include "core/net/wire_format.h"
#include "core/tensor/tensor.h"
#include "core/util/wait_observer.h"

namespace strata {

class FcServer {
 public:
  // Serves the conv workers of `conv_ranks` on `endpoint`; `boundary`: the
  // shape of one sample's activations.
  FcServer(MessageEndpoint& endpoint, const WireLimits& limits, const std::vector<int>& conv_ranks,
           Shape boundary, int64_t classes, const JobCredentials& credentials, int rank);

  // From the next Begin on, conv worker r sends rows[r] rows (every conv
  // worker's, in rank order).
  void TakeRows(const std::vector<int64_t>& rows);

  // Starts gathering `iteration`: the conv workers' rows of it laid out in
  // one batch tensor, and any activations for it that came early taken in.
  void Begin(int64_t iteration);
  // Begin, then receives until every conv worker's activations for
  // `iteration` are in (Batch() then holds them all). DeadlineExceeded
  // naming the conv workers missing after `timeout`.
  absl::Status Gather(int64_t iteration, absl::Duration timeout);
  // After Begin: receives until a conv worker's activations for `iteration`
  // are in that were not handed out yet, and hands them out: returns that
  // conv worker's rank (its rows: Rows(rank)). DeadlineExceeded as Gather.
  absl::StatusOr<int> NextArrival(int64_t iteration, absl::Duration timeout);

  // The batch being gathered, in conv-rank order, with its labels.
  std::pair<Tensor, std::vector<int32_t>> Batch() const;
  // Conv worker `rank`'s rows of it, with their labels.
  std::pair<Tensor, std::vector<int32_t>> Rows(int rank) const;
  // The rows of every conv worker served, summed (after Begin).
  int64_t total_rows() const { return batch_.dim(0); }
  int conv_workers() const { return static_cast<int>(peers_.size()); }

  // Sends conv worker `rank` `grads`, the gradients of its rows, in the
  // type its activations came in.
  void AnswerOne(int rank, int64_t iteration, const Tensor& grads);
  // Sends each conv worker its slice of `grads`, the gradients of Batch().
  void Answer(int64_t iteration, const Tensor& grads);

  // After the last iteration: answers repeated requests for the last
  // gradients until every conv worker has said DONE (or `timeout` passes:
  // a conv worker whose DONE was lost for good has its gradients anyway).
  void ServeUntilDone(int64_t iterations, absl::Duration timeout);

  uint64_t refused() const { return refused_; }
  // Told while Gather and NextArrival wait for activations (null: none).
  void set_wait_observer(WaitObserver* observer) { wait_observer_ = observer; }
  uint64_t bytes_sent() const { return endpoint_.bytes_sent(); }
  uint64_t bytes_received() const { return endpoint_.bytes_received(); }

 private:
  // What one conv worker sent for the iteration being gathered, and what we
  // answered last (kept to answer a resent request again).
  struct ConvPeer {
    std::string identity;
    int64_t rows = 0;      // of the global batch, from the batch shares in force
    bool arrived = false;  // its activations for the iteration being gathered are in
    bool taken = false;    // handed out on their own (NextArrival)
    uint64_t request_id = 0;
    Tensor activations;  // this peer's rows of the batch being gathered
    std::vector<int32_t> labels;
    // What its activations came as; their gradients go back as the same.
    wire::DataType data_type = wire::DataType::F32;
    int64_t answered_iteration = -1;
    uint64_t answered_request = 0;
    Tensor answered_grads;  // as sent (in answered_type), for repeats
    wire::DataType answered_type = wire::DataType::F32;
    bool done = false;  // said DONE: it has the last gradients
    // Its activations for the next iteration, come while this one is still
    // being gathered; taken in when that iteration begins.
    std::optional<IncomingMessage> early;
  };

  // Conv workers' messages read per poll; the rest wait for the next.
  static constexpr int kMaxMessagesPerPoll = 64;

  // Receives and handles conv workers' messages until `done()` (checked
  // before every poll); DeadlineExceeded naming the conv workers whose
  // activations for `iteration` are not in after `timeout`.
  absl::Status ReceiveUntil(const std::function<bool()>& done, int64_t iteration,
                            absl::Duration timeout);
  // Handles every message polled as of `iteration`; each bad one, and each
  // the endpoint refused, gets an error reply naming why.
  void HandleAll(EndpointEvents& events, int64_t iteration);
  // Answers a request that failed with an error reply naming why.
  void Refuse(const std::string& identity, uint64_t request_id, const absl::Status& why);
  bool AllDone() const;
  bool AllArrived() const;
  void Send(const ConvPeer& p);
  // A HELLO registers a conv worker's connection; anything else must come
  // on a registered one.
  absl::Status Handle(IncomingMessage& m, int64_t iteration);
  // A registered conv worker's DONE or activations (kept early, answered
  // again when resent, or taken into its rows of `iteration`).
  absl::Status Accept(IncomingMessage& m, int64_t iteration);

  MessageEndpoint& endpoint_;
  const WireLimits limits_;
  Admission admission_;
  Shape boundary_;  // one sample's activations
  int64_t classes_;
  uint64_t job_id_;
  int rank_;
  std::map<int, ConvPeer> peers_;  // by conv rank
  Tensor batch_;                   // the activations of the iteration being gathered
  uint64_t refused_ = 0;
  WaitObserver* wait_observer_ = nullptr;
};

}  // namespace strata

#endif  // STRATA_FC_WORKERS_FC_SERVER_H_
