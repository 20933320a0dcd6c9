// DevicePolicy: who may compute on the device (this process's cores today,
// a GPU's stream set later) and when. The StepLoop (runtime/step_loop.h)
// acquires the device when a compute phase of an iteration begins without
// it, and releases it at every wait on a peer (core/util/wait_observer.h)
// and at the iteration's end. A policy shared by several jobs' loops
// decides which one computes: crossover time-sharing is such a policy.
//
// Contract: Acquire and Release alternate on each caller's thread, starting
// with Acquire; Acquire may block, Release and IterationEnds never do.
// IterationEnds follows the last Release of each iteration (completed or
// rewound), so that a policy may also share the device by whole
// iterations.
#ifndef STRATA_CORE_CONTROL_DEVICE_POLICY_H_
#define STRATA_CORE_CONTROL_DEVICE_POLICY_H_

namespace strata {

class DevicePolicy {
 public:
  virtual ~DevicePolicy() = default;
  // Returns once the caller may compute.
  virtual void Acquire() = 0;
  // The caller stops computing until its next Acquire.
  virtual void Release() = 0;
  // The caller's iteration is over (its boundary work included).
  virtual void IterationEnds() {}
  // Asked by a holder at the start of a compute phase: whether it should
  // let the device go (and ask again) so that a waiting job may compute.
  // Never blocks.
  virtual bool ShouldYield() { return false; }
  // Whether the caller takes turns with other jobs for the device
  // (crossover's token) and may stop: what the device.sharing knob
  // (core/control/knobs.h) switches. False for a policy without turns.
  virtual bool TakesTurns() const { return false; }
  // Between iterations (the device not held): take turns (true) or compute
  // whenever the caller likes, contending with the others for the cores
  // (false). Ignored by a policy without turns.
  virtual void SetTakesTurns(bool on) { (void)on; }
};

// One job per device: the device is always the caller's.
class AlwaysHeldDevice final : public DevicePolicy {
 public:
  void Acquire() override {}
  void Release() override {}
};

}  // namespace strata

#endif  // STRATA_CORE_CONTROL_DEVICE_POLICY_H_
