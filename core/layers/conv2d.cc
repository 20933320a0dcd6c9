#include "core/layers/conv2d.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "core/ops/backend.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"
#include "core/util/log.h"

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

const char* ConvAlgorithmName(ConvAlgorithm algorithm) {
  switch (algorithm) {
    case ConvAlgorithm::kAuto:
      return "auto";
    case ConvAlgorithm::kDirect:
      return "direct";
    case ConvAlgorithm::kWinograd:
      return "winograd";
  }
  return "?";
}

absl::StatusOr<ConvAlgorithm> ParseConvAlgorithm(const std::string& name) {
  for (ConvAlgorithm a : {ConvAlgorithm::kAuto, ConvAlgorithm::kDirect, ConvAlgorithm::kWinograd}) {
    if (name == ConvAlgorithmName(a)) return a;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown convolution algorithm \"", name, "\" (auto, direct or winograd)"));
}

bool WinogradPays(int64_t batch, const Shape& input_shape, const Conv2dOptions& o) {
  if (input_shape.rank() != 3 || o.kernel != 3 || o.stride != 1) return false;
  const int64_t out_h = input_shape[0] + 2 * o.padding - o.kernel + 1;
  const int64_t out_w = input_shape[1] + 2 * o.padding - o.kernel + 1;
  const int64_t in_c = input_shape[2];
  if (out_h % 4 != 0 || out_w % 4 != 0 || in_c % 16 != 0 || o.out_channels % 16 != 0) {
    return false;
  }
  const int64_t tiles = batch * (out_h / 4) * (out_w / 4);
  const int64_t channels = std::min(in_c, o.out_channels);
  return (channels >= 128 && tiles >= 64) || (channels >= 64 && tiles >= 256);
}

namespace {

dnnl::algorithm DnnlAlgorithm(ConvAlgorithm a) {
  return a == ConvAlgorithm::kWinograd ? dnnl::algorithm::convolution_winograd
                                       : dnnl::algorithm::convolution_direct;
}

// The forward training kernel of `algorithm` for `batch` images: direct
// convolution on NHWC activations, Winograd on the layout it chooses.
dnnl::convolution_forward::primitive_desc ForwardKernel(
    ConvAlgorithm algorithm, int64_t batch, const Shape& input_shape, const Shape& output_shape,
    const Conv2dOptions& o, const memory::desc& bias_md) {
  const tag activations = algorithm == ConvAlgorithm::kWinograd ? tag::any : tag::nhwc;
  const memory::dims strides{o.stride, o.stride};
  const memory::dims padding{o.padding, o.padding};
  const memory::desc src(NhwcToDnnlDims(Shape{batch, input_shape[0], input_shape[1],
                                              input_shape[2]}),
                         dt::f32, activations);
  const memory::desc dst(NhwcToDnnlDims(Shape{batch, output_shape[0], output_shape[1],
                                              output_shape[2]}),
                         dt::f32, activations);
  const memory::desc weights({o.out_channels, input_shape[2], o.kernel, o.kernel}, dt::f32,
                             tag::any);
  return dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, DnnlAlgorithm(algorithm),
                                      src, weights, bias_md, dst, strides, padding, padding),
      CpuEngine());
}

Shape OutputShape(const Shape& input_shape, const Conv2dOptions& o) {
  const int64_t h = (input_shape[0] + 2 * o.padding - o.kernel) / o.stride + 1;
  const int64_t w = (input_shape[1] + 2 * o.padding - o.kernel) / o.stride + 1;
  return Shape{h, w, o.out_channels};
}

// The forward, backward-data and backward-weights kernels of `algorithm`
// for `batch` images; throws dnnl::error where oneDNN has none.
struct KernelDescs {
  dnnl::convolution_forward::primitive_desc fwd;
  dnnl::convolution_backward_data::primitive_desc bwd_data;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights;
};
KernelDescs DescribeKernels(ConvAlgorithm algorithm, int64_t batch, const Shape& input_shape,
                            const Shape& output_shape, const Conv2dOptions& o,
                            const memory::desc& bias_md) {
  KernelDescs d;
  d.fwd = ForwardKernel(algorithm, batch, input_shape, output_shape, o, bias_md);
  // The backward kernels take the forward's activation layouts as a hint.
  const memory::desc src_md = d.fwd.src_desc();
  const memory::desc dst_md = d.fwd.dst_desc();
  const memory::desc any_weight_md({o.out_channels, input_shape[2], o.kernel, o.kernel}, dt::f32,
                                   tag::any);
  const memory::dims strides{o.stride, o.stride};
  const memory::dims padding{o.padding, o.padding};
  d.bwd_data = dnnl::convolution_backward_data::primitive_desc(
      dnnl::convolution_backward_data::desc(DnnlAlgorithm(algorithm), src_md, any_weight_md,
                                            dst_md, strides, padding, padding),
      CpuEngine(), d.fwd);
  d.bwd_weights = dnnl::convolution_backward_weights::primitive_desc(
      dnnl::convolution_backward_weights::desc(DnnlAlgorithm(algorithm), src_md, any_weight_md,
                                               bias_md, dst_md, strides, padding, padding),
      CpuEngine(), d.fwd);
  return d;
}

memory::desc BiasDesc(const Conv2dOptions& o) {
  // A zero memory::desc tells oneDNN there is no bias.
  return o.bias ? memory::desc({o.out_channels}, dt::f32, tag::x) : memory::desc();
}

// Whether this CPU's oneDNN has Winograd kernels, forward and backward, for
// the convolution.
bool WinogradAvailable(const Shape& input_shape, const Conv2dOptions& o) {
  try {
    DescribeKernels(ConvAlgorithm::kWinograd, 1, input_shape, OutputShape(input_shape, o), o,
                    BiasDesc(o));
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace

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
  const bool winograd_available =
      o.algorithm != ConvAlgorithm::kDirect && WinogradAvailable(input_shape, o);
  if (o.algorithm == ConvAlgorithm::kWinograd && !winograd_available) {
    return absl::UnimplementedError(absl::StrCat(
        "conv2d algorithm \"winograd\": oneDNN has no Winograd kernel on this CPU for kernel ",
        o.kernel, ", stride ", o.stride, " over ", input_shape.ToString(), " to ", o.out_channels,
        " channels (it needs a 3x3 kernel at stride 1, AVX-512 and channels in blocks of 16); use "
        "\"auto\" or \"direct\""));
  }
  return std::unique_ptr<Conv2d>(new Conv2d(std::move(name), input_shape, o, winograd_available));
}

Conv2d::Conv2d(std::string name, const Shape& input_shape, const Conv2dOptions& options,
               bool winograd_available)
    : Layer(std::move(name), input_shape),
      options_(options),
      winograd_available_(winograd_available),
      output_shape_(OutputShape(input_shape, options)) {
  const int64_t in_c = input_shape[2];
  weight_ =
      ZeroParameter(this->name() + ".weight",
                    {options.out_channels, in_c, options.kernel, options.kernel}, HostBackend());
  if (options.bias) {
    bias_ = ZeroParameter(this->name() + ".bias", {options.out_channels}, HostBackend());
  }
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

ConvAlgorithm Conv2d::AlgorithmFor(int64_t batch) const {
  switch (options_.algorithm) {
    case ConvAlgorithm::kDirect:
    case ConvAlgorithm::kWinograd:
      return options_.algorithm;
    case ConvAlgorithm::kAuto:
      break;
  }
  return winograd_available_ && WinogradPays(batch, input_shape(), options_)
             ? ConvAlgorithm::kWinograd
             : ConvAlgorithm::kDirect;
}

Conv2d::Kernels& Conv2d::KernelsFor(int64_t batch) {
  auto it = kernels_.find(batch);
  if (it != kernels_.end()) return *it->second;
  auto k = std::make_unique<Kernels>();
  const auto& wshape = weight_.value.shape();
  k->src_md = memory::desc(NhwcToDnnlDims(BatchShape(batch, input_shape())), dt::f32, tag::nhwc);
  k->dst_md = memory::desc(NhwcToDnnlDims(BatchShape(batch, output_shape_)), dt::f32, tag::nhwc);
  k->user_weight_md =
      memory::desc({wshape[0], wshape[1], wshape[2], wshape[3]}, dt::f32, tag::oihw);
  k->bias_md = memory::desc({options_.out_channels}, dt::f32, tag::x);
  const ConvAlgorithm algorithm = AlgorithmFor(batch);
  KernelDescs d;
  try {
    d = DescribeKernels(algorithm, batch, input_shape(), output_shape_, options_,
                        BiasDesc(options_));
  } catch (const dnnl::error& e) {
    // Winograd was there at batch 1 (Create); should a batch size lack it,
    // kAuto falls back to direct, which oneDNN always has.
    STRATA_CHECK(algorithm == ConvAlgorithm::kWinograd &&
                     options_.algorithm == ConvAlgorithm::kAuto,
                 "conv2d ", name(), ": no ", ConvAlgorithmName(algorithm), " kernel for batch ",
                 batch, ": ", e.what());
    LogWarning("conv2d %s: no Winograd kernel for batch %lld; direct convolution instead",
               name().c_str(), static_cast<long long>(batch));
    d = DescribeKernels(ConvAlgorithm::kDirect, batch, input_shape(), output_shape_, options_,
                        BiasDesc(options_));
  }
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
  return *kernels_.emplace(batch, std::move(k)).first->second;
}

namespace {

// Memory of `desc` for a kernel to write: `user` itself when `to_user` is a
// no-op (the kernel writes the user's tensor directly), else a fresh buffer
// to convert from afterwards.
OwnedMemory KernelOutput(const LayoutConverter& to_user, const memory::desc& desc,
                         const memory& user) {
  if (!to_user.needed()) return OwnedMemory{user, Tensor()};
  return AllocateMemory(desc);
}

// `converted`'s bytes: the converted buffer, or `original` when no
// conversion was needed.
Tensor StorageOf(const OwnedMemory& converted, const Tensor& original) {
  return converted.storage.defined() ? converted.storage : original;
}

}  // namespace

Tensor Conv2d::Forward(const Tensor& input, bool training) {
  const int64_t batch = input.dim(0);
  Kernels& k = KernelsFor(batch);
  Tensor output = Tensor::Empty(BatchShape(batch, output_shape_));
  const memory user_output = WrapMemory(k.dst_md, output);
  OwnedMemory src = k.src_to_fwd.Convert(WrapMemory(k.src_md, input));
  OwnedMemory weights = k.weight_to_fwd.Convert(WrapMemory(k.user_weight_md, weight_.value));
  OwnedMemory dst = KernelOutput(k.fwd_dst_to_user, k.fwd_pd.dst_desc(), user_output);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src.memory},
                                          {DNNL_ARG_WEIGHTS, weights.memory},
                                          {DNNL_ARG_DST, dst.memory}};
  if (options_.bias) args.emplace(DNNL_ARG_BIAS, WrapMemory(k.bias_md, bias_.value));
  k.fwd.execute(CpuStream(), args);
  if (k.fwd_dst_to_user.needed()) k.fwd_dst_to_user.ConvertInto(dst.memory, user_output);
  if (training) {
    input_ = StorageOf(src, input);
    weight_in_layout_ = StorageOf(weights, weight_.value);
  }
  return output;
}

Tensor Conv2d::Backward(const Tensor& grad_output, bool need_input_grad) {
  STRATA_CHECK(input_.defined(), "Conv2d::Backward without a training Forward");
  const int64_t batch = grad_output.dim(0);
  Kernels& k = KernelsFor(batch);
  const memory user_diff_dst = WrapMemory(k.dst_md, grad_output);
  OwnedMemory diff_dst = k.diff_dst_to_bwd_weights.Convert(user_diff_dst);
  OwnedMemory src = k.fwd_src_to_bwd_weights.Convert(WrapMemory(k.fwd_pd.src_desc(), input_));

  // Write straight into weight_.grad when the kernel's layout is OIHW already.
  const memory user_diff_weights = WrapMemory(k.user_weight_md, weight_.grad);
  OwnedMemory diff_weights = KernelOutput(
      k.diff_weight_to_user, k.bwd_weights_pd.diff_weights_desc(), user_diff_weights);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src.memory},
                                          {DNNL_ARG_DIFF_DST, diff_dst.memory},
                                          {DNNL_ARG_DIFF_WEIGHTS, diff_weights.memory}};
  if (options_.bias) args.emplace(DNNL_ARG_DIFF_BIAS, WrapMemory(k.bias_md, bias_.grad));
  k.bwd_weights.execute(CpuStream(), args);
  if (k.diff_weight_to_user.needed()) {
    k.diff_weight_to_user.ConvertInto(diff_weights.memory, user_diff_weights);
  }

  Tensor grad_input;
  if (need_input_grad) {
    grad_input = Tensor::Empty(BatchShape(batch, input_shape()));
    const memory user_diff_src = WrapMemory(k.src_md, grad_input);
    OwnedMemory data_diff_dst =
        k.bwd_share_diff_dst ? diff_dst : k.diff_dst_to_bwd_data.Convert(user_diff_dst);
    OwnedMemory weights =
        k.fwd_weight_to_bwd.Convert(WrapMemory(k.fwd_pd.weights_desc(), weight_in_layout_));
    OwnedMemory diff_src =
        KernelOutput(k.bwd_diff_src_to_user, k.bwd_data_pd.diff_src_desc(), user_diff_src);
    k.bwd_data.execute(CpuStream(), {{DNNL_ARG_DIFF_DST, data_diff_dst.memory},
                                     {DNNL_ARG_WEIGHTS, weights.memory},
                                     {DNNL_ARG_DIFF_SRC, diff_src.memory}});
    if (k.bwd_diff_src_to_user.needed()) {
      k.bwd_diff_src_to_user.ConvertInto(diff_src.memory, user_diff_src);
    }
  }
  input_ = Tensor();
  return grad_input;
}

}  // namespace strata
