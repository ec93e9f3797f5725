// Permute: output run i (row-major over the output's leading `dims` axes) reads the input at the
// offset its coordinates give through the input's strides, then copies `inner` contiguous
// elements (the last axis when it stays last, else 1). The body (one for the CPU and the GPU),
// its dispatch and its GPU instantiations.
#include <algorithm>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/permute.h"
#include "common/kernels/type_lists.cuh"

namespace course::ops {

inline constexpr int kMaxPermuteDims = 6;

template <class T>
struct Permute {
  const T* x;
  T* y;
  int dims;
  int64_t inner;
  int64_t out_shape[kMaxPermuteDims];
  int64_t in_strides[kMaxPermuteDims];  // x's stride along each of y's axes
  COURSE_HD void operator()(int64_t i) const {
    int64_t rest = i, offset = 0;
    for (int d = dims - 1; d >= 0; --d) {
      offset += (rest % out_shape[d]) * in_strides[d];
      rest /= out_shape[d];
    }
    for (int64_t k = 0; k < inner; ++k) y[i * inner + k] = x[offset + k];
  }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

Tensor permute(const Tensor& x, const std::vector<int>& order) {
  const int dims = static_cast<int>(x.dim());
  COURSE_CHECK(x.memory_format() == MemoryFormat::kContiguous && dims <= ops::kMaxPermuteDims,
               "permute needs a contiguous tensor of at most ", ops::kMaxPermuteDims, " axes, got ",
               x.str());
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  bool is_permutation = static_cast<int>(order.size()) == dims;
  for (int a = 0; is_permutation && a < dims; ++a) is_permutation = sorted[a] == a;
  COURSE_CHECK(is_permutation, "permute order must be a permutation of the ", dims, " axes of ",
               x.str());
  const std::vector<int64_t> strides = dense_strides(x.shape(), MemoryFormat::kContiguous);
  Shape out_shape(dims);
  for (int a = 0; a < dims; ++a) out_shape[a] = x.size(order[a]);
  Tensor y = Tensor::empty(out_shape, x.dtype(), x.device());
  // When the last axis stays last, each index copies a whole contiguous run of it.
  const bool runs = dims > 1 && order.back() == dims - 1 && x.numel() > 0;
  const int64_t inner = runs ? x.size(-1) : 1;
  visit_dtype(x.dtype(), [&]<class T>() {
    ops::Permute<T> kernel{x.data_as<T>(), y.data_as<T>(), runs ? dims - 1 : dims, inner, {}, {}};
    for (int a = 0; a < kernel.dims; ++a) {
      kernel.out_shape[a] = out_shape[a];
      kernel.in_strides[a] = strides[order[a]];
    }
    for_each_index(x.device(), y.numel() / inner, kernel, inner);
  });
  return y;
}

std::vector<int> inverse_permutation(const std::vector<int>& order) {
  std::vector<int> inverse(order.size());
  for (size_t a = 0; a < order.size(); ++a) inverse[order[a]] = static_cast<int>(a);
  return inverse;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define PERMUTE(T) COURSE_INSTANTIATE_FOR_EACH(ops::Permute<T>)
COURSE_ALL_TYPES(PERMUTE)

}  // namespace course
