// Grouped q|k|v launches: the angles' table, then one index per rotated pair.
#include "common/kernels/grouped_qkv.h"

#include "common/kernels/grouped_qkv_ops.h"
#include "common/kernels/launch.h"

namespace course {

namespace {

ops::GroupedHeadShape shape_of(const Tensor& t, const GroupedHeads& g) {
  return {t.size(1), g.heads, g.kv_heads, g.head_dim, g.rope_theta};
}

// The (T, D / 2, 2) cosines and sines of t's positions' angles; undefined without rotation.
Tensor rotation_table(const Tensor& t, const GroupedHeads& g) {
  if (g.rope_theta <= 0.0f) return Tensor();
  const ops::GroupedHeadShape shape = shape_of(t, g);
  Tensor table = Tensor::empty({shape.seq, shape.pairs(), 2}, DType::kF32, t.device());
  for_each_index(t.device(), shape.seq * shape.pairs(),
                 ops::RotationTable{table.data_as<float>(), shape});
  return table;
}

const float* data_or_null(const Tensor& t) { return t.defined() ? t.data_as<float>() : nullptr; }

}  // namespace

void check_grouped_heads(const GroupedHeads& g) {
  COURSE_CHECK(g.heads > 0 && g.kv_heads > 0 && g.heads % g.kv_heads == 0,
               "grouped-query attention ", "needs its ", g.kv_heads,
               " key/value heads to divide its ", g.heads, " query heads");
  COURSE_CHECK(g.head_dim > 0 && (g.rope_theta == 0.0f || g.head_dim % 2 == 0),
               "rotary position embedding turns pairs: the head size ", g.head_dim,
               " must be even");
  COURSE_CHECK(g.rope_theta >= 0.0f, "the rotary base must not be negative, got ", g.rope_theta);
}

Tensor grouped_qkv_forward(const Tensor& x, const GroupedHeads& g) {
  check_grouped_heads(g);
  COURSE_CHECK(
      x.dim() == 3 && x.size(2) == g.width() && x.memory_format() == MemoryFormat::kContiguous,
      "grouped q|k|v needs a contiguous (B, T, ", g.width(), ") input for ", g.heads, " query and ",
      g.kv_heads, " key/value heads of ", g.head_dim, ", got ", x.str());
  Tensor packed =
      Tensor::empty({x.size(0), x.size(1), 3 * g.heads * g.head_dim}, x.dtype(), x.device());
  const Tensor rotation = rotation_table(x, g);
  visit_floating(x.dtype(), "grouped_qkv_forward", [&]<class T>() {
    for_each_index(x.device(), packed.numel() / 2,
                   ops::GroupedQkvForward<T>{x.data_as<T>(), packed.data_as<T>(), shape_of(x, g),
                                             data_or_null(rotation)});
  });
  return packed;
}

Tensor grouped_qkv_backward(const Tensor& dpacked, const GroupedHeads& g) {
  check_grouped_heads(g);
  COURSE_CHECK(dpacked.dim() == 3 && dpacked.size(2) == 3 * g.heads * g.head_dim &&
                   dpacked.memory_format() == MemoryFormat::kContiguous,
               "grouped q|k|v backward needs a contiguous (B, T, ", 3 * g.heads * g.head_dim,
               ") gradient, got ", dpacked.str());
  Tensor dx = Tensor::empty({dpacked.size(0), dpacked.size(1), g.width()}, dpacked.dtype(),
                            dpacked.device());
  const Tensor rotation = rotation_table(dpacked, g);
  visit_floating(dpacked.dtype(), "grouped_qkv_backward", [&]<class T>() {
    for_each_index(dpacked.device(), dx.numel() / 2,
                   ops::GroupedQkvBackward<T>{dpacked.data_as<T>(), dx.data_as<T>(),
                                              shape_of(dpacked, g), data_or_null(rotation)},
                   g.heads / g.kv_heads);
  });
  return dx;
}

}  // namespace course
