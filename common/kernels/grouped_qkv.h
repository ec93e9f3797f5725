// Grouped-query attention's q|k|v with rotary position embedding (Llama), brought to the
// packed layout the attention kernels take (attention.h). The projection gives H query heads
// and G <= H key/value heads, (B, T, (H + 2 G) D); each key/value head serves H / G query heads
// (Ainslie et al. 2023), so the key/value projections and a KV cache are G / H the size. Queries
// and keys are rotated by their position (Su et al., RoFormer): the pair (x_2i, x_2i+1) of a
// head at position t turns by the angle t theta^(-2i / D), so q . k depends on the positions'
// difference only.
#pragma once

#include <cstdint>

#include "common/tensor/tensor.h"

namespace course {

struct GroupedHeads {
  int64_t heads, kv_heads, head_dim;
  float rope_theta;  // the rotation's base (Llama 3: 500,000); 0: no rotation
  int64_t width() const { return (heads + 2 * kv_heads) * head_dim; }
};

// Throws unless heads and kv_heads are positive, kv_heads divides heads and D is even where
// rotated.
void check_grouped_heads(const GroupedHeads& heads);

// The (T, D / 2, 2) cosines and sines of positions 0 to T - 1's angles, f32 on `device`; undefined
// where the heads are not rotated. It depends on T and the heads only: a layer makes it once
// and hands it to both passes (the rotation's argument below).
Tensor rotation_table(int64_t seq, const GroupedHeads& heads, Device device);

// x (B, T, (H + 2 G) D) contiguous, any floating dtype -> (B, T, 3 H D): q and k turned by
// rotation_table(T, heads, x's device), each key/value head repeated for the query heads of
// its group.
Tensor grouped_qkv_forward(const Tensor& x, const GroupedHeads& heads, const Tensor& rotation);

// d(packed) (B, T, 3 H D) -> dx (B, T, (H + 2 G) D): the gradients of a group's repeated heads
// summed, the rotation undone.
Tensor grouped_qkv_backward(const Tensor& dpacked, const GroupedHeads& heads,
                            const Tensor& rotation);

}  // namespace course
