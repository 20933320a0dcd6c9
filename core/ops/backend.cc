#include "core/ops/backend.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/ops/checking_backend.h"
#include "core/ops/cpu_backend.h"
#include "core/status.h"

namespace strata {

absl::Status Backend::Lacks(const char* op) const {
  return absl::UnimplementedError(
      absl::StrCat(op, " is not implemented on the ", name(), " backend"));
}

PendingValue<Tensor> Backend::DownloadLater(const Tensor& tensor) const {
  return PendingValue<Tensor>([copy = Download(tensor)]() { return copy; });
}

absl::Status Backend::Fill(float, const Tensor&) const { return Lacks("fill"); }
absl::Status Backend::Copy(const Tensor&, const Tensor&) const { return Lacks("copy"); }
absl::Status Backend::Relu(const Tensor&, const Tensor&) const { return Lacks("relu"); }
absl::Status Backend::ReluBackward(const Tensor&, const Tensor&, const Tensor&) const {
  return Lacks("relu_backward");
}
absl::Status Backend::Multiply(const Tensor&, const Tensor&, const Tensor&) const {
  return Lacks("multiply");
}
absl::Status Backend::Add(const Tensor&, const Tensor&, const Tensor&) const {
  return Lacks("add");
}
absl::Status Backend::Axpy(float, const Tensor&, const Tensor&) const { return Lacks("axpy"); }
absl::Status Backend::Scale(float, const Tensor&) const { return Lacks("scale"); }
absl::Status Backend::BroadcastRows(const Tensor&, const Tensor&) const {
  return Lacks("broadcast_rows");
}
absl::Status Backend::SumRows(const Tensor&, const Tensor&, bool) const {
  return Lacks("sum_rows");
}
absl::Status Backend::Gemm(bool, bool, float, const Tensor&, const Tensor&, float,
                           const Tensor&) const {
  return Lacks("gemm");
}
absl::Status Backend::SoftmaxCrossEntropy(const Tensor&, const Tensor&, float, const Tensor&,
                                          const Tensor&, const Tensor&) const {
  return Lacks("softmax_cross_entropy");
}
absl::Status Backend::DropoutMask(uint64_t, uint64_t, float, const Tensor&) const {
  return Lacks("dropout_mask");
}
absl::Status Backend::TopKGate(const Tensor&, bool, const Tensor&, const Tensor&,
                               const Tensor&) const {
  return Lacks("topk_gate");
}
absl::Status Backend::TopKGateBackward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                       const Tensor&, bool, const Tensor&) const {
  return Lacks("topk_gate_backward");
}
absl::Status Backend::RankChoices(const Tensor&, const Tensor&, bool, const Tensor&,
                                  const Tensor&) const {
  return Lacks("rank_choices");
}
absl::Status Backend::GateLoad(const Tensor&, const Tensor&, const Tensor&) const {
  return Lacks("gate_load");
}
absl::Status Backend::DispatchTokens(const Tensor&, const Tensor&, const Tensor&,
                                     const Tensor&) const {
  return Lacks("dispatch_tokens");
}
absl::Status Backend::CombineTokens(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                    const Tensor&) const {
  return Lacks("combine_tokens");
}
absl::Status Backend::CombineTokensBackward(const Tensor&, const Tensor&, const Tensor&,
                                            const Tensor&, const Tensor&, const Tensor&,
                                            const Tensor&) const {
  return Lacks("combine_tokens_backward");
}
absl::Status Backend::ApplyUpdate(const UpdateRule&, const Tensor&, const Tensor&, const Tensor&,
                                  float, int64_t, float) const {
  return Lacks("apply_update");
}

absl::StatusOr<std::unique_ptr<ConvolutionKernel>> Backend::MakeConvolution(
    const ConvolutionShape&) const {
  return Lacks("convolution");
}
absl::StatusOr<std::unique_ptr<PoolingKernel>> Backend::MakePooling(const PoolingShape&) const {
  return Lacks("pooling");
}
absl::StatusOr<std::unique_ptr<BatchNormKernel>> Backend::MakeBatchNorm(
    const BatchNormShape&) const {
  return Lacks("batchnorm");
}

Tensor Backend::Zeros(const Shape& shape) const {
  Tensor t = Empty(shape);
  STRATA_CHECK_OK(Fill(0.0f, t));
  return t;
}

BackendRegistry& BackendRegistry::Global() {
  static BackendRegistry* registry = [] {
    auto* r = new BackendRegistry();
    (void)r->Register(std::make_unique<CpuBackend>());
    (void)r->Register(std::make_unique<CheckingBackend>());
    return r;
  }();
  return *registry;
}

const Backend& HostBackend() {
  static const Backend* cpu = *BackendRegistry::Global().Find("cpu");
  return *cpu;
}

absl::Status BackendRegistry::Register(std::unique_ptr<Backend> backend) {
  for (const auto& b : backends_) {
    if (b->name() == backend->name()) {
      return absl::AlreadyExistsError(
          absl::StrCat("a backend named ", backend->name(), " is registered already"));
    }
  }
  backends_.push_back(std::move(backend));
  return absl::OkStatus();
}

absl::StatusOr<const Backend*> BackendRegistry::Find(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& b : backends_) {
    if (b->name() == name) return b.get();
    names.push_back(b->name());
  }
  return absl::NotFoundError(absl::StrCat("no backend named \"", name,
                                          "\" (registered: ", absl::StrJoin(names, ", "), ")"));
}

absl::StatusOr<const Backend*> BackendRegistry::ForDevice(Device device) const {
  for (const auto& b : backends_) {
    if (b->device() == device) return b.get();
  }
  return absl::NotFoundError(
      absl::StrCat("no backend computes on the ", DeviceName(device), " device"));
}

std::vector<const Backend*> BackendRegistry::backends() const {
  std::vector<const Backend*> out;
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
}

std::string DeviceSpec::ToString() const {
  if (device == Device::kCuda) return absl::StrCat("cuda:", index);
  return DeviceName(device);
}

absl::StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& text) {
  DeviceSpec spec;
  if (text == "cpu") return spec;
  if (text == "check") {
    spec.device = Device::kCheck;
    return spec;
  }
  spec.device = Device::kCuda;
  if (text == "cuda") return spec;
  const std::string prefix = "cuda:";
  if (text.rfind(prefix, 0) == 0 && text.size() > prefix.size() &&
      text.find_first_not_of("0123456789", prefix.size()) == std::string::npos &&
      text.size() - prefix.size() <= 4) {
    spec.index = std::stoi(text.substr(prefix.size()));
    return spec;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown device \"", text, "\" (cpu, cuda, cuda:N for the N-th GPU, or check)"));
}

absl::StatusOr<Tensor> ToDevice(const Backend& backend, const Tensor& host) {
  if (backend.device() == Device::kCpu && host.device() == Device::kCpu) return host;
  return backend.Upload(host);
}

absl::StatusOr<Tensor> HostCopy(const Tensor& t) {
  if (t.device() == Device::kCpu) return t.Clone();
  STRATA_ASSIGN_OR_RETURN(const Backend* backend, BackendRegistry::Global().ForDevice(t.device()));
  return backend->Download(t);
}

absl::StatusOr<Tensor> ToHost(const Tensor& t) {
  if (t.device() == Device::kCpu) return t;
  return HostCopy(t);
}

absl::Status CopyFromHost(const Tensor& host, const Tensor& dst) {
  STRATA_RETURN_IF_ERROR(CheckSameSize("copy from the host", host, dst));
  if (dst.device() == Device::kCpu) {
    dst.CopyFrom(host);
    return absl::OkStatus();
  }
  STRATA_ASSIGN_OR_RETURN(const Backend* backend,
                          BackendRegistry::Global().ForDevice(dst.device()));
  STRATA_ASSIGN_OR_RETURN(Tensor uploaded, backend->Upload(host));
  return backend->Copy(uploaded.View(dst.shape()), dst);
}

absl::Status CheckSameSize(const char* op, const Tensor& a, const Tensor& b) {
  if (a.numel() == b.numel()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": operands of ", a.numel(), " and ", b.numel(), " elements"));
}

absl::Status CheckRowShape(const char* op, const Tensor& matrix, const Tensor& row) {
  if (matrix.rank() == 2 && row.numel() == matrix.dim(1)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(op, ": a matrix of shape ",
                                                 matrix.shape().ToString(), " and a row of ",
                                                 row.numel(), " elements"));
}

absl::Status CheckOperands(const char* op, Device device, DType dtype,
                           std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands) {
    if (!t->defined()) continue;
    if (t->device() != device || t->dtype() != dtype) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": an operand is ", DTypeName(t->dtype()), " on the ",
                       DeviceName(t->device()), " device; this backend takes ", DTypeName(dtype),
                       " on the ", DeviceName(device), " device"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckGemmShapes(bool transpose_a, bool transpose_b, const Tensor& a, const Tensor& b,
                             const Tensor& c, int64_t* m, int64_t* n, int64_t* k) {
  if (a.rank() != 2 || b.rank() != 2 || c.rank() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("gemm needs matrices, got ",
                                                   a.shape().ToString(), ", ", b.shape().ToString(),
                                                   " and ", c.shape().ToString()));
  }
  *m = transpose_a ? a.dim(1) : a.dim(0);
  *k = transpose_a ? a.dim(0) : a.dim(1);
  const int64_t kb = transpose_b ? b.dim(1) : b.dim(0);
  *n = transpose_b ? b.dim(0) : b.dim(1);
  if (kb != *k || c.dim(0) != *m || c.dim(1) != *n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gemm: op(a) ", *m, "x", *k, " times op(b) ", kb, "x", *n, " into c ", c.shape().ToString(),
        " (transposed: a ", transpose_a, ", b ", transpose_b, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckLossShapes(const Tensor& logits, const Tensor& labels, const Tensor& row_loss,
                             const Tensor& row_correct, const Tensor& grad) {
  if (logits.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("softmax_cross_entropy needs logits [N, K], got ", logits.shape().ToString()));
  }
  const int64_t n = logits.dim(0);
  if (labels.dtype() != DType::kI32 || labels.numel() != n || row_loss.numel() != n ||
      row_correct.numel() != n || (grad.defined() && grad.shape() != logits.shape())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "softmax_cross_entropy: logits ", logits.shape().ToString(), " with ",
        DTypeName(labels.dtype()), " labels ", labels.shape().ToString(), ", row losses ",
        row_loss.shape().ToString(), ", row hits ", row_correct.shape().ToString(),
        grad.defined() ? absl::StrCat(" and a gradient ", grad.shape().ToString()) : ""));
  }
  return absl::OkStatus();
}

absl::Status CheckUpdateShapes(const UpdateRule& rule, const Tensor& param, const Tensor& grad,
                               const Tensor& state) {
  STRATA_RETURN_IF_ERROR(CheckSameSize("apply_update", param, grad));
  const int64_t want = rule.state_slots() * param.numel();
  const int64_t have = state.defined() ? state.numel() : 0;
  if (want != have) {
    return absl::InvalidArgumentError(absl::StrCat(
        "apply_update: the rule keeps ", want, " floats of state for this parameter, got ", have));
  }
  return absl::OkStatus();
}

absl::Status CheckGateShapes(const char* op, const Tensor& expert,
                             std::initializer_list<const Tensor*> per_expert,
                             std::initializer_list<const Tensor*> per_choice) {
  auto describe = [&] {
    std::string all = absl::StrCat("choices ", expert.shape().ToString());
    for (const Tensor* t : per_expert) {
      if (t->defined()) absl::StrAppend(&all, ", ", t->shape().ToString());
    }
    return all;
  };
  if (expert.rank() != 2 || expert.dim(1) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " needs choices [T, k] with k >= 1, got ", expert.shape().ToString()));
  }
  for (const Tensor* t : per_expert) {
    if (!t->defined()) continue;
    if (t->rank() != 2 || t->dim(0) != expert.dim(0) || t->dim(1) < expert.dim(1) ||
        t->shape() != (*per_expert.begin())->shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": token rows [T, E] with E >= k expected, got ", describe()));
    }
  }
  for (const Tensor* t : per_choice) {
    if (t->defined() && t->shape() != expert.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": every per-choice operand must be ",
                                                     expert.shape().ToString(), ", got ",
                                                     t->shape().ToString()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckGateBackwardShapes(const Tensor& probs, const Tensor& expert, const Tensor& gate,
                                     const Tensor& grad_gate, const Tensor& prob_grad,
                                     const Tensor& grad_logits) {
  STRATA_RETURN_IF_ERROR(
      CheckGateShapes("topk_gate_backward", expert, {&probs, &grad_logits}, {&gate, &grad_gate}));
  if (!prob_grad.defined()) return absl::OkStatus();
  return CheckRowShape("topk_gate_backward", probs, prob_grad);
}

absl::Status CheckGateLoadShapes(const Tensor& probs, const Tensor& expert, const Tensor& load) {
  STRATA_RETURN_IF_ERROR(CheckGateShapes("gate_load", expert, {&probs}, {}));
  if (load.numel() == 2 * probs.dim(1)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("gate_load needs a load of [2, ", probs.dim(1),
                                                 "], got ", load.shape().ToString()));
}

absl::Status CheckCombineBackwardShapes(const Tensor& expert, const Tensor& rank,
                                        const Tensor& gate, const Tensor& grad_y,
                                        const Tensor& rows, const Tensor& grad_rows,
                                        const Tensor& grad_gate) {
  constexpr const char* kOp = "combine_tokens_backward";
  STRATA_RETURN_IF_ERROR(CheckDispatchShapes(kOp, expert, rank, grad_y, rows));
  STRATA_RETURN_IF_ERROR(CheckSameSize(kOp, rows, grad_rows));
  STRATA_RETURN_IF_ERROR(CheckGateShapes(kOp, expert, {}, {&gate, &grad_gate}));
  if (gate.defined() && grad_gate.defined()) return absl::OkStatus();
  return absl::InvalidArgumentError("combine_tokens_backward needs the gate and its gradient");
}

RoutedChoices RoutedChoicesOf(const Tensor& expert, const Tensor& rank, int64_t capacity) {
  RoutedChoices r;
  r.expert = expert.i32_data();
  r.rank = rank.i32_data();
  r.tokens = expert.dim(0);
  r.k = static_cast<int>(expert.dim(1));
  r.capacity = capacity;
  return r;
}

absl::Status CheckDispatchShapes(const char* op, const Tensor& expert, const Tensor& rank,
                                 const Tensor& tokens, const Tensor& slots) {
  if (expert.rank() != 2 || rank.shape() != expert.shape() || tokens.rank() != 2 ||
      tokens.dim(0) != expert.dim(0) || slots.rank() != 3 || slots.dim(2) != tokens.dim(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, " needs choices [T, k], their ranks alike, tokens [T, D] and slots [E, C, D]; got ",
        expert.shape().ToString(), ", ", rank.shape().ToString(), ", ", tokens.shape().ToString(),
        " and ", slots.shape().ToString()));
  }
  return absl::OkStatus();
}

}  // namespace strata
