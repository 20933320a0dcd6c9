#include "core/layers/conv2d.h"

#include <cmath>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"

namespace strata {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct Conv2d::Kernels {
  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd;
  dnnl::convolution_backward_weights bwd_weights;
  memory::desc src_md, dst_md, user_weight_md, bias_md;
  LayoutConverter weight_to_fwd;        // OIHW -> forward kernel's layout
  LayoutConverter fwd_weight_to_bwd;    // forward layout -> backward-data layout
  LayoutConverter diff_weight_to_user;  // backward-weights layout -> OIHW
};

absl::StatusOr<std::unique_ptr<Conv2d>> Conv2d::Create(std::string name, const Shape& input_shape,
                                                       const Conv2dOptions& o) {
  if (input_shape.rank() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv2d needs an image input [H, W, C], got ", input_shape.ToString()));
  }
  if (o.out_channels <= 0 || o.kernel <= 0 || o.stride <= 0 || o.padding < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "conv2d needs out_channels, kernel, stride > 0 and padding >= 0; got out_channels=",
        o.out_channels, " kernel=", o.kernel, " stride=", o.stride, " padding=", o.padding));
  }
  if (input_shape[0] + 2 * o.padding < o.kernel || input_shape[1] + 2 * o.padding < o.kernel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "conv2d kernel ", o.kernel, " is larger than the padded input ", input_shape.ToString()));
  }
  return std::unique_ptr<Conv2d>(new Conv2d(std::move(name), input_shape, o));
}

Conv2d::Conv2d(std::string name, const Shape& input_shape, const Conv2dOptions& options)
    : Layer(std::move(name), input_shape), options_(options) {
  const int64_t h = (input_shape[0] + 2 * options.padding - options.kernel) / options.stride + 1;
  const int64_t w = (input_shape[1] + 2 * options.padding - options.kernel) / options.stride + 1;
  output_shape_ = Shape{h, w, options.out_channels};
  const int64_t in_c = input_shape[2];
  weight_ = ZeroParameter(this->name() + ".weight",
                          {options.out_channels, in_c, options.kernel, options.kernel});
  if (options.bias) bias_ = ZeroParameter(this->name() + ".bias", {options.out_channels});
}

std::vector<Parameter*> Conv2d::parameters() {
  if (options_.bias) return {&weight_, &bias_};
  return {&weight_};
}

Conv2d::~Conv2d() = default;

void Conv2d::InitParameters(Rng& rng) {
  // PyTorch's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
  const float bound = 1.0f / std::sqrt(static_cast<float>(weight_.value.shape().inner()));
  FillUniform(weight_.value, rng, bound);
  if (options_.bias) FillUniform(bias_.value, rng, bound);
}

int64_t Conv2d::ForwardFlopsPerSample() const {
  return 2 * output_shape_.numel() * input_shape()[2] * options_.kernel * options_.kernel;
}

Conv2d::Kernels& Conv2d::KernelsFor(int64_t batch) {
  auto it = kernels_.find(batch);
  if (it != kernels_.end()) return *it->second;
  auto k = std::make_unique<Kernels>();
  const auto& eng = CpuEngine();
  const memory::dims strides{options_.stride, options_.stride};
  const memory::dims padding{options_.padding, options_.padding};
  const memory::dims src_dims = NhwcToDnnlDims(BatchShape(batch, input_shape()));
  const memory::dims dst_dims = NhwcToDnnlDims(BatchShape(batch, output_shape_));
  const auto& wshape = weight_.value.shape();
  const memory::dims weight_dims{wshape[0], wshape[1], wshape[2], wshape[3]};
  k->src_md = memory::desc(src_dims, dt::f32, tag::nhwc);
  k->dst_md = memory::desc(dst_dims, dt::f32, tag::nhwc);
  k->user_weight_md = memory::desc(weight_dims, dt::f32, tag::oihw);
  k->bias_md = memory::desc({options_.out_channels}, dt::f32, tag::x);
  const memory::desc any_weight_md(weight_dims, dt::f32, tag::any);

  // A zero memory::desc tells oneDNN there is no bias.
  const memory::desc bias_md = options_.bias ? k->bias_md : memory::desc();
  k->fwd_pd = dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_direct, k->src_md, any_weight_md,
                                      bias_md, k->dst_md, strides, padding, padding),
      eng);
  k->fwd = dnnl::convolution_forward(k->fwd_pd);
  k->bwd_data_pd = dnnl::convolution_backward_data::primitive_desc(
      dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, k->src_md,
                                            any_weight_md, k->dst_md, strides, padding, padding),
      eng, k->fwd_pd);
  k->bwd_data = dnnl::convolution_backward_data(k->bwd_data_pd);
  k->bwd_weights_pd = dnnl::convolution_backward_weights::primitive_desc(
      dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, k->src_md,
                                               any_weight_md, bias_md, k->dst_md, strides, padding,
                                               padding),
      eng, k->fwd_pd);
  k->bwd_weights = dnnl::convolution_backward_weights(k->bwd_weights_pd);
  k->weight_to_fwd = LayoutConverter(k->user_weight_md, k->fwd_pd.weights_desc());
  k->fwd_weight_to_bwd = LayoutConverter(k->fwd_pd.weights_desc(), k->bwd_data_pd.weights_desc());
  k->diff_weight_to_user =
      LayoutConverter(k->bwd_weights_pd.diff_weights_desc(), k->user_weight_md);
  return *kernels_.emplace(batch, std::move(k)).first->second;
}

Tensor Conv2d::Forward(const Tensor& input, bool training) {
  const int64_t batch = input.dim(0);
  Kernels& k = KernelsFor(batch);
  Tensor output = Tensor::Empty(BatchShape(batch, output_shape_));
  OwnedMemory weights = k.weight_to_fwd.Convert(WrapMemory(k.user_weight_md, weight_.value));
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, WrapMemory(k.src_md, input)},
                                          {DNNL_ARG_WEIGHTS, weights.memory},
                                          {DNNL_ARG_DST, WrapMemory(k.dst_md, output)}};
  if (options_.bias) args.emplace(DNNL_ARG_BIAS, WrapMemory(k.bias_md, bias_.value));
  k.fwd.execute(CpuStream(), args);
  if (training) {
    input_ = input;
    weight_in_layout_ = weights.storage.defined() ? weights.storage : weight_.value;
  }
  return output;
}

Tensor Conv2d::Backward(const Tensor& grad_output, bool need_input_grad) {
  STRATA_CHECK(input_.defined(), "Conv2d::Backward without a training Forward");
  const int64_t batch = input_.dim(0);
  Kernels& k = KernelsFor(batch);
  const memory diff_dst = WrapMemory(k.dst_md, grad_output);

  // Write straight into weight_.grad when the kernel's layout is OIHW already.
  const bool direct = !k.diff_weight_to_user.needed();
  OwnedMemory diff_weights = direct
                                 ? OwnedMemory{WrapMemory(k.user_weight_md, weight_.grad), Tensor()}
                                 : AllocateMemory(k.bwd_weights_pd.diff_weights_desc());
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, WrapMemory(k.src_md, input_)},
                                          {DNNL_ARG_DIFF_DST, diff_dst},
                                          {DNNL_ARG_DIFF_WEIGHTS, diff_weights.memory}};
  if (options_.bias) args.emplace(DNNL_ARG_DIFF_BIAS, WrapMemory(k.bias_md, bias_.grad));
  k.bwd_weights.execute(CpuStream(), args);
  if (!direct) {
    k.diff_weight_to_user.ConvertInto(diff_weights.memory,
                                      WrapMemory(k.user_weight_md, weight_.grad));
  }

  Tensor grad_input;
  if (need_input_grad) {
    grad_input = Tensor::Empty(input_.shape());
    OwnedMemory weights =
        k.fwd_weight_to_bwd.Convert(WrapMemory(k.fwd_pd.weights_desc(), weight_in_layout_));
    k.bwd_data.execute(CpuStream(), {{DNNL_ARG_DIFF_DST, diff_dst},
                                     {DNNL_ARG_WEIGHTS, weights.memory},
                                     {DNNL_ARG_DIFF_SRC, WrapMemory(k.src_md, grad_input)}});
  }
  input_ = Tensor();
  return grad_input;
}

}  // namespace strata
