// cuDNN's flash attention: the strides it is given address the heads the course's permute makes,
// its refusals, the plan cache's build-once and refuse-once rules (all on the CPU), and on a GPU
// its peak memory at GPT-2's shape against the course's kernels, whose (T, T) scores it does not
// keep, with the two paths' outputs and gradients compared. Its values against a reference in
// double are in transformer_kernels_test.cc.
#include "common/kernels/flash_attention.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/kernels/attention.h"
#include "common/kernels/permute.h"
#include "common/kernels/plan_cache.h"
#include "common/tensor/allocator.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

using testing::random_tensor;
using testing::to_floats;

// Every element of the logical (B, H, T, D) Q, K, V and output, read through the layout's
// strides and offsets, is the one the course's permutes put at (b, h, t, d).
TEST(PackedAttentionLayout, StridesAddressTheHeadsOfThePermutes) {
  const int64_t B = 2, T = 5, H = 3, D = 4, C = H * D;
  const auto qkv = random_tensor({B, T, 3 * C}, DType::kF32, Device::cpu(), 1);
  const auto out = random_tensor({B, T, C}, DType::kF32, Device::cpu(), 2);
  const std::vector<float> heads =
      to_floats(permute(qkv.tensor.view({B, T, 3, H, D}), {2, 0, 3, 1, 4}));
  const std::vector<float> out_heads =
      to_floats(permute(out.tensor.view({B, T, H, D}), {0, 2, 1, 3}));
  const PackedAttentionLayout layout = packed_attention_layout(B, T, H, D);
  ASSERT_EQ(layout.dims, (std::array<int64_t, 4>{B, H, T, D}));
  const int64_t offsets[3] = {0, layout.k_offset, layout.v_offset};
  const auto address = [](const std::array<int64_t, 4>& strides, int64_t b, int64_t h, int64_t t,
                          int64_t d) {
    return b * strides[0] + h * strides[1] + t * strides[2] + d * strides[3];
  };
  for (int part = 0; part < 3; ++part)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t d = 0; d < D; ++d) {
            const int64_t logical = (((part * B + b) * H + h) * T + t) * D + d;
            ASSERT_EQ(qkv.values[offsets[part] + address(layout.qkv_strides, b, h, t, d)],
                      heads[logical])
                << "part " << part << " (" << b << ", " << h << ", " << t << ", " << d << ")";
            if (part == 0) {
              ASSERT_EQ(out.values[address(layout.out_strides, b, h, t, d)], out_heads[logical]);
            }
          }
  // The log-sum-exp (B, H, T, 1) is the course's (B, H, T) lse, element for element.
  EXPECT_EQ(layout.lse_dims, (std::array<int64_t, 4>{B, H, T, 1}));
  EXPECT_EQ(address(layout.lse_strides, 1, 2, 3, 0), (1 * H + 2) * T + 3);
}

TEST(FlashAttentionRefusal, SaysWhyACallKeepsTheCourseKernels) {
  const Tensor bf16 = Tensor::empty({2, 7, 3 * 4 * 16}, DType::kBF16, Device::cpu());
  EXPECT_NE(flash_attention_refusal(bf16, 4, false).find("GPU"), std::string::npos);
  const Tensor sim = Tensor::empty({2, 7, 3 * 4 * 16}, DType::kBF16, Device::sim(0));
  EXPECT_NE(flash_attention_refusal(sim, 4, false).find("GPU"), std::string::npos);
  set_flash_attention(false);
  EXPECT_NE(flash_attention_refusal(bf16, 4, false).find("switched off"), std::string::npos);
  set_flash_attention(true);
  EXPECT_TRUE(flash_attention_enabled());
}

TEST(FlashAttentionGpu, RefusesOnlyWhatCudnnCannotTake) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible: " << cuda_status();
  const auto refusal = [&](DType dtype, int64_t heads, int64_t head_dim, bool bias) {
    return flash_attention_refusal(
        Tensor::empty({2, 7, 3 * heads * head_dim}, dtype, Device::cuda(0)), heads, bias);
  };
  EXPECT_EQ(refusal(DType::kBF16, 4, 16, false), "");
  EXPECT_EQ(refusal(DType::kF16, 12, 64, false), "");
  EXPECT_NE(refusal(DType::kF32, 4, 16, false).find("f32"), std::string::npos);
  EXPECT_NE(refusal(DType::kBF16, 4, 12, false).find("multiple of 8"), std::string::npos);
  EXPECT_NE(refusal(DType::kBF16, 1, 264, false).find("256"), std::string::npos);
  EXPECT_NE(refusal(DType::kBF16, 4, 16, true).find("score bias"), std::string::npos);
}

TEST(PlanCache, BuildsEachKeyOnceAndReportsARefusalOnce) {
  PlanCache<int, std::string> cache;
  std::vector<int> built;
  std::vector<std::string> reports;
  const auto build = [&](int key) {
    built.push_back(key);
    if (key < 0) throw PlanRefused("no engine for " + std::to_string(key));
    return "plan " + std::to_string(key);
  };
  const auto report = [&](const std::string& reason) { reports.push_back(reason); };
  for (int round = 0; round < 3; ++round) {
    for (int key : {4, -1, 7, 4, -1}) {
      std::string* plan = cache.find_or_build(key, build, report);
      if (key < 0) {
        EXPECT_EQ(plan, nullptr);
      } else {
        ASSERT_NE(plan, nullptr);
        EXPECT_EQ(*plan, "plan " + std::to_string(key));
      }
    }
  }
  EXPECT_EQ(built, (std::vector<int>{4, -1, 7}));
  EXPECT_EQ(reports, (std::vector<std::string>{"no engine for -1"}));
  EXPECT_EQ(cache.size(), 3u);
}

TEST(PlanCache, AnErrorThatIsNoRefusalPropagatesAndIsNotRemembered) {
  PlanCache<int, int> cache;
  int attempts = 0;
  const auto failing = [&](int) -> int {
    ++attempts;
    throw Error("out of device memory");
  };
  const auto report = [](const std::string&) { FAIL() << "an error is not a refusal"; };
  EXPECT_THROW(cache.find_or_build(1, failing, report), Error);
  EXPECT_THROW(cache.find_or_build(1, failing, report), Error);
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(*cache.find_or_build(
                1, [](int key) { return key + 10; }, report),
            11);
}

// One forward and backward of GPT-2's attention (8 x 1024 tokens, 12 heads of 64, bf16, causal):
// the bytes allocated at the peak above what the inputs hold, and the outputs.
struct AttentionRun {
  int64_t peak_bytes;
  std::vector<float> out, dqkv;
};

AttentionRun run_gpt2_attention(const Tensor& qkv, const Tensor& dout) {
  // The allocator counts on the host, in the order the work is queued: no wait is needed.
  CachingAllocator& allocator = device_allocator(qkv.device());
  const int64_t before = allocator.stats().allocated;
  allocator.reset_peak();
  AttentionRun run;
  {
    AttentionSaved saved;
    const Tensor out = attention_forward(qkv, 12, true, saved);
    const Tensor dqkv = attention_backward(dout, 12, true, saved);
    run.peak_bytes = allocator.stats().peak_allocated - before;
    run.out = to_floats(out);
    run.dqkv = to_floats(dqkv);
  }
  return run;
}

TEST(FlashAttentionGpu, KeepsNoScoreMatrixAtGpt2ShapeAndMatchesTheCourseKernels) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible: " << cuda_status();
  ASSERT_TRUE(cudnn_graphs_compiled()) << "this GPU build has no cuDNN frontend (setup.sh)";
  const int64_t B = 8, T = 1024, H = 12, D = 64;
  const auto qkv = random_tensor({B, T, 3 * H * D}, DType::kBF16, Device::cuda(0), 11, -2, 2);
  const auto dout = random_tensor({B, T, H * D}, DType::kBF16, Device::cuda(0), 12);
  const AttentionRun flash = run_gpt2_attention(qkv.tensor, dout.tensor);
  set_flash_attention(false);
  const AttentionRun kernels = run_gpt2_attention(qkv.tensor, dout.tensor);
  set_flash_attention(true);
  const int64_t scores = B * H * T * T * 2;  // one (B H, T, T) bf16 score matrix
  std::printf(
      "attention at GPT-2 8 x 1024, bf16: peak %.1f MiB with cuDNN's flash attention, "
      "%.1f MiB with the course's kernels (one score matrix %.1f MiB)\n",
      flash.peak_bytes / 1048576.0, kernels.peak_bytes / 1048576.0, scores / 1048576.0);
  EXPECT_LT(flash.peak_bytes, scores / 2);
  EXPECT_GT(kernels.peak_bytes, scores);
  EXPECT_TRUE(testing::all_close(flash.out, kernels.out, testing::accumulated(DType::kBF16)));
  EXPECT_TRUE(testing::all_close(flash.dqkv, kernels.dqkv, testing::accumulated(DType::kBF16)));
}

}  // namespace
}  // namespace course
