// The transformer's layers and the GPT model: every backward against central finite
// differences, autocast against f32, parameter counts against the published GPT-2 sizes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "common/kernels/elementwise.h"
#include "common/models/gpt/gpt.h"
#include "common/nn/autocast.h"
#include "common/nn/embedding.h"
#include "common/nn/layer_norm.h"
#include "common/nn/linear.h"
#include "common/nn/residual_branch.h"
#include "common/nn/self_attention.h"
#include "common/nn/sequential.h"
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

const GptConfig kSmall{"test", 2, 2, 8, 6, 11};

TEST(Transformer, LinearOverSequencesMatchesFiniteDifferences) {
  std::mt19937 rng(1);
  Linear fc(6, 4, rng, kCpu);
  const Tensor x = random_tensor({2, 3, 6}, DType::kF32, kCpu, 2).tensor;
  EXPECT_EQ(fc.forward(x).shape(), Shape({2, 3, 4}));
  EXPECT_TRUE(check_gradients(fc, x));
}

TEST(Transformer, SelfAttentionMatchesFiniteDifferences) {
  for (bool causal : {true, false}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    SelfAttention attention(2, causal);
    const Tensor qkv = random_tensor({2, 5, 3 * 6}, DType::kF32, kCpu, 3).tensor;
    EXPECT_TRUE(check_gradients(attention, qkv, {.samples_per_tensor = 40}));
  }
}

TEST(Transformer, EmbeddingMatchesFiniteDifferences) {
  std::mt19937 rng(4);
  Embedding embedding(7, 5, 3, rng, kCpu);
  EXPECT_TRUE(check_gradients(embedding, random_tokens(2, 4, 7, 5),
                              {.samples_per_tensor = 30, .input_gradient = false}));
}

TEST(Transformer, ResidualBranchMatchesFiniteDifferences) {
  auto branch = std::make_unique<Sequential>();
  branch->add(std::make_unique<LayerNorm>(6, kCpu));
  std::mt19937 rng(6);
  branch->add(std::make_unique<Linear>(6, 6, rng, kCpu));
  ResidualBranch residual(std::move(branch));
  EXPECT_TRUE(check_gradients(residual, random_tensor({3, 2, 6}, DType::kF32, kCpu, 7).tensor));
}

TEST(Transformer, GptMatchesFiniteDifferencesThroughEveryParameter) {
  std::mt19937 rng(8);
  Gpt gpt(kSmall, rng, kCpu);
  EXPECT_EQ(gpt.forward(random_tokens(2, 6, 11, 9)).shape(), Shape({2, 6, 11}));
  // A small step: GPT-2's initial residual stream is about 0.02 wide, so LayerNorm bends
  // sharply over a step of 1e-2 in a bias that shifts every position.
  EXPECT_TRUE(check_gradients(gpt, random_tokens(2, 6, 11, 9),
                              {.samples_per_tensor = 6, .step = 1e-3, .input_gradient = false}));
}

TEST(Transformer, GptUnderAutocastStaysCloseToF32) {
  std::mt19937 rng(10);
  Gpt gpt(kSmall, rng, kCpu);
  const Tensor tokens = random_tokens(2, 6, 11, 11);
  const std::vector<float> f32 = gpt.forward(tokens).to_vector<float>();
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    Autocast autocast(dtype);
    const Tensor logits = gpt.forward(tokens);
    EXPECT_EQ(logits.dtype(), dtype);
    EXPECT_TRUE(testing::all_close(testing::to_floats(logits), f32, {2e-2, 2e-2}));
    gpt.zero_grad();
    gpt.backward(zeros(logits.shape(), dtype));  // runs through every 16-bit path
  }
}

TEST(Transformer, ParameterCountsAreThePublishedGpt2Sizes) {
  EXPECT_EQ(gpt_parameter_count(gpt_preset("gpt2")), 124'439'808);
  EXPECT_EQ(gpt_parameter_count(gpt_preset("gpt2-medium")), 354'823'168);
  EXPECT_EQ(gpt_parameter_count(gpt_preset("gpt2-large")), 774'030'080);
  EXPECT_EQ(gpt_parameter_count(gpt_preset("gpt2-xl")), 1'557'611'200);
  EXPECT_NEAR(gpt_parameter_count(gpt_preset("gpt-1.3b")) / 1e9, 1.3, 0.05);
  EXPECT_THAT(testing::error_of([] { gpt_preset("gpt5"); }), ::testing::HasSubstr("gpt2-medium"));
}

TEST(Transformer, BuiltModelsHoldTheCountedParameters) {
  std::mt19937 rng(12);
  Gpt tiny(gpt_preset("gpt-tiny"), rng, kCpu);
  EXPECT_EQ(tiny.parameter_count(), gpt_parameter_count(gpt_preset("gpt-tiny")));
  Gpt gpt2(gpt_preset("gpt2"), rng, kCpu);
  EXPECT_EQ(gpt2.parameter_count(), 124'439'808);
  EXPECT_EQ(gpt2.state().parameters.front().first, "wte.weight");
  EXPECT_EQ(gpt2.state().parameters[2].first, "h.0.attention.ln_1.weight");
}

}  // namespace
}  // namespace course::nn
