#include "core/ops/cpu/dnnl_runtime.h"

#include <omp.h>

#include <cstring>

#include "core/status.h"

namespace strata {

dnnl::engine& CpuEngine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

dnnl::stream& CpuStream() {
  static dnnl::stream* stream = new dnnl::stream(CpuEngine());
  return *stream;
}

void SetCpuThreads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

int CpuThreads() { return omp_get_max_threads(); }

dnnl::memory::dims NhwcToDnnlDims(const Shape& nhwc) {
  STRATA_CHECK(nhwc.rank() == 4, "NHWC tensor expected, got ", nhwc.ToString());
  return {nhwc[0], nhwc[3], nhwc[1], nhwc[2]};
}

dnnl::memory WrapMemory(const dnnl::memory::desc& desc, const Tensor& tensor) {
  STRATA_CHECK(tensor.nbytes() >= desc.get_size(), "tensor of ", tensor.nbytes(),
               " bytes cannot hold a oneDNN memory of ", desc.get_size(), " bytes");
  return dnnl::memory(desc, CpuEngine(), tensor.raw_data());
}

OwnedMemory AllocateMemory(const dnnl::memory::desc& desc) {
  OwnedMemory out;
  out.storage = Tensor::Empty(Shape{static_cast<int64_t>((desc.get_size() + 3) / 4)});
  out.memory = dnnl::memory(desc, CpuEngine(), out.storage.raw_data());
  return out;
}

LayoutConverter::LayoutConverter(const dnnl::memory::desc& from, const dnnl::memory::desc& to)
    : needed_(from != to), to_(to) {
  if (needed_) {
    reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(CpuEngine(), from, CpuEngine(), to));
  }
}

OwnedMemory LayoutConverter::Convert(const dnnl::memory& src) const {
  if (!needed_) return OwnedMemory{src, Tensor()};
  OwnedMemory out = AllocateMemory(to_);
  dnnl::memory from = src;  // execute() takes non-const handles
  reorder_.execute(CpuStream(), from, out.memory);
  return out;
}

void LayoutConverter::ConvertInto(const dnnl::memory& src, const dnnl::memory& dst) const {
  if (needed_) {
    dnnl::memory from = src;
    dnnl::memory to = dst;
    reorder_.execute(CpuStream(), from, to);
  } else {
    std::memcpy(dst.get_data_handle(), src.get_data_handle(), to_.get_size());
  }
}

void Sgemm(char trans_a, char trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  dnnl_status_t status = dnnl_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  STRATA_CHECK(status == dnnl_success, "dnnl_sgemm failed with status ", static_cast<int>(status),
               " (m=", m, " n=", n, " k=", k, ")");
}

}  // namespace strata
