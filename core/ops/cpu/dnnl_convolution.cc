#include "core/ops/cpu/dnnl_convolution.h"

#include <algorithm>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"

namespace strata {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct DnnlConvolution::Kernels {
  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd;
  dnnl::convolution_backward_weights bwd_weights;
  memory::desc src_md, dst_md, user_weight_md, bias_md;  // NHWC activations, OIHW weights
  // Activations between NHWC and the kernels' layouts (no-ops for direct
  // convolution, whose kernels take NHWC).
  LayoutConverter src_to_fwd;               // input -> forward src
  LayoutConverter fwd_dst_to_user;          // forward dst -> output
  LayoutConverter fwd_src_to_bwd_weights;   // saved forward src -> backward-weights src
  LayoutConverter diff_dst_to_bwd_weights;  // output gradient -> backward-weights diff_dst
  LayoutConverter diff_dst_to_bwd_data;     // output gradient -> backward-data diff_dst
  bool bwd_share_diff_dst = false;          // both backward kernels take one diff_dst layout
  LayoutConverter bwd_diff_src_to_user;     // backward-data diff_src -> input gradient
  LayoutConverter weight_to_fwd;            // OIHW -> forward kernel's layout
  LayoutConverter fwd_weight_to_bwd;        // forward layout -> backward-data layout
  LayoutConverter diff_weight_to_user;      // backward-weights layout -> OIHW
};

bool WinogradPays(const ConvolutionShape& s) {
  if (s.kernel != 3 || s.stride != 1) return false;
  const int64_t out_h = s.out_height();
  const int64_t out_w = s.out_width();
  if (out_h % 4 != 0 || out_w % 4 != 0 || s.in_channels % 16 != 0 || s.out_channels % 16 != 0) {
    return false;
  }
  const int64_t tiles = s.batch * (out_h / 4) * (out_w / 4);
  const int64_t channels = std::min(s.in_channels, s.out_channels);
  return (channels >= 128 && tiles >= 64) || (channels >= 64 && tiles >= 256);
}

namespace {

dnnl::algorithm DnnlAlgorithm(ConvAlgorithm a) {
  return a == ConvAlgorithm::kWinograd ? dnnl::algorithm::convolution_winograd
                                       : dnnl::algorithm::convolution_direct;
}

memory::desc BiasDesc(const ConvolutionShape& s) {
  // A zero memory::desc tells oneDNN there is no bias.
  return s.bias ? memory::desc({s.out_channels}, dt::f32, tag::x) : memory::desc();
}

memory::dims InputDims(const ConvolutionShape& s) {
  return {s.batch, s.in_channels, s.height, s.width};
}
memory::dims OutputDims(const ConvolutionShape& s) {
  return {s.batch, s.out_channels, s.out_height(), s.out_width()};
}
memory::dims WeightDims(const ConvolutionShape& s) {
  return {s.out_channels, s.in_channels, s.kernel, s.kernel};
}

// The forward training kernel of `algorithm`: direct convolution on NHWC
// activations, Winograd on the layout it chooses.
dnnl::convolution_forward::primitive_desc ForwardKernel(ConvAlgorithm algorithm,
                                                        const ConvolutionShape& s) {
  const tag activations = algorithm == ConvAlgorithm::kWinograd ? tag::any : tag::nhwc;
  const memory::dims strides{s.stride, s.stride};
  const memory::dims padding{s.padding, s.padding};
  const memory::desc src(InputDims(s), dt::f32, activations);
  const memory::desc dst(OutputDims(s), dt::f32, activations);
  const memory::desc weights(WeightDims(s), dt::f32, tag::any);
  return dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, DnnlAlgorithm(algorithm),
                                      src, weights, BiasDesc(s), dst, strides, padding, padding),
      CpuEngine());
}

// The forward, backward-data and backward-weights kernels of `algorithm`;
// throws dnnl::error where oneDNN has none.
struct KernelDescs {
  dnnl::convolution_forward::primitive_desc fwd;
  dnnl::convolution_backward_data::primitive_desc bwd_data;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights;
};
KernelDescs DescribeKernels(ConvAlgorithm algorithm, const ConvolutionShape& s) {
  KernelDescs d;
  d.fwd = ForwardKernel(algorithm, s);
  // The backward kernels take the forward's activation layouts as a hint.
  const memory::desc src_md = d.fwd.src_desc();
  const memory::desc dst_md = d.fwd.dst_desc();
  const memory::desc any_weight_md(WeightDims(s), dt::f32, tag::any);
  const memory::dims strides{s.stride, s.stride};
  const memory::dims padding{s.padding, s.padding};
  d.bwd_data = dnnl::convolution_backward_data::primitive_desc(
      dnnl::convolution_backward_data::desc(DnnlAlgorithm(algorithm), src_md, any_weight_md, dst_md,
                                            strides, padding, padding),
      CpuEngine(), d.fwd);
  d.bwd_weights = dnnl::convolution_backward_weights::primitive_desc(
      dnnl::convolution_backward_weights::desc(DnnlAlgorithm(algorithm), src_md, any_weight_md,
                                               BiasDesc(s), dst_md, strides, padding, padding),
      CpuEngine(), d.fwd);
  return d;
}

// Memory of `desc` for a kernel to write: `user` itself when `to_user` is a
// no-op (the kernel writes the user's tensor directly), else a fresh buffer
// to convert from afterwards.
OwnedMemory KernelOutput(const LayoutConverter& to_user, const memory::desc& desc,
                         const memory& user) {
  if (!to_user.needed()) return OwnedMemory{user, Tensor()};
  return AllocateMemory(desc);
}

}  // namespace

absl::StatusOr<std::unique_ptr<DnnlConvolution>> DnnlConvolution::Create(
    const ConvolutionShape& s) {
  ConvAlgorithm algorithm = s.algorithm;
  if (algorithm == ConvAlgorithm::kAuto) {
    algorithm = WinogradPays(s) ? ConvAlgorithm::kWinograd : ConvAlgorithm::kDirect;
  }
  KernelDescs d;
  try {
    d = DescribeKernels(algorithm, s);
  } catch (const dnnl::error& e) {
    if (algorithm != ConvAlgorithm::kWinograd) {
      return absl::InternalError(absl::StrCat("oneDNN has no direct convolution kernel for ",
                                              s.batch, " images: ", e.what()));
    }
    if (s.algorithm == ConvAlgorithm::kWinograd) {
      return absl::UnimplementedError(absl::StrCat(
          "conv2d algorithm \"winograd\": oneDNN has no Winograd kernel on this CPU for kernel ",
          s.kernel, ", stride ", s.stride, " over [", s.height, ", ", s.width, ", ", s.in_channels,
          "] to ", s.out_channels,
          " channels (it needs a 3x3 kernel at stride 1, AVX-512 and channels in blocks of 16); "
          "use \"auto\" or \"direct\""));
    }
    // kAuto chose Winograd where this CPU lacks it: direct, which oneDNN
    // always has.
    algorithm = ConvAlgorithm::kDirect;
    d = DescribeKernels(algorithm, s);
  }
  auto k = std::make_unique<Kernels>();
  k->src_md = memory::desc(InputDims(s), dt::f32, tag::nhwc);
  k->dst_md = memory::desc(OutputDims(s), dt::f32, tag::nhwc);
  k->user_weight_md = memory::desc(WeightDims(s), dt::f32, tag::oihw);
  k->bias_md = memory::desc({s.out_channels}, dt::f32, tag::x);
  k->fwd_pd = d.fwd;
  k->fwd = dnnl::convolution_forward(k->fwd_pd);
  k->bwd_data_pd = d.bwd_data;
  k->bwd_data = dnnl::convolution_backward_data(k->bwd_data_pd);
  k->bwd_weights_pd = d.bwd_weights;
  k->bwd_weights = dnnl::convolution_backward_weights(k->bwd_weights_pd);
  const memory::desc src_md = k->fwd_pd.src_desc();
  const memory::desc dst_md = k->fwd_pd.dst_desc();
  k->src_to_fwd = LayoutConverter(k->src_md, src_md);
  k->fwd_dst_to_user = LayoutConverter(dst_md, k->dst_md);
  k->fwd_src_to_bwd_weights = LayoutConverter(src_md, k->bwd_weights_pd.src_desc());
  k->diff_dst_to_bwd_weights = LayoutConverter(k->dst_md, k->bwd_weights_pd.diff_dst_desc());
  k->diff_dst_to_bwd_data = LayoutConverter(k->dst_md, k->bwd_data_pd.diff_dst_desc());
  k->bwd_share_diff_dst = k->bwd_data_pd.diff_dst_desc() == k->bwd_weights_pd.diff_dst_desc();
  k->bwd_diff_src_to_user = LayoutConverter(k->bwd_data_pd.diff_src_desc(), k->src_md);
  k->weight_to_fwd = LayoutConverter(k->user_weight_md, k->fwd_pd.weights_desc());
  k->fwd_weight_to_bwd = LayoutConverter(k->fwd_pd.weights_desc(), k->bwd_data_pd.weights_desc());
  k->diff_weight_to_user =
      LayoutConverter(k->bwd_weights_pd.diff_weights_desc(), k->user_weight_md);
  return std::unique_ptr<DnnlConvolution>(new DnnlConvolution(s, algorithm, std::move(k)));
}

DnnlConvolution::DnnlConvolution(const ConvolutionShape& shape, ConvAlgorithm algorithm,
                                 std::unique_ptr<Kernels> kernels)
    : shape_(shape), algorithm_(algorithm), kernels_(std::move(kernels)) {}

DnnlConvolution::~DnnlConvolution() = default;

void DnnlConvolution::Forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                              const Tensor& output, bool training) {
  Kernels& k = *kernels_;
  const memory user_output = WrapMemory(k.dst_md, output);
  OwnedMemory src = k.src_to_fwd.Convert(WrapMemory(k.src_md, input));
  OwnedMemory weights = k.weight_to_fwd.Convert(WrapMemory(k.user_weight_md, weight));
  OwnedMemory dst = KernelOutput(k.fwd_dst_to_user, k.fwd_pd.dst_desc(), user_output);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src.memory}, {DNNL_ARG_WEIGHTS, weights.memory}, {DNNL_ARG_DST, dst.memory}};
  if (shape_.bias) args.emplace(DNNL_ARG_BIAS, WrapMemory(k.bias_md, bias));
  k.fwd.execute(CpuStream(), args);
  if (k.fwd_dst_to_user.needed()) k.fwd_dst_to_user.ConvertInto(dst.memory, user_output);
  if (training) {
    input_in_layout_ = src.storage;
    weight_in_layout_ = weights.storage;
  }
}

void DnnlConvolution::Backward(const Tensor& input, const Tensor& weight, const Tensor& grad_output,
                               const Tensor& grad_weight, const Tensor& grad_bias,
                               const Tensor& grad_input) {
  Kernels& k = *kernels_;
  const memory user_diff_dst = WrapMemory(k.dst_md, grad_output);
  OwnedMemory diff_dst = k.diff_dst_to_bwd_weights.Convert(user_diff_dst);
  const Tensor& forward_src = input_in_layout_.defined() ? input_in_layout_ : input;
  OwnedMemory src = k.fwd_src_to_bwd_weights.Convert(WrapMemory(k.fwd_pd.src_desc(), forward_src));

  // Write straight into grad_weight when the kernel's layout is OIHW already.
  const memory user_diff_weights = WrapMemory(k.user_weight_md, grad_weight);
  OwnedMemory diff_weights =
      KernelOutput(k.diff_weight_to_user, k.bwd_weights_pd.diff_weights_desc(), user_diff_weights);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src.memory},
                                          {DNNL_ARG_DIFF_DST, diff_dst.memory},
                                          {DNNL_ARG_DIFF_WEIGHTS, diff_weights.memory}};
  if (shape_.bias) args.emplace(DNNL_ARG_DIFF_BIAS, WrapMemory(k.bias_md, grad_bias));
  k.bwd_weights.execute(CpuStream(), args);
  if (k.diff_weight_to_user.needed()) {
    k.diff_weight_to_user.ConvertInto(diff_weights.memory, user_diff_weights);
  }

  if (grad_input.defined()) {
    const memory user_diff_src = WrapMemory(k.src_md, grad_input);
    OwnedMemory data_diff_dst =
        k.bwd_share_diff_dst ? diff_dst : k.diff_dst_to_bwd_data.Convert(user_diff_dst);
    const Tensor& forward_weight = weight_in_layout_.defined() ? weight_in_layout_ : weight;
    OwnedMemory weights =
        k.fwd_weight_to_bwd.Convert(WrapMemory(k.fwd_pd.weights_desc(), forward_weight));
    OwnedMemory diff_src =
        KernelOutput(k.bwd_diff_src_to_user, k.bwd_data_pd.diff_src_desc(), user_diff_src);
    k.bwd_data.execute(CpuStream(), {{DNNL_ARG_DIFF_DST, data_diff_dst.memory},
                                     {DNNL_ARG_WEIGHTS, weights.memory},
                                     {DNNL_ARG_DIFF_SRC, diff_src.memory}});
    if (k.bwd_diff_src_to_user.needed()) {
      k.bwd_diff_src_to_user.ConvertInto(diff_src.memory, user_diff_src);
    }
  }
  input_in_layout_ = Tensor();
  weight_in_layout_ = Tensor();
}

}  // namespace strata
