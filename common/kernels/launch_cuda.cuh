// GPU definitions of the single-source launchers declared in launch.h.
//
// Include only from a kernel family's .cu file, whose list instantiates each functor its host
// side launches, inside namespace course:
//   COURSE_INSTANTIATE_FOR_EACH(ops::ReluForward<float>)
//   COURSE_INSTANTIATE_REDUCE(ops::SumReducer<float>)
// The file is compiled in one of three passes (tools/cuda/cuda.bzl): by nvcc, which sees the
// bodies and the list (the host side is #ifndef __CUDACC__) and defines the launchers here; by
// the host compiler in a CUDA build (COURSE_NVCC_INSTANTIATES), where the list is empty because
// nvcc's object holds it; by the host compiler without CUDA, where the list instantiates the
// failing stubs of launch_stubs.h.
#pragma once

#ifdef __CUDACC__

#include <algorithm>
#include <vector>

#include "common/kernels/launch.h"
#include "common/tensor/allocator.h"
#include "common/tensor/cuda_check.h"
#include "common/tensor/tensor.h"

namespace course {

template <class Kernel>
__global__ void grid_stride_kernel(int64_t n, Kernel kernel) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    kernel(i);
  }
}

template <class Kernel>
void cuda_for_each(int64_t n, const Kernel& kernel, int64_t work_per_index) {
  const LaunchPlan plan = plan_launch(n, work_per_index);
  grid_stride_kernel<<<static_cast<unsigned>(plan.blocks), plan.threads, 0,
                       static_cast<cudaStream_t>(current_cuda_stream())>>>(n, kernel);
  CUDA_CHECK(cudaGetLastError());
}

// Each block folds a grid-stride slice, then a shared-memory tree; the per-block partials are
// combined in block order on the host.
template <class Reducer>
__global__ void block_reduce_kernel(int64_t n, Reducer reducer, typename Reducer::Acc* partials) {
  using Acc = typename Reducer::Acc;
  __shared__ alignas(16) unsigned char raw[kThreadsPerBlock * sizeof(Acc)];
  Acc* shared = reinterpret_cast<Acc*>(raw);
  Acc acc = reducer.identity();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    acc = reducer.combine(acc, reducer.load(i));
  }
  shared[threadIdx.x] = acc;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      shared[threadIdx.x] = reducer.combine(shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = shared[0];
}

template <class Reducer>
typename Reducer::Acc cuda_reduce(int64_t n, const Reducer& reducer) {
  using Acc = typename Reducer::Acc;
  const int64_t blocks = std::min<int64_t>(1024, (n + kThreadsPerBlock - 1) / kThreadsPerBlock);
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CachingAllocator& allocator = device_allocator(Device::cuda(device));
  Acc* partials = static_cast<Acc*>(allocator.allocate(blocks * sizeof(Acc)));
  // On the thread's compute stream, after the work queued there, into pinned memory: the one
  // wait is the stream's synchronisation (the caller counts it as a read).
  const auto stream = static_cast<cudaStream_t>(current_cuda_stream());
  const Tensor host =
      Tensor::empty_pinned({static_cast<int64_t>(blocks * sizeof(Acc))}, DType::kU8);
  block_reduce_kernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0, stream>>>(n, reducer,
                                                                                      partials);
  const cudaError_t launch = cudaGetLastError();
  const cudaError_t copy =
      cudaMemcpyAsync(host.data(), partials, blocks * sizeof(Acc), cudaMemcpyDeviceToHost, stream);
  const cudaError_t done = cudaStreamSynchronize(stream);
  allocator.deallocate(partials);
  CUDA_CHECK(launch);
  CUDA_CHECK(copy);
  CUDA_CHECK(done);
  const Acc* values = static_cast<const Acc*>(host.data());
  Acc total = reducer.identity();
  for (int64_t b = 0; b < blocks; ++b) total = reducer.combine(total, values[b]);
  return total;
}

}  // namespace course

#elif !COURSE_NVCC_INSTANTIATES
#include "common/kernels/launch_stubs.h"
#endif  // __CUDACC__

#if defined(__CUDACC__) || !COURSE_NVCC_INSTANTIATES
#define COURSE_INSTANTIATE_FOR_EACH(...) \
  template void course::cuda_for_each<__VA_ARGS__>(int64_t, const __VA_ARGS__&, int64_t);
#define COURSE_INSTANTIATE_REDUCE(...) \
  template typename __VA_ARGS__::Acc course::cuda_reduce<__VA_ARGS__>(int64_t, const __VA_ARGS__&);
#else  // the host compiler's pass of a CUDA build: nvcc's object has them
#define COURSE_INSTANTIATE_FOR_EACH(...)
#define COURSE_INSTANTIATE_REDUCE(...)
#endif
