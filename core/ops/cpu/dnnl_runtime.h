// The oneDNN engine and stream that every CPU kernel runs on, and the
// thread count of the CPU kernels.
//
// oneDNN (Debian's build) uses the OpenMP runtime, so the thread count is the
// OpenMP one: SetCpuThreads(2) makes every oneDNN primitive, dnnl_sgemm and
// Strata's own `#pragma omp` loops use two threads.
#ifndef STRATA_CORE_OPS_CPU_DNNL_RUNTIME_H_
#define STRATA_CORE_OPS_CPU_DNNL_RUNTIME_H_

#include <dnnl.hpp>

#include "core/tensor/tensor.h"

namespace strata {

// Process-wide CPU engine and in-order stream. Primitives execute
// synchronously on the calling thread (plus OpenMP workers).
dnnl::engine& CpuEngine();
dnnl::stream& CpuStream();

// Sets the number of threads of every CPU kernel; `threads` <= 0 keeps the
// current setting. Call before the first kernel runs.
void SetCpuThreads(int threads);
int CpuThreads();

// oneDNN dims {N, C, H, W} of an NHWC Strata tensor of shape {N, H, W, C}.
dnnl::memory::dims NhwcToDnnlDims(const Shape& nhwc);

// A oneDNN memory object over `tensor`'s bytes (no copy). The tensor must
// hold at least desc.get_size() bytes and outlive the returned object's use.
dnnl::memory WrapMemory(const dnnl::memory::desc& desc, const Tensor& tensor);

// A oneDNN memory object for `desc` backed by a fresh pooled buffer, returned
// with the Tensor that owns the bytes (keep it alive while the memory is used).
struct OwnedMemory {
  dnnl::memory memory;
  Tensor storage;
};
OwnedMemory AllocateMemory(const dnnl::memory::desc& desc);

// A conversion between two layouts of the same tensor, with its reorder
// primitive created once; a no-op when the layouts are equal.
class LayoutConverter {
 public:
  LayoutConverter() = default;
  LayoutConverter(const dnnl::memory::desc& from, const dnnl::memory::desc& to);
  bool needed() const { return needed_; }
  // Memory in the target layout holding `src`'s values: `src` itself when no
  // conversion is needed, else a fresh pooled buffer (owned by the result).
  OwnedMemory Convert(const dnnl::memory& src) const;
  // Converts `src` into existing memory `dst` (copying when layouts match).
  void ConvertInto(const dnnl::memory& src, const dnnl::memory& dst) const;

 private:
  bool needed_ = false;
  dnnl::memory::desc to_;
  dnnl::reorder reorder_;
};

// C = alpha * op(A) * op(B) + beta * C, row-major, through oneDNN's JIT sgemm.
// `trans_a`/`trans_b` are 'N' or 'T'. Aborts on invalid arguments (a
// programmer error: every caller passes shapes it has validated).
void Sgemm(char trans_a, char trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace strata

#endif  // STRATA_CORE_OPS_CPU_DNNL_RUNTIME_H_
