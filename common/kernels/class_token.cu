// The class token: the prepend-and-add of the forward, and one copy between token ranges of
// two (N, tokens, C) tensors that the backward and the head's read-out use; the bodies (one for
// the CPU and the GPU), their dispatch and their GPU instantiations. The sums of the parameters'
// gradients over the batch are the position embedding's (embedding_ops.h).
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/class_token.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/embedding_ops.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

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

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

void check_tokens(const Tensor& t, const char* what) {
  COURSE_CHECK(
      t.dim() == 3 && t.memory_format() == MemoryFormat::kContiguous && is_floating(t.dtype()),
      what, " needs contiguous floating (N, tokens, C) tokens, got ", t.str());
}

void check_table(const Tensor& t, const Shape& shape, const Tensor& like, const char* what) {
  COURSE_CHECK(t.dtype() == DType::kF32 && t.shape() == shape && t.device() == like.device(), what,
               " must be f32 ", shape_str(shape), " on ", like.device().str(), ", got ", t.str());
}

// Tokens [first, first + count) of `in` (N, in_tokens, C) into `out` (N, out_tokens, C) of the
// same dtype, from out_first.
void copy_tokens(const Tensor& in, int64_t first, Tensor& out, int64_t out_first, int64_t count) {
  const int64_t n = in.size(0), channels = in.size(2);
  visit_floating(in.dtype(), "copy_tokens", [&]<class T>() {
    for_each_index(in.device(), n * count * channels,
                   ops::CopyTokens<T>{in.data_as<T>(), out.data_as<T>(), in.size(1), first,
                                      out.size(1), out_first, count, channels});
  });
}

}  // namespace

Tensor class_token_forward(const Tensor& patches, const Tensor& cls, const Tensor& positions) {
  check_tokens(patches, "the class token");
  const int64_t n = patches.size(0), l = patches.size(1), c = patches.size(2);
  check_table(cls, {c}, patches, "the class token");
  check_table(positions, {l + 1, c}, patches, "the position embedding");
  Tensor out = Tensor::empty({n, l + 1, c}, DType::kF32, patches.device());
  visit_floating(patches.dtype(), "class_token_forward", [&]<class T>() {
    for_each_index(
        patches.device(), out.numel(),
        ops::ClassTokenForward<T>{patches.data_as<T>(), cls.data_as<float>(),
                                  positions.data_as<float>(), out.data_as<float>(), l, c});
  });
  return out;
}

Tensor class_token_backward(const Tensor& dy, Tensor& cls_grad, Tensor& positions_grad) {
  check_tokens(dy, "the class token's backward");
  const int64_t n = dy.size(0), tokens = dy.size(1), c = dy.size(2);
  COURSE_CHECK(tokens >= 2, "the class token's backward needs the class and a patch token");
  check_table(cls_grad, {c}, dy, "the class token's gradient");
  check_table(positions_grad, {tokens, c}, dy, "the position embedding's gradient");
  visit_floating(dy.dtype(), "class_token_backward", [&]<class T>() {
    // Every token's sum over the batch into the positions, the first token's also into cls.
    for_each_index(dy.device(), tokens * c,
                   ops::PositionEmbeddingBackward<T>{dy.data_as<T>(),
                                                     positions_grad.data_as<float>(), n, tokens, c},
                   n);
    for_each_index(
        dy.device(), c,
        ops::PositionEmbeddingBackward<T>{dy.data_as<T>(), cls_grad.data_as<float>(), n, tokens, c},
        n);
  });
  Tensor dpatches = Tensor::empty({n, tokens - 1, c}, dy.dtype(), dy.device());
  copy_tokens(dy, 1, dpatches, 0, tokens - 1);
  return dpatches;
}

Tensor first_token(const Tensor& tokens) {
  check_tokens(tokens, "the class token's read-out");
  Tensor out = Tensor::empty({tokens.size(0), 1, tokens.size(2)}, tokens.dtype(), tokens.device());
  copy_tokens(tokens, 0, out, 0, 1);
  return out.view({tokens.size(0), tokens.size(2)});
}

Tensor first_token_backward(const Tensor& dy, int64_t tokens) {
  COURSE_CHECK(dy.dim() == 2 && tokens >= 1 && dy.memory_format() == MemoryFormat::kContiguous,
               "the class token's read-out backward needs a contiguous (N, C) gradient, got ",
               dy.str());
  Tensor dx = zeros({dy.size(0), tokens, dy.size(1)}, dy.dtype(), dy.device());
  copy_tokens(dy.view({dy.size(0), 1, dy.size(1)}), 0, dx, 0, 1);
  return dx;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define CLASS_TOKEN(T)                                   \
  COURSE_INSTANTIATE_FOR_EACH(ops::ClassTokenForward<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::CopyTokens<T>)
COURSE_FLOAT_TYPES(CLASS_TOKEN)

}  // namespace course
