// The Llama family's layers and model: RMSNorm, SwiGLU and grouped rotary attention against
// finite differences, the whole model through every parameter (tied and untied output
// layers), its parameter counts against the published checkpoints' totals, and its shape
// checks' messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "common/kernels/elementwise.h"
#include "common/models/gpt/gpt.h"
#include "common/nn/activation.h"
#include "common/nn/autocast.h"
#include "common/nn/rms_norm.h"
#include "common/nn/self_attention.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/gradcheck.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course::nn {
namespace {

using testing::check_gradients;
using testing::random_tensor;
using testing::random_tokens;

using testing::kCpu;

// 2 layers, 4 query heads over 2 key/value heads of 4, a SwiGLU of 12, 13 tokens, 7 positions.
GptConfig small_llama(bool tied) {
  return {"llama-test", 2, 4, 16, 7, 13, DecoderFamily::kLlama, 2, 12, tied, 100.0f};
}

TEST(Llama, RmsNormMatchesFiniteDifferences) {
  RmsNorm norm(6, kCpu);
  norm.weight.value = random_tensor({6}, DType::kF32, kCpu, 1, 0.5f, 1.5f).tensor;
  EXPECT_TRUE(check_gradients(norm, random_tensor({3, 2, 6}, DType::kF32, kCpu, 2).tensor));
}

TEST(Llama, SwigluMatchesFiniteDifferences) {
  SwiGLU swiglu;
  const Tensor x = random_tensor({2, 3, 10}, DType::kF32, kCpu, 3, -4.0f, 4.0f).tensor;
  EXPECT_EQ(swiglu.forward(x).shape(), Shape({2, 3, 5}));
  EXPECT_TRUE(check_gradients(swiglu, x));
}

TEST(Llama, GroupedRotaryAttentionMatchesFiniteDifferences) {
  for (bool causal : {true, false}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    SelfAttention attention(GroupedHeads{4, 2, 2, 10.0f}, causal);
    const Tensor qkv = random_tensor({2, 5, (4 + 2 * 2) * 2}, DType::kF32, kCpu, 4).tensor;
    EXPECT_EQ(attention.forward(qkv).shape(), Shape({2, 5, 8}));
    EXPECT_TRUE(check_gradients(attention, qkv, {.samples_per_tensor = 40}));
  }
}

// The layer keeps its rotation table between calls: run on 5 positions, then 9, then 5 again,
// each call's output and input gradient are a fresh layer's, bit for bit.
TEST(Llama, RotaryAttentionRemadeForEachSequenceLength) {
  const GroupedHeads heads{4, 2, 2, 10.0f};
  SelfAttention reused(heads, true);
  int seed = 5;
  for (int64_t seq : {5, 9, 5}) {
    SCOPED_TRACE(::testing::Message() << seq << " positions");
    SelfAttention fresh(heads, true);
    const Tensor qkv = random_tensor({2, seq, 16}, DType::kF32, kCpu, seed++).tensor;
    const Tensor dy = random_tensor({2, seq, 8}, DType::kF32, kCpu, seed++).tensor;
    EXPECT_EQ(reused.forward(qkv).to_vector<float>(), fresh.forward(qkv).to_vector<float>());
    EXPECT_EQ(reused.backward(dy).to_vector<float>(), fresh.backward(dy).to_vector<float>());
  }
}

TEST(Llama, ModelMatchesFiniteDifferencesThroughEveryParameter) {
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    std::mt19937 rng(5);
    Gpt llama(small_llama(tied), rng, kCpu);
    const Tensor tokens = random_tokens(2, 7, 13, 6);
    EXPECT_EQ(llama.forward(tokens).shape(), Shape({2, 7, 13}));
    EXPECT_TRUE(check_gradients(llama, tokens,
                                {.samples_per_tensor = 6, .step = 1e-3, .input_gradient = false}));
  }
}

TEST(Llama, UnderAutocastStaysCloseToF32) {
  std::mt19937 rng(7);
  Gpt llama(small_llama(true), rng, kCpu);
  const Tensor tokens = random_tokens(2, 7, 13, 8);
  const std::vector<float> f32 = llama.forward(tokens).to_vector<float>();
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    Autocast autocast(dtype);
    const Tensor logits = llama.forward(tokens);
    EXPECT_EQ(logits.dtype(), dtype);
    EXPECT_TRUE(testing::all_close(testing::to_floats(logits), f32, {2e-2, 2e-2}));
    llama.zero_grad();
    llama.backward(zeros(logits.shape(), dtype));
  }
}

// The totals of the published checkpoints (Meta's Llama 3.2 1B and 3B, Llama 3.1 8B), which
// the formula must give exactly.
TEST(Llama, ParameterCountsAreThePublishedOnes) {
  EXPECT_EQ(gpt_parameter_count(gpt_preset("llama-3.2-1b")), 1'235'814'400);
  EXPECT_EQ(gpt_parameter_count(gpt_preset("llama-3.2-3b")), 3'212'749'824);
  EXPECT_EQ(gpt_parameter_count(gpt_preset("llama-3.1-8b")), 8'030'261'248);
}

TEST(Llama, BuiltModelsHoldTheCountedParameters) {
  for (bool tied : {true, false}) {
    std::mt19937 rng(9);
    const GptConfig config = small_llama(tied);
    Gpt llama(config, rng, kCpu);
    EXPECT_EQ(llama.parameter_count(), gpt_parameter_count(config)) << tied;
    const auto names = llama.state().parameters;
    EXPECT_EQ(names.front().first, "wte.weight");
    EXPECT_EQ(names[1].first, "h.0.attention.attention_norm.weight");
    EXPECT_EQ(names[2].first, "h.0.attention.attn.wqkv.weight");
    EXPECT_EQ(names.back().first, tied ? "ln_f.weight" : "lm_head.weight");
  }
  std::mt19937 rng(10);
  Gpt tiny(gpt_preset("llama-tiny"), rng, kCpu);
  EXPECT_EQ(tiny.parameter_count(), gpt_parameter_count(gpt_preset("llama-tiny")));
}

TEST(Llama, ShapesThatDoNotFitGetOneMessage) {
  std::mt19937 rng(11);
  const auto error = [&](GptConfig config) {
    return testing::error_of([&] { Gpt model(config, rng, kCpu); });
  };
  GptConfig c = small_llama(true);
  c.kv_heads = 3;
  EXPECT_THAT(error(c), ::testing::HasSubstr("3 key/value heads do not divide its 4"));
  c = small_llama(true);
  c.heads = 3;
  c.kv_heads = 1;
  EXPECT_THAT(error(c), ::testing::HasSubstr("16 channels do not split into 3 heads"));
  c = small_llama(true);
  c.channels = 12;
  c.heads = 4;  // head size 3
  EXPECT_THAT(error(c), ::testing::HasSubstr("head size 3 is odd"));
  c = small_llama(true);
  c.rope_theta = 0.0f;
  EXPECT_THAT(error(c), ::testing::HasSubstr("needs a rotary base"));
  GptConfig gpt2{"gpt-test", 2, 2, 8, 6, 11};
  gpt2.kv_heads = 1;
  EXPECT_THAT(error(gpt2), ::testing::HasSubstr("GPT-2 blocks have no grouped heads"));
}

}  // namespace
}  // namespace course::nn
