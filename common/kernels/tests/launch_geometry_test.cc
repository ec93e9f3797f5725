// The GPU launch grids of hand-written kernels, checked on the CPU (launch_plan.h): the planning
// rules themselves, and the launches of the kernels reshaped for a GPU, called (and logged, not
// run) on tensors of the course's large shapes: GPT-2 124M at batch 8 x 1024 (8192 rows of 768
// channels, MLP 3072, vocabulary 50257) and ResNet-50 at batch 256 (its first and last stages'
// batch norms in both layouts, its classifier). Every launch that moves at least 2^20 elements
// must fill an H100's 132 SMs twice, with at least 16 warps per SM in all to hide memory
// latency (two blocks of a warp each pass the first rule and leave an SM nearly idle while
// each thread adds thousands of values in turn: the NHWC batch norm's old per-sample sums).
#include <gtest/gtest.h>

#include "common/kernels/attention.h"
#include "common/kernels/batch_norm.h"
#include "common/kernels/cross_entropy.h"
#include "common/kernels/embedding.h"
#include "common/kernels/launch_plan.h"
#include "common/kernels/layer_norm.h"
#include "common/kernels/linear.h"
#include "common/kernels/pooling.h"
#include "common/kernels/softmax.h"

namespace course {
namespace {

constexpr int64_t kHeavy = int64_t{1} << 20;
constexpr int64_t kLatencyHidingThreads = int64_t{kReferenceSms} * 16 * 32;

TEST(LaunchPlan, LightIndicesGetFullBlocksAndHeavyOnesSpreadOverTheSms) {
  EXPECT_EQ(plan_launch(1000, 1).blocks, 4);
  EXPECT_EQ(plan_launch(1000, 1).threads, 256);
  EXPECT_EQ(plan_launch(int64_t{1} << 30, 1).blocks, kMaxBlocks);  // grid-stride beyond
  EXPECT_EQ(plan_launch(1, 1).blocks, 1);
  // 8192 rows of work: 32-thread blocks give 256 blocks instead of 32.
  const LaunchPlan rows = plan_launch(8192, 768);
  EXPECT_EQ(rows.threads, 32);
  EXPECT_EQ(rows.blocks, 256);
  // Enough indices already: the hint changes nothing.
  EXPECT_EQ(plan_launch(1 << 20, 64).threads, 256);
  // Half the SMs' worth of indices: threads halve until two blocks per SM.
  const LaunchPlan half = plan_launch(2 * kReferenceSms * 64, 64);
  EXPECT_EQ(half.threads, 64);
  EXPECT_EQ(half.blocks, 2 * kReferenceSms);
}

TEST(LaunchPlan, RowKernelsGetAWarpPerRow) {
  // 8192 rows: eight a block.
  EXPECT_EQ(plan_row_launch(8192).threads, 256);
  EXPECT_EQ(plan_row_launch(8192).blocks, 1024);
  // 256 rows: a warp a block, 256 blocks.
  EXPECT_EQ(plan_row_launch(256).threads, 32);
  EXPECT_EQ(plan_row_launch(256).blocks, 256);
  // 1056 rows: 64-thread blocks give 528 blocks; 128 threads would give 264 (exactly two per SM).
  EXPECT_EQ(plan_row_launch(1056).threads, 128);
  EXPECT_EQ(plan_row_launch(1056).blocks, 264);
  EXPECT_EQ(plan_row_launch(1).blocks, 1);
  EXPECT_EQ(plan_row_launch(int64_t{1} << 30).blocks, kMaxBlocks);  // warps stride beyond
}

TEST(LaunchPlan, TheLogRecordsInsteadOfRunning) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor sums = Tensor::from_vector<float>({10, 20}, {2});
  {
    LaunchLog log;
    add_column_sums_(x, sums);
    ASSERT_EQ(log.launches().size(), 2u);
    EXPECT_NE(log.launches()[0].kernel.find("ChunkColumnSums"), std::string::npos)
        << log.launches()[0].kernel;
    EXPECT_THROW(LaunchLog nested, Error);
  }
  EXPECT_EQ(sums.to_vector<float>(), (std::vector<float>{10, 20}));  // nothing ran
  add_column_sums_(x, sums);
  EXPECT_EQ(sums.to_vector<float>(), (std::vector<float>{14, 26}));
}

void expect_fills_the_gpu(const LaunchLog& log, const std::string& what) {
  ASSERT_FALSE(log.launches().empty()) << what;
  for (const RecordedLaunch& l : log.launches()) {
    if (l.n * l.work_per_index < kHeavy) continue;
    EXPECT_GE(l.plan.blocks, 2 * kReferenceSms)
        << what << ": " << l.kernel << " over " << l.n << " indices of " << l.work_per_index
        << " elements runs " << l.plan.blocks << " blocks of " << l.plan.threads;
    EXPECT_GE(l.plan.blocks * l.plan.threads, kLatencyHidingThreads)
        << what << ": " << l.kernel << " over " << l.n << " indices of " << l.work_per_index
        << " elements runs " << l.plan.blocks * l.plan.threads << " threads";
  }
}

// Bias gradients (column sums) of GPT-2's linear layers and ResNet-50's classifier, and
// LayerNorm's parameter gradients, at their training shapes.
TEST(LaunchGeometry, ColumnReductionsFillTheGpu) {
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {8192, 768}, {8192, 2304}, {8192, 3072}, {256, 1000}}) {
    const Tensor dy = Tensor::empty({rows, cols});
    Tensor bias_grad = Tensor::empty({cols});
    LaunchLog log;
    add_column_sums_(dy, bias_grad);
    expect_fills_the_gpu(log,
                         "bias gradient of " + std::to_string(rows) + " x " + std::to_string(cols));
  }
  const Tensor x = Tensor::empty({8, 1024, 768}), dy = Tensor::empty({8, 1024, 768});
  const Tensor weight = Tensor::empty({768});
  Tensor weight_grad = Tensor::empty({768}), bias_grad = Tensor::empty({768});
  const LayerNormSaved saved{Tensor::empty({8192}), Tensor::empty({8192})};
  LaunchLog log;
  layer_norm_backward(dy, x, weight, saved, weight_grad, bias_grad);
  int column_passes = 0;
  for (const RecordedLaunch& l : log.launches()) {
    if (l.kernel.find("NormParamTerms") == std::string::npos) continue;
    ++column_passes;
    EXPECT_GE(l.plan.blocks, 2 * kReferenceSms) << l.kernel;
  }
  EXPECT_EQ(column_passes, 1);
}

// The row kernels of a GPT-2 step: LayerNorm, softmax and the loss over the vocabulary.
TEST(LaunchGeometry, RowKernelsFillTheGpu) {
  const Tensor x = Tensor::empty({8, 1024, 768}), dy = Tensor::empty({8, 1024, 768});
  const Tensor weight = Tensor::empty({768}), bias = Tensor::empty({768});
  Tensor weight_grad = Tensor::empty({768}), bias_grad = Tensor::empty({768});
  {
    LaunchLog log;
    LayerNormSaved saved;
    layer_norm_forward(x, weight, bias, 1e-5f, saved);
    layer_norm_backward(dy, x, weight, saved, weight_grad, bias_grad);
    expect_fills_the_gpu(log, "LayerNorm of 8 x 1024 x 768");
  }
  {
    const Tensor scores = Tensor::empty({8192, 1024});
    LaunchLog log;
    softmax_backward(scores, softmax_forward(scores));
    expect_fills_the_gpu(log, "softmax of 8192 x 1024");
  }
  {
    const Tensor logits = Tensor::empty({8192, 50257});
    const Tensor labels = Tensor::from_vector<int64_t>(std::vector<int64_t>(8192, 50256), {8192});
    LaunchLog log;
    softmax_cross_entropy_backward(softmax_cross_entropy(logits, labels, 0.1f), labels, 0.1f,
                                   DType::kF32, 1.0f);
    expect_fills_the_gpu(log, "cross-entropy of 8192 x 50257");
  }
}

// GPT-2's embedding gradients (a vocabulary of 50257, a context of 1024) and its attention's row
// kernels (12 heads of 64; the batched GEMMs are cuBLAS's), in f16: the CPU runs f32 heads in its
// own banded loop (attention_heads_cpu.h), and 16-bit ones through the GPU's row kernels.
TEST(LaunchGeometry, EmbeddingAndAttentionFillTheGpu) {
  {
    const Tensor tokens = Tensor::from_vector(std::vector<int32_t>(8192, 50256), {8, 1024});
    const Tensor dy = Tensor::empty({8, 1024, 768});
    Tensor wte_grad = Tensor::empty({50257, 768}), wpe_grad = Tensor::empty({1024, 768});
    LaunchLog log;
    embedding_backward(dy, tokens, wte_grad, wpe_grad);
    expect_fills_the_gpu(log, "embedding gradients of 8 x 1024 tokens");
  }
  const Tensor qkv = Tensor::empty({8, 1024, 3 * 768}, DType::kF16);
  const Tensor dy = Tensor::empty({8, 1024, 768}, DType::kF16);
  AttentionSaved saved;
  LaunchLog log;
  attention_forward(qkv, 12, true, saved);
  attention_backward(dy, 12, true, saved);
  int row_kernels = 0;
  for (const RecordedLaunch& l : log.launches())
    row_kernels += l.kernel.find("Attention") != std::string::npos;
  EXPECT_EQ(row_kernels, 2);
  expect_fills_the_gpu(log, "attention of 8 x 1024 x 12 heads");
}

// Batch norm's statistics, normalisation and gradients at ResNet-50's first stage (64 channels
// of 56 x 56) and last (2048 channels of 7 x 7), batch 256, NCHW and NHWC, with no zero fill.
TEST(LaunchGeometry, BatchNormFillsTheGpuInBothLayouts) {
  for (const Shape& shape : {Shape{256, 64, 56, 56}, Shape{256, 2048, 7, 7}}) {
    for (const MemoryFormat format : {MemoryFormat::kContiguous, MemoryFormat::kChannelsLast}) {
      const Tensor x = Tensor::empty(shape, DType::kF32, Device::cpu(), format);
      const Tensor dy = Tensor::empty(shape, DType::kF32, Device::cpu(), format);
      const int64_t c = shape[1];
      const Tensor gamma = Tensor::empty({c}), beta = Tensor::empty({c});
      Tensor running_mean = Tensor::empty({c}), running_var = Tensor::empty({c});
      Tensor dgamma = Tensor::empty({c}), dbeta = Tensor::empty({c});
      BatchNormSaved saved;
      LaunchLog log;
      batch_norm_train(x, gamma, beta, running_mean, running_var, 0.1f, 1e-5f, saved);
      batch_norm_backward(dy, x, gamma, beta, saved, dgamma, dbeta);
      expect_fills_the_gpu(log, "batch norm of " + x.str());
      // Its channel sums are written, not added to a buffer filled with zeros first.
      for (const RecordedLaunch& l : log.launches()) {
        EXPECT_EQ(l.kernel.find("Fill"), std::string::npos) << x.str() << ": " << l.kernel;
      }
    }
  }
}

// ResNet-50's stem max pooling (3 x 3, stride 2, of 64 x 112 x 112) and its global average
// pooling (2048 x 7 x 7), batch 256, both layouts.
TEST(LaunchGeometry, PoolingFillsTheGpuInBothLayouts) {
  for (const MemoryFormat format : {MemoryFormat::kContiguous, MemoryFormat::kChannelsLast}) {
    const Tensor stem = Tensor::empty({256, 64, 112, 112}, DType::kF32, Device::cpu(), format);
    const Tensor last = Tensor::empty({256, 2048, 7, 7}, DType::kF32, Device::cpu(), format);
    LaunchLog log;
    const MaxPoolResult pooled = max_pool_forward(stem, 3, 2, 1);
    max_pool_backward(pooled.y, pooled, stem, 3, 2, 1);
    global_avg_pool_backward(global_avg_pool_forward(last), last);
    expect_fills_the_gpu(log, std::string("pooling, ") + memory_format_name(format));
  }
}

}  // namespace
}  // namespace course
