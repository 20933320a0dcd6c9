#include "core/ops/backend.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/ops/cpu_backend.h"

namespace strata {

absl::Status Backend::Lacks(const char* op) const {
  return absl::UnimplementedError(
      absl::StrCat(op, " is not implemented on the ", name(), " backend"));
}

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
absl::Status Backend::SumRows(const Tensor&, const Tensor&) const { return Lacks("sum_rows"); }

BackendRegistry& BackendRegistry::Global() {
  static BackendRegistry* registry = [] {
    auto* r = new BackendRegistry();
    (void)r->Register(std::make_unique<CpuBackend>());
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

std::vector<const Backend*> BackendRegistry::backends() const {
  std::vector<const Backend*> out;
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
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

}  // namespace strata
