// The bodies of grouped_qkv.h, shared by the CPU and the GPU: one index per pair of
// neighbouring elements (x_2i, x_2i+1) of a head, the unit the rotation turns. Angles in f32, as
// Llama's reference computes them, once per position and pair into a table (RotationTable) that
// every sample and head reads: a power, a sine and a cosine per element were a fifth of
// llama-tiny's CPU step.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

struct GroupedHeadShape {
  int64_t seq, heads, kv_heads, head_dim;
  float rope_theta;
  COURSE_HD int64_t pairs() const { return head_dim / 2; }
  COURSE_HD int64_t input_heads() const { return heads + 2 * kv_heads; }
  // (a, b) of pair `pair` at position `position` turned by its angle (`direction` 1), or back
  // (-1); unturned without rotation.
  COURSE_HD void turn(int64_t position, int64_t pair, float direction, float& a, float& b) const {
    if (rope_theta <= 0.0f) return;
    const float angle = direction * this->angle(position, pair);
    turn_by(cosf(angle), sinf(angle), a, b);
  }
  COURSE_HD float angle(int64_t position, int64_t pair) const {
    const float frequency =
        1.0f / powf(rope_theta, static_cast<float>(2 * pair) / static_cast<float>(head_dim));
    return static_cast<float>(position) * frequency;
  }
  // (a, b) turned by the angle whose cosine and sine are c and s.
  COURSE_HD static void turn_by(float c, float s, float& a, float& b) {
    const float turned_a = a * c - b * s;
    b = a * s + b * c;
    a = turned_a;
  }
};

// Index (position, pair) of the (T, D / 2, 2) table of each angle's cosine and sine.
struct RotationTable {
  float* table;
  GroupedHeadShape shape;
  COURSE_HD void operator()(int64_t i) const {
    const float angle = shape.angle(i / shape.pairs(), i % shape.pairs());
    table[2 * i] = cosf(angle);
    table[2 * i + 1] = sinf(angle);
  }
};

// Pair `pair` of a head at `position` turned by its angle (`direction` 1) or back (-1), the
// cosine and sine read from a RotationTable's `table`; unturned where there is none.
COURSE_HD inline void turn_from_table(const float* table, const GroupedHeadShape& shape,
                                      int64_t position, int64_t pair, float direction, float& a,
                                      float& b) {
  if (table == nullptr) return;
  const float* cs = table + 2 * (position * shape.pairs() + pair);
  GroupedHeadShape::turn_by(cs[0], direction * cs[1], a, b);
}

// Index (bt, which, h, pair) of the (B T, 3, H, D / 2) output: from the input's head h
// (queries), H + h / (H / G) (keys) or H + G + h / (H / G) (values); queries and keys rotated.
template <class T>
struct GroupedQkvForward {
  const T* x;
  T* packed;
  GroupedHeadShape shape;
  const float* rotation;  // the RotationTable, or null without rotation
  COURSE_HD void operator()(int64_t i) const {
    const int64_t pair = i % shape.pairs(), h = i / shape.pairs() % shape.heads;
    const int64_t which = i / (shape.pairs() * shape.heads) % 3;
    const int64_t bt = i / (shape.pairs() * shape.heads * 3);
    const int64_t group = shape.heads / shape.kv_heads;
    const int64_t source = which == 0 ? h : shape.heads + (which - 1) * shape.kv_heads + h / group;
    const T* in = x + (bt * shape.input_heads() + source) * shape.head_dim + 2 * pair;
    float a = static_cast<float>(in[0]), b = static_cast<float>(in[1]);
    if (which < 2) turn_from_table(rotation, shape, bt % shape.seq, pair, 1.0f, a, b);
    T* out = packed + ((bt * 3 + which) * shape.heads + h) * shape.head_dim + 2 * pair;
    out[0] = T(a);
    out[1] = T(b);
  }
};

// Index (bt, input head, pair) of the (B T, H + 2 G, D / 2) input gradient: the sum over the
// query heads the input head served (one for a query head), in head order, turned back.
template <class T>
struct GroupedQkvBackward {
  const T* dpacked;
  T* dx;
  GroupedHeadShape shape;
  const float* rotation;  // the RotationTable, or null without rotation
  COURSE_HD void operator()(int64_t i) const {
    const int64_t pair = i % shape.pairs(), source = i / shape.pairs() % shape.input_heads();
    const int64_t bt = i / (shape.pairs() * shape.input_heads());
    const int64_t group = shape.heads / shape.kv_heads;
    int64_t which = 0, first = source, count = 1;
    if (source >= shape.heads) {
      const int64_t kv = source - shape.heads;
      which = 1 + kv / shape.kv_heads;
      first = kv % shape.kv_heads * group;
      count = group;
    }
    float a = 0.0f, b = 0.0f;
    for (int64_t h = first; h < first + count; ++h) {
      const T* d = dpacked + ((bt * 3 + which) * shape.heads + h) * shape.head_dim + 2 * pair;
      a += static_cast<float>(d[0]);
      b += static_cast<float>(d[1]);
    }
    if (which < 2) turn_from_table(rotation, shape, bt % shape.seq, pair, -1.0f, a, b);
    T* out = dx + (bt * shape.input_heads() + source) * shape.head_dim + 2 * pair;
    out[0] = T(a);
    out[1] = T(b);
  }
};

}  // namespace course::ops
