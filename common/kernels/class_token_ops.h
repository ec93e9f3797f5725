// Class-token bodies shared by the CPU and the GPU: the prepend-and-add of the forward, and one
// copy between token ranges of two (N, tokens, C) tensors that the backward and the head's
// read-out use. The sums of the parameters' gradients over the batch are the position
// embedding's (embedding_ops.h).
#pragma once

#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

// Element (n, t, c) of the (N, L + 1, C) f32 output: cls[c] at t = 0, else the patch token
// t - 1, plus positions[t, c].
template <class T>
struct ClassTokenForward {
  const T* patches;
  const float* cls;
  const float* positions;
  float* out;
  int64_t patch_tokens, channels;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t c = i % channels, t = i / channels % (patch_tokens + 1);
    const int64_t n = i / (channels * (patch_tokens + 1));
    const float token =
        t == 0 ? cls[c] : static_cast<float>(patches[(n * patch_tokens + t - 1) * channels + c]);
    out[i] = token + positions[t * channels + c];
  }
};

// Element (n, t, c), t < count: out[n, out_first + t, c] = in[n, in_first + t, c].
template <class T>
struct CopyTokens {
  const T* in;
  T* out;
  int64_t in_tokens, in_first, out_tokens, out_first, count, channels;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t c = i % channels, t = i / channels % count, n = i / (channels * count);
    out[(n * out_tokens + out_first + t) * channels + c] =
        in[(n * in_tokens + in_first + t) * channels + c];
  }
};

}  // namespace course::ops
