// Token and position embedding bodies shared by the CPU and the GPU. Tokens are (B, T) i32,
// the tables (V, C) and (context, C) (none for a model with rotary positions) of one floating
// type T (16-bit under sharded mixed
// precision), the output (B, T, C) f32, the tables' gradients f32. The backward bodies are
// laid out so no two indices write the same element: deterministic without atomics.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

// Element (bt, c): y = wte[token[bt], c] (+ wpe[bt mod T, c] where there is a position table),
// added in f32.
template <class T>
struct EmbeddingForward {
  const int32_t* tokens;
  const T* wte;
  const T* wpe;
  float* y;
  int64_t seq, channels;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t bt = i / channels, c = i % channels;
    const float position = wpe ? static_cast<float>(wpe[(bt % seq) * channels + c]) : 0.0f;
    y[i] = static_cast<float>(wte[tokens[bt] * channels + c]) + position;
  }
};

// Index (vocabulary slice, channel c): wte_grad[t, c] += dy[bt, c] for every position bt, in
// order, whose token t falls in the slice. Each element of the table has one owner, so
// repeated tokens never race, and its sum is the same whatever the number of slices: one on
// the CPU, enough on a GPU for its SMs (neighbouring threads take neighbouring channels).
template <class T>
struct TokenEmbeddingBackward {
  const int32_t* tokens;
  const T* dy;
  float* wte_grad;
  int64_t positions, channels, tokens_per_slice;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t slice = i / channels, c = i % channels;
    const int64_t first = slice * tokens_per_slice, end = first + tokens_per_slice;
    for (int64_t bt = 0; bt < positions; ++bt) {
      const int64_t t = tokens[bt];
      if (t >= first && t < end)
        wte_grad[t * channels + c] += static_cast<float>(dy[bt * channels + c]);
    }
  }
};

// Element (t, c): wpe_grad[t, c] += sum over the batch of dy[b, t, c].
template <class T>
struct PositionEmbeddingBackward {
  const T* dy;
  float* wpe_grad;
  int64_t batch, seq, channels;
  COURSE_HD void operator()(int64_t i) const {
    float sum = 0.0f;
    for (int64_t b = 0; b < batch; ++b) sum += static_cast<float>(dy[b * seq * channels + i]);
    wpe_grad[i] += sum;
  }
};

// A token id relative to a slice [first, first + rows) of the vocabulary (vocabulary-parallel
// embedding): its row there, or `rows` (a zero row past the slice) for a token outside.
struct TokenRowInSlice {
  const int32_t* tokens;
  int32_t* rows_out;
  int64_t first, rows;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t row = tokens[i] - first;
    rows_out[i] = static_cast<int32_t>(row >= 0 && row < rows ? row : rows);
  }
};

}  // namespace course::ops
