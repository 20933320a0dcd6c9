#include "core/layers/batchnorm2d.h"

#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"

namespace strata {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using flags = dnnl::normalization_flags;

struct BatchNorm2d::Kernels {
  memory::desc data_md, stat_md;
  dnnl::batch_normalization_forward::primitive_desc train_pd;
  dnnl::batch_normalization_forward train;
  dnnl::batch_normalization_forward::primitive_desc infer_pd;
  dnnl::batch_normalization_forward infer;
  dnnl::batch_normalization_backward::primitive_desc bwd_pd;
  dnnl::batch_normalization_backward bwd;
};

absl::StatusOr<std::unique_ptr<BatchNorm2d>> BatchNorm2d::Create(std::string name,
                                                                 const Shape& input_shape,
                                                                 const BatchNormOptions& options) {
  if (input_shape.rank() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("batchnorm2d needs an image input [H, W, C], got ", input_shape.ToString()));
  }
  if (!(options.epsilon > 0.0f) || !(options.momentum >= 0.0f && options.momentum <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batchnorm2d needs epsilon > 0 and 0 <= momentum <= 1; got epsilon=", options.epsilon,
        " momentum=", options.momentum));
  }
  return std::unique_ptr<BatchNorm2d>(new BatchNorm2d(std::move(name), input_shape, options));
}

BatchNorm2d::BatchNorm2d(std::string name, const Shape& input_shape,
                         const BatchNormOptions& options)
    : Layer(std::move(name), input_shape), options_(options) {
  const Shape channels{input_shape[2]};
  weight_ = {this->name() + ".weight", Tensor::Full(channels, 1.0f), Tensor::Zeros(channels)};
  bias_ = {this->name() + ".bias", Tensor::Zeros(channels), Tensor::Zeros(channels)};
  running_mean_ = {this->name() + ".running_mean", Tensor::Zeros(channels)};
  running_var_ = {this->name() + ".running_var", Tensor::Full(channels, 1.0f)};
}

BatchNorm2d::~BatchNorm2d() = default;

void BatchNorm2d::InitParameters(Rng& rng) {
  weight_.value.Fill(1.0f);
  bias_.value.Fill(0.0f);
  running_mean_.value.Fill(0.0f);
  running_var_.value.Fill(1.0f);
}

bool BatchNorm2d::AbsorbFollowingRelu() {
  STRATA_CHECK(kernels_.empty(), "BatchNorm2d::AbsorbFollowingRelu after the first Forward");
  fused_relu_ = true;
  return true;
}

BatchNorm2d::Kernels& BatchNorm2d::KernelsFor(int64_t batch) {
  auto it = kernels_.find(batch);
  if (it != kernels_.end()) return *it->second;
  auto k = std::make_unique<Kernels>();
  k->data_md = memory::desc(NhwcToDnnlDims(BatchShape(batch, input_shape())), dt::f32, tag::nhwc);
  k->stat_md = memory::desc({input_shape()[2]}, dt::f32, tag::x);
  const auto scale_shift = fused_relu_
                               ? flags::use_scale | flags::use_shift | flags::fuse_norm_relu
                               : flags::use_scale | flags::use_shift;
  k->train_pd = dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, k->data_md,
                                              options_.epsilon, scale_shift),
      CpuEngine());
  k->train = dnnl::batch_normalization_forward(k->train_pd);
  k->infer_pd = dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_inference, k->data_md,
                                              options_.epsilon,
                                              scale_shift | flags::use_global_stats),
      CpuEngine());
  k->infer = dnnl::batch_normalization_forward(k->infer_pd);
  k->bwd_pd = dnnl::batch_normalization_backward::primitive_desc(
      dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, k->data_md, k->data_md,
                                               options_.epsilon, scale_shift),
      CpuEngine(), k->train_pd);
  k->bwd = dnnl::batch_normalization_backward(k->bwd_pd);
  return *kernels_.emplace(batch, std::move(k)).first->second;
}

Tensor BatchNorm2d::Forward(const Tensor& input, bool training) {
  const int64_t batch = input.dim(0);
  Kernels& k = KernelsFor(batch);
  Tensor output = Tensor::Empty(input.shape());
  const memory scale = WrapMemory(k.stat_md, weight_.value);
  const memory shift = WrapMemory(k.stat_md, bias_.value);
  if (!training) {
    k.infer.execute(CpuStream(), {{DNNL_ARG_SRC, WrapMemory(k.data_md, input)},
                                  {DNNL_ARG_MEAN, WrapMemory(k.stat_md, running_mean_.value)},
                                  {DNNL_ARG_VARIANCE, WrapMemory(k.stat_md, running_var_.value)},
                                  {DNNL_ARG_SCALE, scale},
                                  {DNNL_ARG_SHIFT, shift},
                                  {DNNL_ARG_DST, WrapMemory(k.data_md, output)}});
    return output;
  }
  const Shape channels{input_shape()[2]};
  batch_mean_ = Tensor::Empty(channels);
  batch_var_ = Tensor::Empty(channels);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, WrapMemory(k.data_md, input)},
                                          {DNNL_ARG_MEAN, WrapMemory(k.stat_md, batch_mean_)},
                                          {DNNL_ARG_VARIANCE, WrapMemory(k.stat_md, batch_var_)},
                                          {DNNL_ARG_SCALE, scale},
                                          {DNNL_ARG_SHIFT, shift},
                                          {DNNL_ARG_DST, WrapMemory(k.data_md, output)}};
  if (fused_relu_) {
    OwnedMemory mask = AllocateMemory(k.train_pd.workspace_desc());
    args.emplace(DNNL_ARG_WORKSPACE, mask.memory);
    relu_mask_ = mask.storage;
  }
  k.train.execute(CpuStream(), args);
  // Running statistics, with the unbiased variance as PyTorch keeps it.
  const int64_t count = batch * input_shape()[0] * input_shape()[1];
  const float unbias = count > 1 ? static_cast<float>(count) / static_cast<float>(count - 1) : 1.0f;
  const float m = options_.momentum;
  float* rm = running_mean_.value.data();
  float* rv = running_var_.value.data();
  for (int64_t c = 0; c < channels[0]; ++c) {
    rm[c] = (1.0f - m) * rm[c] + m * batch_mean_.data()[c];
    rv[c] = (1.0f - m) * rv[c] + m * batch_var_.data()[c] * unbias;
  }
  input_ = input;
  return output;
}

Tensor BatchNorm2d::Backward(const Tensor& grad_output, bool need_input_grad) {
  STRATA_CHECK(input_.defined(), "BatchNorm2d::Backward without a training Forward");
  Kernels& k = KernelsFor(input_.dim(0));
  // oneDNN computes diff_src together with the parameter gradients.
  Tensor grad_input = Tensor::Empty(input_.shape());
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, WrapMemory(k.data_md, input_)},
      {DNNL_ARG_MEAN, WrapMemory(k.stat_md, batch_mean_)},
      {DNNL_ARG_VARIANCE, WrapMemory(k.stat_md, batch_var_)},
      {DNNL_ARG_DIFF_DST, WrapMemory(k.data_md, grad_output)},
      {DNNL_ARG_SCALE, WrapMemory(k.stat_md, weight_.value)},
      {DNNL_ARG_SHIFT, WrapMemory(k.stat_md, bias_.value)},
      {DNNL_ARG_DIFF_SRC, WrapMemory(k.data_md, grad_input)},
      {DNNL_ARG_DIFF_SCALE, WrapMemory(k.stat_md, weight_.grad)},
      {DNNL_ARG_DIFF_SHIFT, WrapMemory(k.stat_md, bias_.grad)}};
  if (fused_relu_) args.emplace(DNNL_ARG_WORKSPACE, WrapMemory(k.bwd_pd.workspace_desc(), relu_mask_));
  k.bwd.execute(CpuStream(), args);
  input_ = Tensor();
  relu_mask_ = Tensor();
  return need_input_grad ? grad_input : Tensor();
}

}  // namespace strata
