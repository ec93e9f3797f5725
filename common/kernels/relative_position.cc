// Dispatch of the relative position bias to its single-source bodies (relative_position_ops.h).
#include "common/kernels/relative_position.h"

#include "common/kernels/launch.h"
#include "common/kernels/relative_position_ops.h"

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
