// The throughput model against steps worked out by hand: a 2-layer GPT (h 4, 2 heads, s 8,
// V 16: 592 parameters) on dp 2 x tp 2 x pp 2 of a made-up cluster (4 GPUs a node, peak 1000
// FLOP/s at half efficiency, 100 B/s within a node, 10 across), a 2-layer Llama, a 2-block ViT,
// and a made-up model of unequal blocks; CoAtNet's measured workload against its parameter
// count, the ViT's closed form against the measured pieces.
#include "common/parallel/planning/throughput_model.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "common/core/error.h"
#include "common/models/coatnet/coatnet.h"
#include "common/parallel/planning/piece_measurement.h"

namespace course::parallel {
namespace {

TEST(ThroughputModel, AStepWorkedOutByHand) {
  const StepPlan plan{.model = gpt_workload({"hand", 2, 2, 4, 8, 16}),
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
  StepPlan plan{.model = gpt_workload(
                    {"hand-llama", 2, 4, 8, 8, 16, nn::DecoderFamily::kLlama, 2, 12, true, 10.0f}),
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
  StepPlan plan{.model = gpt_workload(nn::gpt_preset("gpt-1.3b")), .grid = {}, .global_batch = 8};
  const StepPrediction alone = predict_step(plan, {});
  EXPECT_EQ(alone.bubble_s + alone.tensor_parallel_s + alone.pipeline_s + alone.data_parallel_s, 0);
  EXPECT_NEAR(alone.mfu, Cluster{}.efficiency, 1e-12);
  plan.grid = {.dp = 1, .tp = 3, .pp = 1};  // 16 heads
  EXPECT_THROW(predict_step(plan, {}), Error);
  plan.grid = {.dp = 3, .tp = 1, .pp = 1};  // 8 sequences
  EXPECT_THROW(predict_step(plan, {}), Error);
  plan.grid = {.dp = 1, .tp = 1, .pp = 32};  // 24 layers
  EXPECT_THROW(predict_step(plan, {}), Error);
}

const Cluster kHandCluster{.gpus_per_node = 4,
                           .peak_flops = 1000,
                           .efficiency = 0.5,
                           .intra_node_bandwidth = 100,
                           .inter_node_bandwidth = 10};

// AStepWorkedOutByHand's GPT on 4D: dp 1 x cp 2 x tp 2 x pp 2. Each rank holds 4 of a window's 8
// tokens, so its tensor-parallel all-reduces, pipeline sends and activations halve; the ring passes
// its keys and values 3 (c - 1) times per block and micro-batch; the gradients are averaged over
// the 2 context ranks.
TEST(ThroughputModel, AFourDimensionalStepWorkedOutByHand) {
  const StepPlan plan{.model = gpt_workload({"hand", 2, 2, 4, 8, 16}),
                      .grid = {.dp = 1, .tp = 2, .pp = 2, .cp = 2},
                      .global_batch = 8,
                      .micro_batch = 1};
  const StepPrediction r = predict_step(plan, kHandCluster);
  EXPECT_EQ(r.micro_batches, 8);                 // 8 / (1 x 1)
  EXPECT_DOUBLE_EQ(r.compute_s, 55.296);         // the same flops over the same 8 GPUs
  EXPECT_DOUBLE_EQ(r.bubble_s, 6.912);           // x (2 - 1) / 8
  EXPECT_DOUBLE_EQ(r.tensor_parallel_s, 10.24);  // 4 x 8 x 1/2 x 2 B x 64 / 2 (cp) / 2 (pp) / 100
  EXPECT_DOUBLE_EQ(r.context_parallel_s, 7.68);  // 3 x 1 x 8 x 2 x 2 B x 64 / 2 / 2 / 2 / 100
  EXPECT_DOUBLE_EQ(r.pipeline_s, 51.2);          // 2 x 8 x 2 B x 32 / 2 / 10 (stages 4 apart)
  EXPECT_DOUBLE_EQ(r.data_parallel_s, 2.96);     // over the 2 context ranks: 1 x 2 B x 592 / 4
  EXPECT_DOUBLE_EQ(r.step_s, 134.288);
  EXPECT_DOUBLE_EQ(r.memory_bytes, 2368 + 1024 + 144);  // states, 2 x 1 layer x 512, ends / 2
  // A window that does not cut into 2 cp chunks, and images, are refused.
  StepPlan misfit = plan;
  misfit.grid = {.dp = 1, .tp = 1, .pp = 1, .cp = 8};
  EXPECT_NE(grid_misfit(misfit).find("does not cut into 2 x cp chunks"), std::string::npos);
  misfit.model = vit_workload(nn::vit_config({.name = "vit-micro"}));
  misfit.grid = {.dp = 1, .tp = 1, .pp = 1, .cp = 2};
  EXPECT_NE(grid_misfit(misfit).find("not windows of tokens"), std::string::npos);
}

// A ViT of 8 px images in 4 px patches (s = 5 tokens with the class token), 2 blocks of h 4,
// 2 heads and an MLP of 16, 1 channel in, 3 classes: 603 parameters.
TEST(ThroughputModel, AVitStepWorkedOutByHand) {
  const nn::VitConfig vit{.name = "hand-vit",
                          .image = 8,
                          .patch = 4,
                          .layers = 2,
                          .heads = 2,
                          .channels = 4,
                          .in_channels = 1,
                          .classes = 3};
  const StepPlan plan{.model = vit_workload(vit),
                      .grid = {.dp = 2, .tp = 2, .pp = 2},
                      .global_batch = 8,
                      .micro_batch = 1};
  EXPECT_DOUBLE_EQ(plan.model.parameters, 603);
  // The patches 64 pixels x 4, the blocks 2 x (5 x (4 h^2 + 2 h F) + 2 s^2 h), the head 4 x 3.
  EXPECT_DOUBLE_EQ(plan.model.multiply_adds, 256 + 2 * (5 * 192 + 200) + 12);
  const StepPrediction r = predict_step(plan, kHandCluster);
  EXPECT_EQ(r.micro_batches, 4);
  EXPECT_DOUBLE_EQ(r.flops, 6 * 8 * 2588);
  EXPECT_DOUBLE_EQ(r.compute_s, 31.056);
  EXPECT_DOUBLE_EQ(r.bubble_s, 7.764);
  EXPECT_DOUBLE_EQ(r.tensor_parallel_s, 6.4);  // 4 x 4 x 1/2 x 2 B x (2 x 20 / 2) / 100
  EXPECT_DOUBLE_EQ(r.pipeline_s, 32);          // 2 x 4 x 2 B x 20 / 10
  EXPECT_DOUBLE_EQ(r.data_parallel_s, 3.015);  // 1 x 2 B x 603 / 4 / 100
  // States 16 x 603 / 4; stage 0 holds 2 micro-batches of a block keeping 10 s h whole and
  // s h (8 + 16) + 5 a s^2 = 730 cut over 2; the ends the image (2 B x 64), s h, 4 x 3 logits.
  EXPECT_DOUBLE_EQ(r.memory_bytes, 2412 + 2 * (200 + 730 / 2.0) + 160);
}

// Blocks keeping 100, 10, 10, 10, 10 bytes a sample, handing on 7, 3, 5, 3, 1 elements, on
// 2 stages of 3 and 2 blocks: stage 0 holds the most; its last block's 5 elements cross.
TEST(ThroughputModel, UnequalBlocksWorkedOutByHand) {
  Workload w{.name = "unequal", .sample = "samples", .parameters = 40, .multiply_adds = 1000};
  for (const auto& [saved, out] :
       std::vector<std::pair<double, double>>{{100, 7}, {10, 3}, {10, 5}, {10, 3}, {10, 1}}) {
    w.blocks.push_back({.output_elements = out, .saved_whole_bytes = saved});
  }
  w.ends.saved_whole_bytes = 6;
  const StepPrediction r = predict_step(
      {.model = w, .grid = {.dp = 1, .tp = 1, .pp = 2}, .global_batch = 4, .micro_batch = 2},
      kHandCluster);
  EXPECT_EQ(r.micro_batches, 2);
  EXPECT_DOUBLE_EQ(r.pipeline_s, 2 * 2 * 2 * 2 * 5 / 100.0);  // m, bf16, b, 5 elements
  // 16 x 40 / 2; stage 0: 2 in flight x b 2 x 120; the ends b x 6.
  EXPECT_DOUBLE_EQ(r.memory_bytes, 320 + 2 * 2 * 120 + 2 * 6);
  // The heavy block on the last stage, which holds one micro-batch: 1 x 2 x 110 against
  // stage 0's 2 x 2 x 30.
  w.blocks[0].saved_whole_bytes = 10;
  w.blocks[3].saved_whole_bytes = 100;
  EXPECT_DOUBLE_EQ(
      predict_step(
          {.model = w, .grid = {.dp = 1, .tp = 1, .pp = 2}, .global_batch = 4, .micro_batch = 2},
          kHandCluster)
          .memory_bytes,
      320 + 2 * 110 + 2 * 6);
  EXPECT_THROW(predict_step({.model = w, .grid = {.dp = 1, .tp = 2, .pp = 1}, .global_batch = 4},
                            kHandCluster),
               Error);  // blocks not cut over tp
}

// CoAtNet's workload, measured piece by piece at its own size, counts its parameters as the
// paper's formula does; the ViT's closed-form multiply-adds are within 5% of the ones counted
// from its built pieces (which charge the position table and biases at every token too).
TEST(ThroughputModel, TheImageModelsWorkloads) {
  const Workload coatnet = image_workload(nn::preset_model_config("coatnet-0"));
  EXPECT_DOUBLE_EQ(
      coatnet.parameters,
      static_cast<double>(nn::coatnet_parameter_count(nn::coatnet_preset("coatnet-0"))));
  EXPECT_EQ(coatnet.heads, 0);
  EXPECT_GT(coatnet.multiply_adds, 0);
  const nn::ModelConfig micro{.name = "vit-micro", .in_channels = 1, .image_size = 28};
  const MeasuredModel pieces = measure_pieces(micro, 1, DType::kF32);
  double counted = 0;
  for (const PieceFigures& piece : pieces.pieces) counted += piece.multiply_adds;
  EXPECT_NEAR(image_workload(micro).multiply_adds / counted, 1.0, 0.05);
}

}  // namespace
}  // namespace course::parallel
