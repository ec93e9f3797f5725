// The relative position bias of CoAtNet's attention (Dai et al. 2021, eq. 3). The tokens of an
// h x w grid attend with an added bias that depends only on their offset: bias[head, q, k] =
// table[head, (dy + h - 1) (2w - 1) + dx + w - 1], dy and dx the rows and columns from key k to
// query q. The backward gathers too: each table entry sums the (query, key) pairs at its offset,
// so no two threads write the same entry. The bodies (one for the CPU and the GPU), their
// dispatch and their GPU instantiations.
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/relative_position.h"

namespace course::ops {

struct RelativeGrid {
  int64_t h, w;
  COURSE_HD int64_t tokens() const { return h * w; }
  COURSE_HD int64_t offsets() const { return (2 * h - 1) * (2 * w - 1); }
};

// Element i of the (heads, T, T) f32 bias.
struct RelativeBiasGather {
  const float* table;  // (heads, offsets)
  float* bias;
  RelativeGrid grid;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t t = grid.tokens(), head = i / (t * t), q = i / t % t, k = i % t;
    const int64_t dy = q / grid.w - k / grid.w + grid.h - 1,
                  dx = q % grid.w - k % grid.w + grid.w - 1;
    bias[i] = table[head * grid.offsets() + dy * (2 * grid.w - 1) + dx];
  }
};

// Entry i of the (heads, offsets) table gradient: += the bias gradient summed over its pairs.
struct RelativeBiasScatter {
  const float* bias_grad;  // (heads, T, T)
  float* table_grad;
  RelativeGrid grid;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t t = grid.tokens(), head = i / grid.offsets(), offset = i % grid.offsets();
    const int64_t dy = offset / (2 * grid.w - 1) - (grid.h - 1);
    const int64_t dx = offset % (2 * grid.w - 1) - (grid.w - 1);
    const float* plane = bias_grad + head * t * t;
    float total = 0.0f;
    for (int64_t qy = dy > 0 ? dy : 0; qy < grid.h && qy - dy < grid.h; ++qy) {
      for (int64_t qx = dx > 0 ? dx : 0; qx < grid.w && qx - dx < grid.w; ++qx) {
        total += plane[(qy * grid.w + qx) * t + (qy - dy) * grid.w + qx - dx];
      }
    }
    table_grad[i] += total;
  }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

void check_position_table(const Tensor& t, int64_t h, int64_t w, const char* what) {
  COURSE_CHECK(h > 0 && w > 0, "a relative position grid of ", h, "x", w);
  COURSE_CHECK(t.dim() == 2 && t.dtype() == DType::kF32 && t.size(1) == relative_offsets(h, w),
               what, " must be f32 (heads, ", relative_offsets(h, w), ") for a ", h, "x", w,
               " grid, got ", t.str());
}

}  // namespace

int64_t relative_offsets(int64_t h, int64_t w) { return (2 * h - 1) * (2 * w - 1); }

Tensor relative_position_bias(const Tensor& table, int64_t h, int64_t w) {
  check_position_table(table, h, w, "the relative position table");
  const int64_t tokens = h * w;
  Tensor bias = Tensor::empty({table.size(0), tokens, tokens}, DType::kF32, table.device());
  for_each_index(table.device(), bias.numel(),
                 ops::RelativeBiasGather{table.data_as<float>(), bias.data_as<float>(), {h, w}});
  return bias;
}

void relative_position_bias_backward(const Tensor& bias_grad, Tensor& table_grad, int64_t h,
                                     int64_t w) {
  check_position_table(table_grad, h, w, "the relative position table's gradient");
  const int64_t tokens = h * w;
  COURSE_CHECK(bias_grad.dtype() == DType::kF32 &&
                   bias_grad.shape() == Shape({table_grad.size(0), tokens, tokens}) &&
                   bias_grad.device() == table_grad.device(),
               "relative position backward: a bias gradient ", bias_grad.str(), " for a table ",
               table_grad.str());
  for_each_index(
      table_grad.device(), table_grad.numel(),
      ops::RelativeBiasScatter{bias_grad.data_as<float>(), table_grad.data_as<float>(), {h, w}},
      tokens);
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

COURSE_INSTANTIATE_FOR_EACH(ops::RelativeBiasGather)
COURSE_INSTANTIATE_FOR_EACH(ops::RelativeBiasScatter)

}  // namespace course
