// Backend: one device's implementation of the ops layers and optimizers
// compute with, behind one interface so that an op is written once per
// device and tested once for all of them (tests/core/backend_ops_test.cc
// runs every op on every backend present against a reference, and every
// backward against finite differences of its forward).
//
// Registered from the start: the CPU backend ("cpu") and the checking
// device ("check", core/ops/checking_backend.h: host memory that faults
// outside the backend's own calls, so a missing copy fails a test on a
// machine without a GPU). The CUDA backend registers itself
// (RegisterCudaBackend, core/ops/cuda/cuda_backend.h) where it is built and
// a device is present. An op a backend lacks returns Unimplemented, naming
// the op and the backend; the table test lists those as not run.
//
// Tensors passed to a backend's ops live on its device (Upload/Download
// move them; an operand elsewhere is InvalidArgument naming the op); each
// op checks that its operands' sizes agree (InvalidArgument otherwise).
// Ops are ordered: a device may run them asynchronously, in call order, and
// the host sees a result only through Download, which waits for it.
// Thread safety: backends hold no state per call; the registry is filled
// at start-up.
#ifndef STRATA_CORE_OPS_BACKEND_H_
#define STRATA_CORE_OPS_BACKEND_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/ops/layer_kernels.h"
#include "core/ops/shared/routed_choices.h"
#include "core/ops/shared/update_rules.h"
#include "core/tensor/tensor.h"
#include "core/util/pending_value.h"

namespace strata {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda"
  virtual Device device() const = 0;
  // A tensor on this backend's device with `host`'s values, and back.
  // Upload returns once `host` may change or go (a GPU's copy may still be
  // in flight); Download waits for every op before it.
  virtual absl::StatusOr<Tensor> Upload(const Tensor& host) const = 0;
  virtual absl::StatusOr<Tensor> Download(const Tensor& tensor) const = 0;
  // A host copy of `tensor` as the ops before this call leave it, without
  // waiting: Get() waits for that copy alone, not for ops queued after it
  // (a GPU records an event after the copy). Errors come from Get(). The
  // default downloads at once.
  virtual PendingValue<Tensor> DownloadLater(const Tensor& tensor) const;
  // The most bytes this device's tensors ever held at once, counted in the
  // allocator's blocks, where the device has memory of its own (a GPU, the
  // checking device); none for the host.
  virtual std::optional<uint64_t> PeakMemoryBytes() const { return std::nullopt; }

  // Element-wise ops (their meaning: core/ops/cpu/elementwise.h). In-place
  // calls are allowed where elementwise.h allows them.
  virtual absl::Status Fill(float value, const Tensor& x) const;
  // dst = src, equally many elements, both on this device.
  virtual absl::Status Copy(const Tensor& src, const Tensor& dst) const;
  virtual absl::Status Relu(const Tensor& x, const Tensor& y) const;
  virtual absl::Status ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) const;
  virtual absl::Status Multiply(const Tensor& x, const Tensor& mask, const Tensor& y) const;
  virtual absl::Status Add(const Tensor& a, const Tensor& b, const Tensor& out) const;
  virtual absl::Status Axpy(float alpha, const Tensor& x, const Tensor& y) const;
  virtual absl::Status Scale(float alpha, const Tensor& x) const;
  // out {rows, cols}; bias {cols}.
  virtual absl::Status BroadcastRows(const Tensor& bias, const Tensor& out) const;
  // m {rows, cols}; sums {cols}; with `accumulate` the sums are added to
  // what `sums` holds.
  virtual absl::Status SumRows(const Tensor& m, const Tensor& sums, bool accumulate) const;

  // c = alpha * op(a) * op(b) + beta * c on row-major matrices, op(x) being
  // x or its transpose: op(a) {m, k}, op(b) {k, n}, c {m, n}. With beta 0,
  // c's old values are never read (NaN included).
  virtual absl::Status Gemm(bool transpose_a, bool transpose_b, float alpha, const Tensor& a,
                            const Tensor& b, float beta, const Tensor& c) const;

  // Softmax cross-entropy of logits {N, K} against int32 labels {N} in
  // [0, K) (the caller checks them): row_loss {N} gets -log softmax[label],
  // row_correct {N} 1 where the row's first arg-max is the label, else 0;
  // unless `grad` is undefined it gets {N, K} (softmax - onehot) *
  // grad_scale / N.
  virtual absl::Status SoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels,
                                           float grad_scale, const Tensor& row_loss,
                                           const Tensor& row_correct, const Tensor& grad) const;

  // Inverted dropout's mask: element i is 0 with probability p, else
  // 1/(1-p), drawn from (seed, stream, i) alone (core/ops/shared/counter_random.h),
  // so every backend draws the same mask.
  virtual absl::Status DropoutMask(uint64_t seed, uint64_t stream, float p,
                                   const Tensor& mask) const;

  // Mixture-of-Experts routing (Tutel/GShard), by index: T tokens, E
  // experts, k choices per token. expert and rank are int32 {T, k}: token
  // t's i-th choice goes to expert[t, i] (in [0, E), as TopKGate leaves it)
  // at row rank[t, i] of that expert's slots, and is kept when its rank is
  // below the slot buffers' capacity C (slots {E, C, D}); the rest are
  // dropped (core/ops/shared/routed_choices.h).
  //
  // probs {T, E} = softmax of each row of logits; expert = each row's k
  // most probable experts, most probable first (ties: the lower index);
  // gate {T, k} their probabilities, divided by their sum when `normalize`.
  // Requires 1 <= k <= E.
  virtual absl::Status TopKGate(const Tensor& logits, bool normalize, const Tensor& probs,
                                const Tensor& expert, const Tensor& gate) const;
  // grad_logits {T, E} from grad_gate {T, k} and prob_grad {E} (may be
  // undefined), a gradient added to every token's probabilities alike.
  virtual absl::Status TopKGateBackward(const Tensor& probs, const Tensor& expert,
                                        const Tensor& gate, const Tensor& grad_gate,
                                        const Tensor& prob_grad, bool normalize,
                                        const Tensor& grad_logits) const;
  // rank = each choice's place in its expert's queue, need (int32 {E}) the
  // choices each expert received: every first choice before any second,
  // tokens in order, or, with `prioritize_confident` (batch-prioritised
  // routing), in decreasing order of probs[t, expert[t, 0]] (ties: the
  // lower token).
  virtual absl::Status RankChoices(const Tensor& probs, const Tensor& expert,
                                   bool prioritize_confident, const Tensor& rank,
                                   const Tensor& need) const;
  // load {2, E}: row 0 the mean over tokens of probs[:, e], row 1 the
  // fraction of tokens whose first choice is e (the load-balancing loss's
  // factors).
  virtual absl::Status GateLoad(const Tensor& probs, const Tensor& expert,
                                const Tensor& load) const;
  // slots[expert, rank] = x[t] ({T, D}) for every kept choice; other rows
  // are left as they are.
  virtual absl::Status DispatchTokens(const Tensor& expert, const Tensor& rank, const Tensor& x,
                                      const Tensor& slots) const;
  // y[t] = sum over t's kept choices of gate * rows[expert, rank] (weight 1
  // when gate is undefined: the backward of DispatchTokens); zeros for a
  // token without one.
  virtual absl::Status CombineTokens(const Tensor& expert, const Tensor& rank, const Tensor& gate,
                                     const Tensor& rows, const Tensor& y) const;
  // The backward of CombineTokens with a gate: grad_rows[expert, rank] =
  // gate * grad_y[t] (no other row written) and grad_gate = <grad_y[t],
  // rows[expert, rank]> for kept choices, 0 for dropped ones.
  virtual absl::Status CombineTokensBackward(const Tensor& expert, const Tensor& rank,
                                             const Tensor& gate, const Tensor& grad_y,
                                             const Tensor& rows, const Tensor& grad_rows,
                                             const Tensor& grad_gate) const;

  // One optimizer update of `param` from `grad` (core/ops/shared/update_rules.h):
  // `state` holds rule.state_slots() * param.numel() floats (undefined when
  // the rule keeps none); `step` is the parameter's 1-based update count.
  virtual absl::Status ApplyUpdate(const UpdateRule& rule, const Tensor& param, const Tensor& grad,
                                   const Tensor& state, float lr, int64_t step,
                                   float grad_scale) const;

  // The kernels of one layer for one batch size (core/ops/layer_kernels.h).
  virtual absl::StatusOr<std::unique_ptr<ConvolutionKernel>> MakeConvolution(
      const ConvolutionShape& shape) const;
  virtual absl::StatusOr<std::unique_ptr<PoolingKernel>> MakePooling(
      const PoolingShape& shape) const;
  virtual absl::StatusOr<std::unique_ptr<BatchNormKernel>> MakeBatchNorm(
      const BatchNormShape& shape) const;

  // An uninitialised float tensor on this backend's device.
  Tensor Empty(const Shape& shape, DType dtype = DType::kF32) const {
    return Tensor::Empty(shape, dtype, device());
  }
  // A float tensor of zeros on this device; aborts if Fill fails.
  Tensor Zeros(const Shape& shape) const;

 protected:
  // Unimplemented naming `op` and this backend.
  absl::Status Lacks(const char* op) const;
};

class BackendRegistry {
 public:
  // Holds the CPU backend from the start.
  static BackendRegistry& Global();
  // AlreadyExists for a second backend of one name.
  absl::Status Register(std::unique_ptr<Backend> backend);
  // NotFound naming the registered backends.
  absl::StatusOr<const Backend*> Find(const std::string& name) const;
  // The backend computing on `device` (the first registered for it);
  // NotFound naming the device when none is.
  absl::StatusOr<const Backend*> ForDevice(Device device) const;
  std::vector<const Backend*> backends() const;

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
};

// The CPU backend of the global registry: what layers compute with unless
// they are given another.
const Backend& HostBackend();

// A device as users name it: "cpu", "check" (the checking device),
// "cuda" or "cuda:N" (the N-th visible GPU; "cuda" is cuda:0).
struct DeviceSpec {
  Device device = Device::kCpu;
  int index = 0;
  std::string ToString() const;
};
// InvalidArgument naming the accepted forms for any other text.
absl::StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& text);

// `host` on `backend`'s device: `host` itself on the CPU backend (no
// copy), an upload elsewhere.
absl::StatusOr<Tensor> ToDevice(const Backend& backend, const Tensor& host);
// A host copy of `t` through the backend of its device (a clone of a host
// tensor).
absl::StatusOr<Tensor> HostCopy(const Tensor& t);
// `t` on the host: `t` itself when it is there (no copy), else a download.
absl::StatusOr<Tensor> ToHost(const Tensor& t);
// Gives `dst`, on any device, the values of the equally large `host`.
absl::Status CopyFromHost(const Tensor& host, const Tensor& dst);

// InvalidArgument naming `op` and both sizes unless a and b have as many
// elements.
absl::Status CheckSameSize(const char* op, const Tensor& a, const Tensor& b);
// InvalidArgument unless `matrix` is {rows, cols} and `row` has cols elements.
absl::Status CheckRowShape(const char* op, const Tensor& matrix, const Tensor& row);
// InvalidArgument naming `op` unless every defined operand has `dtype`
// and lives on `device`.
absl::Status CheckOperands(const char* op, Device device, DType dtype,
                           std::initializer_list<const Tensor*> operands);
// InvalidArgument naming `op` and the shapes unless a, b and c are matrices
// whose products fit (Backend::Gemm); sets m, n, k.
absl::Status CheckGemmShapes(bool transpose_a, bool transpose_b, const Tensor& a, const Tensor& b,
                             const Tensor& c, int64_t* m, int64_t* n, int64_t* k);
// InvalidArgument naming what is wrong unless logits are {N, K}, labels an
// int32 {N}, row_loss and row_correct {N}, and grad (when defined) {N, K}.
absl::Status CheckLossShapes(const Tensor& logits, const Tensor& labels, const Tensor& row_loss,
                             const Tensor& row_correct, const Tensor& grad);
// InvalidArgument naming `op` and the shapes unless expert is {T, k} with
// k >= 1, every defined tensor of `per_expert` {T, E} (one shape, E >= k)
// and every defined one of `per_choice` {T, k}.
absl::Status CheckGateShapes(const char* op, const Tensor& expert,
                             std::initializer_list<const Tensor*> per_expert,
                             std::initializer_list<const Tensor*> per_choice);
// The shape checks of TopKGateBackward, GateLoad and CombineTokensBackward
// (InvalidArgument naming the op and what is wrong).
absl::Status CheckGateBackwardShapes(const Tensor& probs, const Tensor& expert, const Tensor& gate,
                                     const Tensor& grad_gate, const Tensor& prob_grad,
                                     const Tensor& grad_logits);
absl::Status CheckGateLoadShapes(const Tensor& probs, const Tensor& expert, const Tensor& load);
absl::Status CheckCombineBackwardShapes(const Tensor& expert, const Tensor& rank,
                                        const Tensor& gate, const Tensor& grad_y,
                                        const Tensor& rows, const Tensor& grad_rows,
                                        const Tensor& grad_gate);
// The choices of checked expert and rank tensors ({T, k}, int32) whose slot
// buffers have `capacity` rows per expert, for a backend's kernels.
RoutedChoices RoutedChoicesOf(const Tensor& expert, const Tensor& rank, int64_t capacity);
// InvalidArgument naming `op` and the shapes unless expert and rank are
// {T, k}, tokens {T, D} and slots {E, C, D}.
absl::Status CheckDispatchShapes(const char* op, const Tensor& expert, const Tensor& rank,
                                 const Tensor& tokens, const Tensor& slots);
// InvalidArgument unless grad has param's size and state holds
// rule.state_slots() floats per element (or is undefined for none).
absl::Status CheckUpdateShapes(const UpdateRule& rule, const Tensor& param, const Tensor& grad,
                               const Tensor& state);

}  // namespace strata

#endif  // STRATA_CORE_OPS_BACKEND_H_
