// Token and position embeddings (embedding_ops.h): their dispatch and GPU instantiations.
#include <algorithm>
#include <optional>

#include "common/kernels/embedding.h"
#include "common/kernels/embedding_ops.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

// The tables (or their gradients) are (rows, C) of `dtype`, or of any one floating type when
// `dtype` is not given; the position table may be undefined.
void check_tables(const Tensor& tokens, const Tensor& wte, const Tensor& wpe,
                  std::optional<DType> dtype = std::nullopt) {
  COURSE_CHECK(tokens.dim() == 2 && tokens.dtype() == DType::kI32,
               "embedding needs (B, T) i32 tokens, got ", tokens.str());
  const DType expected = dtype.value_or(wte.dtype());
  for (const Tensor* table : {&wte, &wpe}) {
    if (!table->defined()) continue;
    COURSE_CHECK(table->dim() == 2 && table->dtype() == expected && is_floating(expected) &&
                     table->size(1) == wte.size(1) && table->device() == tokens.device(),
                 "embedding tables must be (rows, C) of one floating type (f32 gradients) on the "
                 "tokens' device, got ",
                 table->str(), " for tokens ", tokens.str());
  }
  COURSE_CHECK(!wpe.defined() || tokens.size(1) <= wpe.size(0), "a sequence of ", tokens.size(1),
               " tokens is longer than the model's context of ", wpe.size(0));
  if (tokens.device().is_cpu()) {
    const int32_t* t = tokens.data_as<int32_t>();
    const auto [low, high] = std::minmax_element(t, t + tokens.numel());
    COURSE_CHECK(tokens.numel() == 0 || (*low >= 0 && *high < wte.size(0)), "token ",
                 *low < 0 ? *low : *high, " is outside the vocabulary of ", wte.size(0));
  }
}

// The token table's gradient is shared out in slices of the vocabulary: the CPU's threads
// already have a channel each, a GPU's 132 SMs want two full blocks each.
int64_t vocabulary_slices(Device device, int64_t vocabulary, int64_t channels) {
  if (runs_on_host(device)) return 1;
  const int64_t wanted = 2 * kReferenceSms * kThreadsPerBlock;
  return std::clamp<int64_t>((wanted + channels - 1) / channels, 1, vocabulary);
}

}  // namespace

Tensor embedding_forward(const Tensor& tokens, const Tensor& wte, const Tensor& wpe) {
  check_tables(tokens, wte, wpe);
  const int64_t channels = wte.size(1);
  Tensor y =
      Tensor::empty({tokens.size(0), tokens.size(1), channels}, DType::kF32, tokens.device());
  visit_floating(wte.dtype(), "embedding_forward", [&]<class T>() {
    for_each_index(
        tokens.device(), y.numel(),
        ops::EmbeddingForward<T>{tokens.data_as<int32_t>(), wte.data_as<T>(), wpe.data_or_null<T>(),
                                 y.data_as<float>(), tokens.size(1), channels});
  });
  return y;
}

void embedding_backward(const Tensor& dy, const Tensor& tokens, Tensor& wte_grad,
                        Tensor& wpe_grad) {
  check_tables(tokens, wte_grad, wpe_grad, DType::kF32);
  const int64_t batch = tokens.size(0), seq = tokens.size(1), channels = wte_grad.size(1);
  COURSE_CHECK(dy.shape() == Shape({batch, seq, channels}) && dy.device() == tokens.device(),
               "embedding backward needs dy (", batch, ", ", seq, ", ", channels, "), got ",
               dy.str());
  visit_floating(dy.dtype(), "embedding_backward", [&]<class T>() {
    const int64_t slices = vocabulary_slices(tokens.device(), wte_grad.size(0), channels);
    const int64_t tokens_per_slice = (wte_grad.size(0) + slices - 1) / slices;
    for_each_index(tokens.device(), slices * channels,
                   ops::TokenEmbeddingBackward<T>{tokens.data_as<int32_t>(), dy.data_as<T>(),
                                                  wte_grad.data_as<float>(), batch * seq, channels,
                                                  tokens_per_slice},
                   batch * seq);
    if (!wpe_grad.defined()) return;
    for_each_index(tokens.device(), seq * channels,
                   ops::PositionEmbeddingBackward<T>{dy.data_as<T>(), wpe_grad.data_as<float>(),
                                                     batch, seq, channels},
                   batch);
  });
}

Tensor token_rows_in_slice(const Tensor& tokens, int64_t first, int64_t rows) {
  COURSE_CHECK(tokens.dtype() == DType::kI32 && tokens.memory_format() == MemoryFormat::kContiguous,
               "token rows need contiguous i32 tokens, got ", tokens.str());
  Tensor out = Tensor::empty(tokens.shape(), DType::kI32, tokens.device());
  for_each_index(
      tokens.device(), tokens.numel(),
      ops::TokenRowInSlice{tokens.data_as<int32_t>(), out.data_as<int32_t>(), first, rows});
  return out;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define EMBEDDING(T)                                          \
  COURSE_INSTANTIATE_FOR_EACH(ops::EmbeddingForward<T>)       \
  COURSE_INSTANTIATE_FOR_EACH(ops::TokenEmbeddingBackward<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::PositionEmbeddingBackward<T>)
COURSE_FLOAT_TYPES(EMBEDDING)
COURSE_INSTANTIATE_FOR_EACH(ops::TokenRowInSlice)

}  // namespace course
