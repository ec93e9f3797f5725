// Grouped q|k|v (grouped_qkv_ops.h): the angles' table, and one index per rotated pair in each
// pass; their dispatch and GPU instantiations.
#include "common/kernels/grouped_qkv.h"
#include "common/kernels/grouped_qkv_ops.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

ops::GroupedHeadShape shape_of(int64_t seq, const GroupedHeads& g) {
  return {seq, g.heads, g.kv_heads, g.head_dim, g.rope_theta};
}

// Throws unless `rotation` is rotation_table(t's T, g, t's device)'s shape (undefined unrotated).
void check_rotation(const Tensor& rotation, const Tensor& t, const GroupedHeads& g) {
  if (g.rope_theta <= 0.0f) {
    COURSE_CHECK(!rotation.defined(), "unrotated heads take no rotation table, got ",
                 rotation.str());
    return;
  }
  const ops::GroupedHeadShape shape = shape_of(t.size(1), g);
  COURSE_CHECK(rotation.defined() && rotation.dtype() == DType::kF32 &&
                   rotation.shape() == Shape({shape.seq, shape.pairs(), 2}) &&
                   rotation.device() == t.device(),
               "rotated heads need the f32 (", shape.seq, ", ", shape.pairs(), ", 2) rotation ",
               "table of their positions on ", t.device().str(), ", got ", rotation.str());
}

}  // namespace

Tensor rotation_table(int64_t seq, const GroupedHeads& g, Device device) {
  check_grouped_heads(g);
  COURSE_CHECK(seq > 0, "a rotation table needs positions, got ", seq);
  if (g.rope_theta <= 0.0f) return Tensor();
  const ops::GroupedHeadShape shape = shape_of(seq, g);
  Tensor table = Tensor::empty({seq, shape.pairs(), 2}, DType::kF32, device);
  for_each_index(device, seq * shape.pairs(), ops::RotationTable{table.data_as<float>(), shape});
  return table;
}

void check_grouped_heads(const GroupedHeads& g) {
  COURSE_CHECK(g.heads > 0 && g.kv_heads > 0 && g.heads % g.kv_heads == 0,
               "grouped-query attention ", "needs its ", g.kv_heads,
               " key/value heads to divide its ", g.heads, " query heads");
  COURSE_CHECK(g.head_dim > 0 && (g.rope_theta == 0.0f || g.head_dim % 2 == 0),
               "rotary position embedding turns pairs: the head size ", g.head_dim,
               " must be even");
  COURSE_CHECK(g.rope_theta >= 0.0f, "the rotary base must not be negative, got ", g.rope_theta);
}

Tensor grouped_qkv_forward(const Tensor& x, const GroupedHeads& g, const Tensor& rotation) {
  check_grouped_heads(g);
  COURSE_CHECK(
      x.dim() == 3 && x.size(2) == g.width() && x.memory_format() == MemoryFormat::kContiguous,
      "grouped q|k|v needs a contiguous (B, T, ", g.width(), ") input for ", g.heads, " query and ",
      g.kv_heads, " key/value heads of ", g.head_dim, ", got ", x.str());
  Tensor packed =
      Tensor::empty({x.size(0), x.size(1), 3 * g.heads * g.head_dim}, x.dtype(), x.device());
  check_rotation(rotation, x, g);
  visit_floating(x.dtype(), "grouped_qkv_forward", [&]<class T>() {
    for_each_index(
        x.device(), packed.numel() / 2,
        ops::GroupedQkvForward<T>{x.data_as<T>(), packed.data_as<T>(), shape_of(x.size(1), g),
                                  rotation.data_or_null<float>()});
  });
  return packed;
}

Tensor grouped_qkv_backward(const Tensor& dpacked, const GroupedHeads& g, const Tensor& rotation) {
  check_grouped_heads(g);
  COURSE_CHECK(dpacked.dim() == 3 && dpacked.size(2) == 3 * g.heads * g.head_dim &&
                   dpacked.memory_format() == MemoryFormat::kContiguous,
               "grouped q|k|v backward needs a contiguous (B, T, ", 3 * g.heads * g.head_dim,
               ") gradient, got ", dpacked.str());
  Tensor dx = Tensor::empty({dpacked.size(0), dpacked.size(1), g.width()}, dpacked.dtype(),
                            dpacked.device());
  check_rotation(rotation, dpacked, g);
  visit_floating(dpacked.dtype(), "grouped_qkv_backward", [&]<class T>() {
    for_each_index(
        dpacked.device(), dx.numel() / 2,
        ops::GroupedQkvBackward<T>{dpacked.data_as<T>(), dx.data_as<T>(),
                                   shape_of(dpacked.size(1), g), rotation.data_or_null<float>()},
        g.heads / g.kv_heads);
  });
  return dx;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define GROUPED_QKV(T)                                   \
  COURSE_INSTANTIATE_FOR_EACH(ops::GroupedQkvForward<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::GroupedQkvBackward<T>)
COURSE_FLOAT_TYPES(GROUPED_QKV)
COURSE_INSTANTIATE_FOR_EACH(ops::RotationTable)

}  // namespace course
