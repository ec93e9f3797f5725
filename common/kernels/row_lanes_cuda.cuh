// The GPU's lanes of a row kernel (row_lanes.h): a warp per row, the lanes' partial results
// combined by a butterfly of shuffles, and the launcher that gives each warp its rows.
//
// Include only from a kernel family's .cu file, whose list instantiates each row kernel:
//   COURSE_INSTANTIATE_FOR_EACH_ROW(ops::SoftmaxForward<float>)
// in the three passes of launch_cuda.cuh.
#pragma once

#ifdef __CUDACC__

#include "common/kernels/launch.h"
#include "common/kernels/row_lanes.h"
#include "common/tensor/cuda_check.h"

namespace course {

namespace ops {

__device__ inline float shuffle_xor(float v, int width) {
  return __shfl_xor_sync(0xffffffffu, v, width);
}

__device__ inline FloatPair shuffle_xor(FloatPair v, int width) {
  return {shuffle_xor(v.first, width), shuffle_xor(v.second, width)};
}

struct WarpRowLanes : RowReductions<WarpRowLanes> {
  int lane;  // threadIdx.x % kRowLanes

  // Lane l folds elements l, l + 32, ... in order; the butterfly leaves every lane with the
  // total, each addition the one HostRowLanes makes.
  template <class V, class F, class Op>
  __device__ V fold(int64_t count, V identity, F f, Op op) const {
    V v = identity;
    for (int64_t j = lane; j < count; j += kRowLanes) v = op(v, f(j));
    for (int width = kRowLanes / 2; width > 0; width /= 2) v = op(v, shuffle_xor(v, width));
    return v;
  }
  template <class F>
  __device__ void for_each(int64_t count, F f) const {
    for (int64_t j = lane; j < count; j += kRowLanes) f(j);
  }
  __device__ bool first() const { return lane == 0; }
};

}  // namespace ops

// Warp w of the grid takes rows w, w + warps, ...: a whole warp shares each row, so the
// shuffles of a row always have all 32 threads.
template <class Kernel>
__global__ void row_lanes_kernel(int64_t rows, Kernel kernel) {
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / ops::kRowLanes);
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const ops::WarpRowLanes lanes{{}, static_cast<int>(threadIdx.x % ops::kRowLanes)};
  for (int64_t row = thread / ops::kRowLanes; row < rows; row += warps) kernel(row, lanes);
}

template <class Kernel>
void cuda_for_each_row(int64_t rows, const Kernel& kernel) {
  const LaunchPlan plan = plan_row_launch(rows);
  row_lanes_kernel<<<static_cast<unsigned>(plan.blocks), plan.threads, 0,
                     static_cast<cudaStream_t>(current_cuda_stream())>>>(rows, kernel);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace course

#elif !COURSE_NVCC_INSTANTIATES
#include "common/kernels/launch_stubs.h"
#endif  // __CUDACC__

#if defined(__CUDACC__) || !COURSE_NVCC_INSTANTIATES
#define COURSE_INSTANTIATE_FOR_EACH_ROW(...) \
  template void course::cuda_for_each_row<__VA_ARGS__>(int64_t, const __VA_ARGS__&);
#else  // the host compiler's pass of a CUDA build: nvcc's object has them
#define COURSE_INSTANTIATE_FOR_EACH_ROW(...)
#endif
