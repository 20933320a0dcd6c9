// ClientIoLoop: the one background thread that serves a node's client-side
// connections (the transport loop under PsClient's parts, as ps-lite's Van
// is under its Postoffice and KVWorker).
//
// Each part (the membership client, the key-value client) registers the
// ZeroMQ sockets or descriptors it polls, and is called on the loop's
// thread before every poll (to set its items' events and say how long the
// poll may wait for it) and after every poll (to read, send and time what
// it owns, whether or not its items are ready). Wake() cuts a poll short
// from any thread, for a part with something queued to send.
//
// Contracts: parts are added before Start and outlive Stop (the owner stops
// the loop before destroying them); they are called in the order added,
// and none may rely on that order; a part's items, once added, are polled
// only by this thread (a descriptor may be polled while another thread uses
// its socket; a ZeroMQ socket item may not).
//
//   ClientIoLoop loop;
//   loop.Add(&membership, membership.PollItems());
//   loop.Add(&kv, kv.PollItems());
//   STRATA_RETURN_IF_ERROR(loop.Start());
#ifndef STRATA_CORE_NET_CLIENT_IO_LOOP_H_
#define STRATA_CORE_NET_CLIENT_IO_LOOP_H_

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "zmq.hpp"

namespace strata {

class ClientIoLoop {
 public:
  class Part {
   public:
    virtual ~Part() = default;
    // Before each poll: may change the events of its items (in the order
    // added); returns the longest the poll may wait on its account.
    virtual absl::Duration BeforePoll(absl::Span<zmq::pollitem_t> items) = 0;
    // After each poll, with its items' results.
    virtual void AfterPoll(absl::Span<const zmq::pollitem_t> items) = 0;
  };

  ClientIoLoop();
  ~ClientIoLoop();  // stops the loop
  ClientIoLoop(const ClientIoLoop&) = delete;
  ClientIoLoop& operator=(const ClientIoLoop&) = delete;

  // Before Start.
  void Add(Part* part, std::vector<zmq::pollitem_t> items);
  absl::Status Start();
  // Ends the current poll early (any thread, any time; never blocks).
  void Wake();
  // Stops the thread and waits for it; the parts are not called afterwards.
  void Stop();

 private:
  void Run();

  struct Registered {
    Part* part;
    size_t first_item;
    size_t item_count;
  };
  std::vector<Registered> parts_;
  std::vector<zmq::pollitem_t> items_;  // the wake descriptor first, then each part's
  int wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace strata

#endif  // STRATA_CORE_NET_CLIENT_IO_LOOP_H_
