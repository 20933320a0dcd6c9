#include "core/layers/pool2d.h"

#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"

namespace strata {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct Pool2d::Kernels {
  dnnl::pooling_forward::primitive_desc fwd_pd;
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward::primitive_desc bwd_pd;
  dnnl::pooling_backward bwd;
  memory::desc src_md, dst_md;
};

absl::StatusOr<std::unique_ptr<Pool2d>> Pool2d::Create(std::string name, const Shape& input_shape,
                                                       Pool2dOptions o) {
  if (input_shape.rank() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("pooling needs an image input [H, W, C], got ", input_shape.ToString()));
  }
  if (o.global) {
    o.kind = PoolKind::kAverage;
    o.kernel = input_shape[0];  // square windows only: see the check below
    o.stride = 1;
    o.padding = 0;
    if (input_shape[0] != input_shape[1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "global average pooling supports square images only, got ", input_shape.ToString()));
    }
  }
  if (o.stride == 0) o.stride = o.kernel;
  if (o.kernel <= 0 || o.stride <= 0 || o.padding < 0 || 2 * o.padding >= o.kernel + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pooling needs kernel, stride > 0 and 0 <= padding <= kernel/2; got kernel=", o.kernel,
        " stride=", o.stride, " padding=", o.padding));
  }
  if (input_shape[0] + 2 * o.padding < o.kernel || input_shape[1] + 2 * o.padding < o.kernel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pooling window ", o.kernel, " is larger than the input ", input_shape.ToString()));
  }
  return std::unique_ptr<Pool2d>(new Pool2d(std::move(name), input_shape, o));
}

Pool2d::Pool2d(std::string name, const Shape& input_shape, const Pool2dOptions& options)
    : Layer(std::move(name), input_shape), options_(options) {
  const int64_t h = (input_shape[0] + 2 * options.padding - options.kernel) / options.stride + 1;
  const int64_t w = (input_shape[1] + 2 * options.padding - options.kernel) / options.stride + 1;
  spatial_output_ = Shape{h, w, input_shape[2]};
  output_shape_ = options.global ? Shape{input_shape[2]} : spatial_output_;
}

Pool2d::~Pool2d() = default;

const char* Pool2d::kind() const {
  if (options_.global) return "global_avgpool";
  return options_.kind == PoolKind::kMax ? "maxpool2d" : "avgpool2d";
}

Pool2d::Kernels& Pool2d::KernelsFor(int64_t batch) {
  auto it = kernels_.find(batch);
  if (it != kernels_.end()) return *it->second;
  auto k = std::make_unique<Kernels>();
  k->src_md = memory::desc(NhwcToDnnlDims(BatchShape(batch, input_shape())), dt::f32, tag::nhwc);
  k->dst_md = memory::desc(NhwcToDnnlDims(BatchShape(batch, spatial_output_)), dt::f32, tag::nhwc);
  const auto algorithm = options_.kind == PoolKind::kMax
                             ? dnnl::algorithm::pooling_max
                             : dnnl::algorithm::pooling_avg_exclude_padding;
  const memory::dims strides{options_.stride, options_.stride};
  const memory::dims kernel{options_.kernel, options_.kernel};
  const memory::dims padding{options_.padding, options_.padding};
  k->fwd_pd = dnnl::pooling_forward::primitive_desc(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, algorithm, k->src_md,
                                  k->dst_md, strides, kernel, padding, padding),
      CpuEngine());
  k->fwd = dnnl::pooling_forward(k->fwd_pd);
  k->bwd_pd = dnnl::pooling_backward::primitive_desc(
      dnnl::pooling_backward::desc(algorithm, k->src_md, k->dst_md, strides, kernel, padding,
                                   padding),
      CpuEngine(), k->fwd_pd);
  k->bwd = dnnl::pooling_backward(k->bwd_pd);
  return *kernels_.emplace(batch, std::move(k)).first->second;
}

Tensor Pool2d::Forward(const Tensor& input, bool training) {
  const int64_t batch = input.dim(0);
  Kernels& k = KernelsFor(batch);
  Tensor output = Tensor::Empty(BatchShape(batch, spatial_output_));
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, WrapMemory(k.src_md, input)},
                                       {DNNL_ARG_DST, WrapMemory(k.dst_md, output)}};
  const bool has_workspace = k.fwd_pd.workspace_desc().get_size() > 0;
  if (has_workspace) {
    OwnedMemory ws = AllocateMemory(k.fwd_pd.workspace_desc());
    args.emplace(DNNL_ARG_WORKSPACE, ws.memory);
    k.fwd.execute(CpuStream(), args);
    if (training) workspace_ = ws.storage;
  } else {
    k.fwd.execute(CpuStream(), args);
  }
  if (training) saved_batch_ = batch;
  return output.View(BatchShape(batch, output_shape_));
}

Tensor Pool2d::Backward(const Tensor& grad_output, bool need_input_grad) {
  STRATA_CHECK(saved_batch_ >= 0, "Pool2d::Backward without a training Forward");
  Kernels& k = KernelsFor(saved_batch_);
  saved_batch_ = -1;
  if (!need_input_grad) return Tensor();
  Tensor grad_input = Tensor::Empty(BatchShape(grad_output.dim(0), input_shape()));
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, WrapMemory(k.dst_md, grad_output)},
                                       {DNNL_ARG_DIFF_SRC, WrapMemory(k.src_md, grad_input)}};
  if (k.fwd_pd.workspace_desc().get_size() > 0) {
    args.emplace(DNNL_ARG_WORKSPACE, WrapMemory(k.fwd_pd.workspace_desc(), workspace_));
  }
  k.bwd.execute(CpuStream(), args);
  return grad_input;
}

}  // namespace strata
