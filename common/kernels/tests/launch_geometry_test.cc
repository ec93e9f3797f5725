// The GPU launch grids of hand-written kernels, checked on the CPU (launch_plan.h): the planning
// rule itself, and the launches of the kernels reshaped for a GPU, called (and logged, not run)
// on tensors of the course's large shapes: GPT-2 124M at batch 8 x 1024 (8192 rows of 768
// channels, MLP 3072) and ResNet-50's classifier at batch 256. Every launch that moves at least
// 2^20 elements must fill an H100's 132 SMs twice.
#include <gtest/gtest.h>

#include "common/kernels/launch_plan.h"
#include "common/kernels/layer_norm.h"
#include "common/kernels/linear.h"

namespace course {
namespace {

constexpr int64_t kHeavy = int64_t{1} << 20;

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
    if (l.kernel.find("LayerNormParamTerms") == std::string::npos) continue;
    ++column_passes;
    EXPECT_GE(l.plan.blocks, 2 * kReferenceSms) << l.kernel;
  }
  EXPECT_EQ(column_passes, 1);
}

}  // namespace
}  // namespace course
