// Flash attention on the GPU through cuDNN's graph API (its scaled-dot-product operation, built
// with the cuDNN frontend's headers): the scores are computed tile by tile on the chip and never
// stored, forward or backward, so attention's memory grows with T, not T^2 (a GPT-2 step at
// 8 x 1024 tokens held 96 (1024, 1024) score matrices per layer before). It reads Q, K and V
// where the packed (B, T, 3C) q|k|v projection holds them and writes the output in (B, T, C),
// both described by strides (no permute either way), and keeps the (B, H, T) log-sum-exp of
// each query's scaled scores (the lse of attention_heads.h, natural log) for the backward pass.
//
// A graph is built once per shape and thread (common/kernels/plan_cache.h); a shape cuDNN has no
// engine for is said once and left to the course's kernels (attention.h), as is every call the
// fused path does not take (the CPU, f32, a head size that is not a multiple of 8, a score bias).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/tensor/tensor.h"

namespace course {

// Where the logical (B, H, T, D) tensors of one attention live, in elements: Q, K, V inside the
// packed (B, T, 3, H, D) projection (K and V at their offsets from its start), the output in
// (B, T, H, D), the log-sum-exp (B, H, T, 1) in (B, H, T).
struct PackedAttentionLayout {
  std::array<int64_t, 4> dims;         // B, H, T, D
  std::array<int64_t, 4> qkv_strides;  // Q, K and V alike (and their gradients)
  int64_t k_offset, v_offset;
  std::array<int64_t, 4> out_strides;  // the output and its gradient
  std::array<int64_t, 4> lse_dims, lse_strides;
};
PackedAttentionLayout packed_attention_layout(int64_t batch, int64_t seq, int64_t heads,
                                              int64_t head_dim);

// Why flash attention does not take this call, or "" when it may (cuDNN may still have no
// engine for the shape): the device, the dtype, the head size, a score bias, the switch below.
std::string flash_attention_refusal(const Tensor& qkv, int64_t heads, bool has_score_bias);

// Runs the forward on qkv (B, T, 3C), the scores scaled by `scale`: out (B, T, C) and lse
// (B, H, T) f32 are made and written, and true returned; false when it did not run (refused
// above, or no engine for the shape), and the caller runs its own kernels.
bool flash_attention_forward(const Tensor& qkv, int64_t heads, bool causal, float scale,
                             Tensor& out, Tensor& lse);

// Makes and writes dqkv (B, T, 3C) from dout (B, T, C), given the forward's input, output and lse;
// false when it did not run, as above.
bool flash_attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& dout,
                              const Tensor& lse, int64_t heads, bool causal, float scale,
                              Tensor& dqkv);

// On by default, as PyTorch's torch.backends.cuda.enable_cudnn_sdp; off, attention runs the
// course's kernels (the tests compare the two). For the whole process.
void set_flash_attention(bool enabled);
bool flash_attention_enabled();

}  // namespace course
