// The throughput model against steps worked out by hand: a 2-layer GPT (h 4, 2 heads, s 8,
// V 16: 592 parameters) on dp 2 x tp 2 x pp 2 of a made-up cluster (4 GPUs a node, peak 1000
// FLOP/s at half efficiency in 1 x 1 tiles on one multiprocessor, so no wave is left part
// empty, 1000 B/s of memory, 100 B/s within a node, 10 across), with and without recomputation,
// a 2-layer Llama, a 2-block ViT, a made-up model of unequal blocks, and a product's last wave;
// CoAtNet's measured workload against its parameter count, the ViT's closed form against the
// measured pieces; Megatron-LM's published rows within 5 points of peak.
#include "common/parallel/planning/throughput_model.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "common/core/error.h"
#include "common/models/coatnet/coatnet.h"
#include "common/parallel/planning/megatron_table.h"
#include "common/parallel/planning/piece_measurement.h"

namespace course::parallel {
namespace {

const Cluster kHandCluster{.gpus_per_node = 4,
                           .peak_flops = 1000,
                           .efficiency = 0.5,
                           .multiprocessors = 1,
                           .tiles = {{1, 1}},
                           .memory_bandwidth = 1000,
                           .intra_node_bandwidth = 100,
                           .inter_node_bandwidth = 10};

// The hand GPT's stages per micro-batch on tp 2: a block's products are 8 x 192 + 2 x 64 x 4 =
// 2,048 multiply-adds a sample, 1,024 a rank, 2,048 flops / 500 = 4.096 s; its memory-bound work
// 22 s h = 704 bytes whole and 4 s 4h + 9 a s^2 = 1,664 cut, 1,536 a rank / 1000 = 1.536 s. The
// logits (8 x 16 x 4, columns cut) 512 flops: 1.024 s, on the last stage. Adding the gradients,
// 3 x 2 B x 592 / 4 / 1000 = 0.888 s.
TEST(ThroughputModel, AStepWorkedOutByHand) {
  StepPlan plan{.model = gpt_workload({"hand", 2, 2, 4, 8, 16}),
                .grid = {.dp = 2, .tp = 2, .pp = 2},
                .global_batch = 8,
                .micro_batch = 1};
  const StepPrediction r = predict_step(plan, kHandCluster);
  EXPECT_EQ(r.micro_batches, 4);      // 8 / (1 x 2)
  EXPECT_DOUBLE_EQ(r.flops, 221184);  // 72 8 8 2 16 (1 + 1/3 + 1/6)
  EXPECT_DOUBLE_EQ(r.hardware_flops, r.flops);
  const double last_stage = 3 * (4.096 + 1.536) + 3 * 1.024 + 0.888;  // 20.856 s
  EXPECT_DOUBLE_EQ(r.compute_s, 4 * last_stage);
  EXPECT_DOUBLE_EQ(r.bubble_s, (2 - 1) * last_stage);
  EXPECT_DOUBLE_EQ(r.tensor_parallel_s, 10.24);  // 4 x 1 layer x 4 x 1/2 x 64 B / 100
  EXPECT_DOUBLE_EQ(r.pipeline_s, 51.2);          // 2 x 4 x 64 B / 10 (stages 4 apart)
  EXPECT_DOUBLE_EQ(r.data_parallel_s, 2.96);     // 1 x 2 B x 592 / 4 / 100
  EXPECT_DOUBLE_EQ(r.step_s, 5 * last_stage + 10.24 + 51.2 + 2.96);
  EXPECT_DOUBLE_EQ(r.memory_bytes, 2368 + 2048 + 288);  // states, 2 x 1 layer x 1024, ends
  EXPECT_NEAR(r.mfu, 221184 / (r.step_s * 8 * 1000), 1e-12);
  // Recomputed: each block's forward again (4 passes), 2 all-reduces more, its hardware flops
  // 2 B x the blocks' 4,096 multiply-adds more; stage 0 keeps 2 micro-batches of its block's
  // bf16 input (2 x 32) and one block's whole set (1,024) while it recomputes.
  plan.recompute = true;
  const StepPrediction again = predict_step(plan, kHandCluster);
  EXPECT_DOUBLE_EQ(again.flops, r.flops);
  EXPECT_DOUBLE_EQ(again.hardware_flops, 221184 + 2 * 8 * 4096);
  EXPECT_DOUBLE_EQ(again.compute_s, 4 * (4 * (4.096 + 1.536) + 3 * 1.024 + 0.888));
  EXPECT_DOUBLE_EQ(again.tensor_parallel_s, 15.36);
  EXPECT_DOUBLE_EQ(again.memory_bytes, 2368 + 2 * 64 + 1024 + 288);
  EXPECT_NEAR(again.hardware_flops_per_gpu, again.hardware_flops / (again.step_s * 8), 1e-9);
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
  // Below the products' efficiency: the memory-bound work and the last waves take time too.
  EXPECT_LT(alone.mfu, Cluster{}.efficiency);
  EXPECT_GT(alone.mfu, Cluster{}.efficiency / 2);
  plan.grid = {.dp = 1, .tp = 3, .pp = 1};  // 16 heads
  EXPECT_THROW(predict_step(plan, {}), Error);
  plan.grid = {.dp = 3, .tp = 1, .pp = 1};  // 8 sequences
  EXPECT_THROW(predict_step(plan, {}), Error);
  plan.grid = {.dp = 1, .tp = 1, .pp = 32};  // 24 layers
  EXPECT_THROW(predict_step(plan, {}), Error);
}

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
  EXPECT_EQ(r.micro_batches, 8);  // 8 / (1 x 1)
  // A rank's 4 tokens halve its products' and memory-bound work, not its parameters.
  const double last_stage = 3 * (4.096 + 1.536) / 2 + 3 * 1.024 / 2 + 0.888;  // 10.872 s
  EXPECT_DOUBLE_EQ(r.compute_s, 8 * last_stage);
  EXPECT_DOUBLE_EQ(r.bubble_s, (2 - 1) * last_stage);
  EXPECT_DOUBLE_EQ(r.tensor_parallel_s, 10.24);  // 4 x 8 x 1/2 x 2 B x 64 / 2 (cp) / 2 (pp) / 100
  EXPECT_DOUBLE_EQ(r.context_parallel_s, 7.68);  // 3 x 1 x 8 x 2 x 2 B x 64 / 2 / 2 / 2 / 100
  EXPECT_DOUBLE_EQ(r.pipeline_s, 51.2);          // 2 x 8 x 2 B x 32 / 2 / 10 (stages 4 apart)
  EXPECT_DOUBLE_EQ(r.data_parallel_s, 2.96);     // over the 2 context ranks: 1 x 2 B x 592 / 4
  EXPECT_DOUBLE_EQ(r.step_s, 9 * last_stage + 10.24 + 7.68 + 51.2 + 2.96);
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
  // A block's 1,160 multiply-adds, 580 a rank: 2.32 s; its 440 bytes whole and 4 x 5 x 16 +
  // 9 x 2 x 25 = 770 cut, 825 a rank: 0.825 s. The ends' 268, not cut: 1.072 s on the last
  // stage; the gradients 3 x 2 B x 603 / 4 / 1000 = 0.9045 s.
  const double last_stage = 3 * (2.32 + 0.825) + 3 * 1.072 + 0.9045;
  EXPECT_DOUBLE_EQ(r.compute_s, 4 * last_stage);
  EXPECT_DOUBLE_EQ(r.bubble_s, last_stage);
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

// One tile more than the multiprocessors hold makes a second wave that takes as long as the first;
// a product too small for a wave of the largest tiles is cut in smaller ones.
TEST(ThroughputModel, AProductsLastWaveRunsAsLongAsAFullOne) {
  const auto one_product = [](double rows, const Cluster& cluster) {
    Workload w{.name = "one product", .sample = "samples"};
    w.blocks.push_back({.products = {{rows, 128, 1000}}});
    return predict_step({.model = w, .grid = {}, .global_batch = 1}, cluster).compute_s;
  };
  const Cluster large{.tiles = {{256, 128}}};  // 108 multiprocessors
  const double one_wave = one_product(256 * 108, large);
  EXPECT_DOUBLE_EQ(one_wave, 3 * 2 * 108.0 * 256 * 128 * 1000 / (large.peak_flops * 0.8));
  EXPECT_DOUBLE_EQ(one_product(256 * 109, large) / one_wave, 2);
  EXPECT_DOUBLE_EQ(one_product(256 * 216, large) / one_wave, 2);
  // 256 x 128: one large tile fills 1 of the 108 slots, eight 64 x 64 ones fill 8.
  const Cluster two_sizes{.tiles = {{256, 128}, {64, 64}}};
  EXPECT_DOUBLE_EQ(one_product(256, large) / one_product(256, two_sizes), 8);
  EXPECT_DOUBLE_EQ(one_product(256 * 108, two_sizes), one_wave);  // a wave: the large tile
}

// Megatron-LM's weak-scaling rows (megatron_table.h), each within 5 points of peak of the TFLOP/s
// per GPU the paper measured.
TEST(ThroughputModel, MegatronsPublishedRowsWithinFivePoints) {
  const Cluster a100;
  for (const MegatronRow& row : megatron_rows()) {
    const StepPrediction r = predict_step(megatron_plan(row), a100);
    EXPECT_NEAR(r.hardware_flops_per_gpu / a100.peak_flops,
                row.published_tflops * 1e12 / a100.peak_flops, 0.05)
        << row.name;
  }
  EXPECT_EQ(megatron_plan(megatron_row("145b")).grid.dp, 24);  // 1536 / (8 x 8)
  EXPECT_THROW(megatron_row("175b"), Error);
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
