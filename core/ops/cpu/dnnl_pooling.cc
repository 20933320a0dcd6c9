#include "core/ops/cpu/dnnl_pooling.h"

#include <unordered_map>

#include "core/ops/cpu/dnnl_runtime.h"

namespace strata {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct DnnlPooling::Kernels {
  dnnl::pooling_forward::primitive_desc fwd_pd;
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward::primitive_desc bwd_pd;
  dnnl::pooling_backward bwd;
  memory::desc src_md, dst_md;
  bool has_workspace = false;
};

DnnlPooling::DnnlPooling(const PoolingShape& s) : kernels_(std::make_unique<Kernels>()) {
  Kernels& k = *kernels_;
  k.src_md = memory::desc({s.batch, s.channels, s.height, s.width}, dt::f32, tag::nhwc);
  k.dst_md = memory::desc({s.batch, s.channels, s.out_height(), s.out_width()}, dt::f32, tag::nhwc);
  const auto algorithm = s.kind == PoolKind::kMax ? dnnl::algorithm::pooling_max
                                                  : dnnl::algorithm::pooling_avg_exclude_padding;
  const memory::dims strides{s.stride, s.stride};
  const memory::dims kernel{s.kernel, s.kernel};
  const memory::dims padding{s.padding, s.padding};
  k.fwd_pd = dnnl::pooling_forward::primitive_desc(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, algorithm, k.src_md, k.dst_md,
                                  strides, kernel, padding, padding),
      CpuEngine());
  k.fwd = dnnl::pooling_forward(k.fwd_pd);
  k.bwd_pd = dnnl::pooling_backward::primitive_desc(
      dnnl::pooling_backward::desc(algorithm, k.src_md, k.dst_md, strides, kernel, padding,
                                   padding),
      CpuEngine(), k.fwd_pd);
  k.bwd = dnnl::pooling_backward(k.bwd_pd);
  k.has_workspace = k.fwd_pd.workspace_desc().get_size() > 0;
}

DnnlPooling::~DnnlPooling() = default;

void DnnlPooling::Forward(const Tensor& input, const Tensor& output, bool training) {
  Kernels& k = *kernels_;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, WrapMemory(k.src_md, input)},
                                       {DNNL_ARG_DST, WrapMemory(k.dst_md, output)}};
  if (k.has_workspace) {
    OwnedMemory ws = AllocateMemory(k.fwd_pd.workspace_desc());
    args.emplace(DNNL_ARG_WORKSPACE, ws.memory);
    k.fwd.execute(CpuStream(), args);
    if (training) workspace_ = ws.storage;
    return;
  }
  k.fwd.execute(CpuStream(), args);
}

void DnnlPooling::Backward(const Tensor& grad_output, const Tensor& grad_input) {
  Kernels& k = *kernels_;
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, WrapMemory(k.dst_md, grad_output)},
                                       {DNNL_ARG_DIFF_SRC, WrapMemory(k.src_md, grad_input)}};
  if (k.has_workspace) {
    args.emplace(DNNL_ARG_WORKSPACE, WrapMemory(k.fwd_pd.workspace_desc(), workspace_));
  }
  k.bwd.execute(CpuStream(), args);
  workspace_ = Tensor();
}

}  // namespace strata
