// Dropout: its single-source body (dropout_ops.h) dispatched, by packets on a GPU, and its GPU
// instantiations.
#include <algorithm>
#include <cmath>

#include "common/kernels/dropout.h"
#include "common/kernels/dropout_ops.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

Tensor apply_dropout(const Tensor& x, const DropoutDraw& draw) {
  COURSE_CHECK(draw.p >= 0.0f && draw.p < 1.0f, "dropout's probability must be in [0, 1), got ",
               draw.p);
  // p 2^32, below 2^32 for any p < 1 that a float holds.
  const double threshold = std::ldexp(static_cast<double>(draw.p), 32);
  const ops::DropoutKeys keys{draw.seed, draw.offset,
                              static_cast<uint32_t>(std::min(threshold, 4294967295.0)),
                              1.0f / (1.0f - draw.p)};
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device(), x.memory_format());
  visit_floating(x.dtype(), "dropout", [&]<class T>() {
    const T* in = x.data_as<T>();
    T* out = y.data_as<T>();
    if (!runs_on_host(x.device()) && ops::packet_aligned(in) && ops::packet_aligned(out)) {
      const ops::DropoutGroups<T, true> groups{in, out, x.numel(), keys};
      for_each_index(x.device(), groups.groups(), groups, groups.kGroup);
    } else {
      const ops::DropoutGroups<T, false> groups{in, out, x.numel(), keys};
      for_each_index(x.device(), groups.groups(), groups, groups.kGroup);
    }
  });
  return y;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define DROPOUT(T)                                         \
  COURSE_INSTANTIATE_FOR_EACH(ops::DropoutGroups<T, true>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::DropoutGroups<T, false>)
COURSE_FLOAT_TYPES(DROPOUT)

}  // namespace course
