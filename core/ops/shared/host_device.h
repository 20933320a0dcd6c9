// STRATA_HOST_DEVICE marks an inline function that both the CPU kernels and
// the CUDA kernels compile (one copy of a formula for every device).
#ifndef STRATA_CORE_OPS_SHARED_HOST_DEVICE_H_
#define STRATA_CORE_OPS_SHARED_HOST_DEVICE_H_

#ifdef __CUDACC__
#define STRATA_HOST_DEVICE __host__ __device__
#else
#define STRATA_HOST_DEVICE
#endif

#endif  // STRATA_CORE_OPS_SHARED_HOST_DEVICE_H_
