// WaitObserver: the seam through which a thread that blocks on a peer tells
// whoever schedules its compute that it waits, and when it stops. Whatever
// waits on the network (KvClient::Wait, FcLink::Exchange, the FC worker's
// gather, the MoE expert exchange) brackets the wait with a ScopedWait on
// the observer it was given; with none (null), nobody is told.
//
// The runtime's StepLoop (runtime/step_loop.h) is the observer of a
// worker's components: it releases the device while they wait, so another
// job may compute, and counts the time as communication.
//
// A component that computes in steps (a model runs layer after layer) also
// tells the observer of each point between two steps (MayYield), where the
// compute could change hands without changing what is computed: a policy
// that shares the device by weights lets another job in there.
//
// Contract: WaitBegins and WaitEnds come in pairs on the waiting thread and
// may nest (an observer counts depth); MayYield comes outside any wait; an
// observer is called only from the thread that drives the component it was
// given to.
#ifndef STRATA_CORE_UTIL_WAIT_OBSERVER_H_
#define STRATA_CORE_UTIL_WAIT_OBSERVER_H_

namespace strata {

class WaitObserver {
 public:
  virtual ~WaitObserver() = default;
  virtual void WaitBegins() = 0;
  virtual void WaitEnds() = 0;
  // Between two compute steps; may block until the caller may go on.
  virtual void MayYield() {}
};

// Tells `observer` (may be null) of a wait for the scope's lifetime.
class ScopedWait {
 public:
  explicit ScopedWait(WaitObserver* observer) : observer_(observer) {
    if (observer_ != nullptr) observer_->WaitBegins();
  }
  ~ScopedWait() {
    if (observer_ != nullptr) observer_->WaitEnds();
  }
  ScopedWait(const ScopedWait&) = delete;
  ScopedWait& operator=(const ScopedWait&) = delete;

 private:
  WaitObserver* observer_;
};

}  // namespace strata

#endif  // STRATA_CORE_UTIL_WAIT_OBSERVER_H_
