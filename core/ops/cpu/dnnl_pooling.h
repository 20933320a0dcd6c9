// DnnlPooling: max or average pooling for one batch size on the host,
// through oneDNN. Max pooling keeps oneDNN's workspace (argmax positions)
// from the training Forward for Backward; average pooling excludes padding
// from the divisor.
#ifndef STRATA_CORE_OPS_CPU_DNNL_POOLING_H_
#define STRATA_CORE_OPS_CPU_DNNL_POOLING_H_

#include <memory>

#include "core/ops/shared/kernel_shapes.h"
#include "core/tensor/tensor.h"

namespace strata {

class DnnlPooling {
 public:
  explicit DnnlPooling(const PoolingShape& shape);
  ~DnnlPooling();
  // output {N, H_out, W_out, C} from input {N, H, W, C}.
  void Forward(const Tensor& input, const Tensor& output, bool training);
  // grad_input from grad_output, after a training Forward.
  void Backward(const Tensor& grad_output, const Tensor& grad_input);

 private:
  struct Kernels;
  std::unique_ptr<Kernels> kernels_;
  Tensor workspace_;  // max pooling's argmax record
};

}  // namespace strata

#endif  // STRATA_CORE_OPS_CPU_DNNL_POOLING_H_
