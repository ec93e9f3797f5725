// The throughput model against steps worked out by hand: a 2-layer GPT (h 4, 2 heads, s 8,
// V 16: 592 parameters) on dp 2 x tp 2 x pp 2 of a made-up cluster (4 GPUs a node, peak 1000
// FLOP/s at half efficiency, 100 B/s within a node, 10 across), and a 2-layer Llama.
#include "common/parallel/throughput_model.h"

#include <gtest/gtest.h>

#include "common/core/error.h"

namespace course::parallel {
namespace {

TEST(ThroughputModel, AStepWorkedOutByHand) {
  const StepPlan plan{.model = {"hand", 2, 2, 4, 8, 16},
                      .grid = {.dp = 2, .tp = 2, .pp = 2},
                      .global_batch = 8,
                      .micro_batch = 1};
  const Cluster cluster{.gpus_per_node = 4,
                        .peak_flops = 1000,
                        .efficiency = 0.5,
                        .intra_node_bandwidth = 100,
                        .inter_node_bandwidth = 10};
  const StepPrediction r = predict_step(plan, cluster);
  EXPECT_EQ(r.micro_batches, 4);                 // 8 / (1 x 2)
  EXPECT_DOUBLE_EQ(r.flops, 221184);             // 72 8 8 2 16 (1 + 1/3 + 1/6)
  EXPECT_DOUBLE_EQ(r.compute_s, 55.296);         // / (8 x 1000 x 0.5)
  EXPECT_DOUBLE_EQ(r.bubble_s, 13.824);          // x (2 - 1) / 4
  EXPECT_DOUBLE_EQ(r.tensor_parallel_s, 10.24);  // 4 x 1 layer x 4 x 1/2 x 64 B / 100
  EXPECT_DOUBLE_EQ(r.pipeline_s, 51.2);          // 2 x 4 x 64 B / 10 (stages 4 apart)
  EXPECT_DOUBLE_EQ(r.data_parallel_s, 2.96);     // 1 x 2 B x 592 / 4 / 100
  EXPECT_DOUBLE_EQ(r.step_s, 133.52);
  EXPECT_DOUBLE_EQ(r.memory_bytes, 2368 + 2048 + 288);  // states, 2 x 1 layer x 1024, ends
  EXPECT_NEAR(r.mfu, 221184 / (133.52 * 8 * 1000), 1e-12);
}

// A 2-layer Llama (h 8, 4 query heads over 2 key/value heads of 2, F 12, s 8, V 16 tied: 1,128
// parameters) on the same grid: the flops from its weight matrices, its SwiGLU's activations.
TEST(ThroughputModel, ALlamaStepWorkedOutByHand) {
  StepPlan plan{
      .model = {"hand-llama", 2, 4, 8, 8, 16, nn::DecoderFamily::kLlama, 2, 12, true, 10.0f},
      .grid = {.dp = 2, .tp = 2, .pp = 2},
      .global_batch = 8,
      .micro_batch = 1};
  const StepPrediction r = predict_step(plan, {});
  // Matrices a block: q and o 2 x 8 x 8, k and v 2 x 8 x 4, gate, up and down 3 x 8 x 12: 480.
  // 6 B s (L 480 + V h) + 12 B s^2 L h = 384 x 1,088 + 98,304.
  EXPECT_DOUBLE_EQ(r.flops, 516096);
  // 16 x 1,128 / 4 states; 2 micro-batches in flight x 1 layer x s b h (10 + (8 + 9) / 2 +
  // 5 a s / h t), the MLP's 9 = 2 B x (24 + 12) / 8; the ends s b (h + 4 V / t).
  EXPECT_DOUBLE_EQ(r.memory_bytes, 4512 + 2 * 1824 + 320);
  plan.grid = {.dp = 2, .tp = 4, .pp = 1};  // 4 query heads split, 2 key/value heads do not
  EXPECT_THROW(predict_step(plan, {}), Error);
}

TEST(ThroughputModel, OneGpuCommunicatesNothingAndBadGridsAreRefused) {
  StepPlan plan{.model = nn::gpt_preset("gpt-1.3b"), .grid = {}, .global_batch = 8};
  const StepPrediction alone = predict_step(plan, {});
  EXPECT_EQ(alone.bubble_s + alone.tensor_parallel_s + alone.pipeline_s + alone.data_parallel_s, 0);
  EXPECT_NEAR(alone.mfu, Cluster{}.efficiency, 1e-12);
  plan.grid = {.dp = 1, .tp = 3, .pp = 1};  // 16 heads
  EXPECT_THROW(predict_step(plan, {}), Error);
  plan.grid = {.dp = 3, .tp = 1, .pp = 1};  // 8 sequences
  EXPECT_THROW(predict_step(plan, {}), Error);
}

}  // namespace
}  // namespace course::parallel
