#include "core/ops/cpu/dnnl_batchnorm.h"

#include <unordered_map>

#include "core/ops/cpu/dnnl_runtime.h"

namespace strata {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using flags = dnnl::normalization_flags;

struct DnnlBatchNorm::Kernels {
  memory::desc data_md, stat_md;
  dnnl::batch_normalization_forward::primitive_desc train_pd;
  dnnl::batch_normalization_forward train;
  dnnl::batch_normalization_forward::primitive_desc infer_pd;
  dnnl::batch_normalization_forward infer;
  dnnl::batch_normalization_backward::primitive_desc bwd_pd;
  dnnl::batch_normalization_backward bwd;
};

DnnlBatchNorm::DnnlBatchNorm(const BatchNormShape& s)
    : shape_(s), kernels_(std::make_unique<Kernels>()) {
  Kernels& k = *kernels_;
  k.data_md = memory::desc({s.batch, s.channels, s.height, s.width}, dt::f32, tag::nhwc);
  k.stat_md = memory::desc({s.channels}, dt::f32, tag::x);
  const auto scale_shift = s.fused_relu
                               ? flags::use_scale | flags::use_shift | flags::fuse_norm_relu
                               : flags::use_scale | flags::use_shift;
  k.train_pd = dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, k.data_md,
                                              s.epsilon, scale_shift),
      CpuEngine());
  k.train = dnnl::batch_normalization_forward(k.train_pd);
  k.infer_pd = dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_inference, k.data_md,
                                              s.epsilon, scale_shift | flags::use_global_stats),
      CpuEngine());
  k.infer = dnnl::batch_normalization_forward(k.infer_pd);
  k.bwd_pd = dnnl::batch_normalization_backward::primitive_desc(
      dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, k.data_md, k.data_md,
                                               s.epsilon, scale_shift),
      CpuEngine(), k.train_pd);
  k.bwd = dnnl::batch_normalization_backward(k.bwd_pd);
}

DnnlBatchNorm::~DnnlBatchNorm() = default;

void DnnlBatchNorm::ForwardInference(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                     const Tensor& running_mean, const Tensor& running_var,
                                     const Tensor& output) {
  Kernels& k = *kernels_;
  k.infer.execute(CpuStream(), {{DNNL_ARG_SRC, WrapMemory(k.data_md, input)},
                                {DNNL_ARG_MEAN, WrapMemory(k.stat_md, running_mean)},
                                {DNNL_ARG_VARIANCE, WrapMemory(k.stat_md, running_var)},
                                {DNNL_ARG_SCALE, WrapMemory(k.stat_md, weight)},
                                {DNNL_ARG_SHIFT, WrapMemory(k.stat_md, bias)},
                                {DNNL_ARG_DST, WrapMemory(k.data_md, output)}});
}

void DnnlBatchNorm::ForwardTraining(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                    const Tensor& running_mean, const Tensor& running_var,
                                    const Tensor& output) {
  Kernels& k = *kernels_;
  const Shape channels{shape_.channels};
  batch_mean_ = Tensor::Empty(channels);
  batch_var_ = Tensor::Empty(channels);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, WrapMemory(k.data_md, input)},
                                          {DNNL_ARG_MEAN, WrapMemory(k.stat_md, batch_mean_)},
                                          {DNNL_ARG_VARIANCE, WrapMemory(k.stat_md, batch_var_)},
                                          {DNNL_ARG_SCALE, WrapMemory(k.stat_md, weight)},
                                          {DNNL_ARG_SHIFT, WrapMemory(k.stat_md, bias)},
                                          {DNNL_ARG_DST, WrapMemory(k.data_md, output)}};
  if (shape_.fused_relu) {
    OwnedMemory mask = AllocateMemory(k.train_pd.workspace_desc());
    args.emplace(DNNL_ARG_WORKSPACE, mask.memory);
    relu_mask_ = mask.storage;
  }
  k.train.execute(CpuStream(), args);
  // Running statistics, with the unbiased variance as PyTorch keeps it.
  const int64_t count = shape_.batch * shape_.height * shape_.width;
  const float unbias = count > 1 ? static_cast<float>(count) / static_cast<float>(count - 1) : 1.0f;
  const float m = shape_.momentum;
  float* rm = running_mean.data();
  float* rv = running_var.data();
  for (int64_t c = 0; c < shape_.channels; ++c) {
    rm[c] = (1.0f - m) * rm[c] + m * batch_mean_.data()[c];
    rv[c] = (1.0f - m) * rv[c] + m * batch_var_.data()[c] * unbias;
  }
}

void DnnlBatchNorm::Backward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                             const Tensor& grad_output, const Tensor& grad_weight,
                             const Tensor& grad_bias, const Tensor& grad_input) {
  Kernels& k = *kernels_;
  // oneDNN computes diff_src together with the parameter gradients.
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, WrapMemory(k.data_md, input)},
                                          {DNNL_ARG_MEAN, WrapMemory(k.stat_md, batch_mean_)},
                                          {DNNL_ARG_VARIANCE, WrapMemory(k.stat_md, batch_var_)},
                                          {DNNL_ARG_DIFF_DST, WrapMemory(k.data_md, grad_output)},
                                          {DNNL_ARG_SCALE, WrapMemory(k.stat_md, weight)},
                                          {DNNL_ARG_SHIFT, WrapMemory(k.stat_md, bias)},
                                          {DNNL_ARG_DIFF_SRC, WrapMemory(k.data_md, grad_input)},
                                          {DNNL_ARG_DIFF_SCALE, WrapMemory(k.stat_md, grad_weight)},
                                          {DNNL_ARG_DIFF_SHIFT, WrapMemory(k.stat_md, grad_bias)}};
  if (shape_.fused_relu) {
    args.emplace(DNNL_ARG_WORKSPACE, WrapMemory(k.bwd_pd.workspace_desc(), relu_mask_));
  }
  k.bwd.execute(CpuStream(), args);
  relu_mask_ = Tensor();
}

}  // namespace strata
