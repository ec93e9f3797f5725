// MFU's parts: the peak by the GPU's name (variants before the default of the same GPU, none
// for an unknown GPU or the CPU), the summary line's arithmetic, GPT-2's training FLOPs per
// token against llm.c's formula written out by hand (6 N + 12 L C T, N the matrices' weights),
// and the image models' multiply-adds as counted by running them (by hand, and ResNet-50's
// published figure).
#include "common/train/model_flops.h"

#include <gtest/gtest.h>

#include "common/core/error.h"
#include "common/kernels/attention.h"
#include "common/kernels/conv2d.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/gemm.h"
#include "common/kernels/multiply_adds.h"
#include "common/models/gpt/gpt_config.h"
#include "common/models/models.h"
#include "common/parallel/planning/workload.h"
#include "common/train/classifier_step.h"

namespace course::train {
namespace {

TEST(ModelFlops, PeaksByTheGpusName) {
  const auto tflops = [](const std::string& name) {
    const std::optional<PeakFlops> peak = peak_flops(name);
    return peak ? peak->flops_per_second / 1e12 : -1.0;
  };
  EXPECT_DOUBLE_EQ(tflops("NVIDIA H200"), 989.4);
  EXPECT_DOUBLE_EQ(tflops("NVIDIA H100 80GB HBM3"), 989.4);
  EXPECT_DOUBLE_EQ(tflops("NVIDIA H100 PCIe"), 756.0);
  EXPECT_DOUBLE_EQ(tflops("NVIDIA H200 NVL"), 835.0);
  EXPECT_EQ(peak_flops("NVIDIA GH200 480GB")->what, "GH200, dense bf16");
  EXPECT_DOUBLE_EQ(tflops("NVIDIA A100-SXM4-80GB"), 312.0);
  EXPECT_DOUBLE_EQ(tflops("NVIDIA L40S"), 362.1);
  EXPECT_DOUBLE_EQ(tflops("NVIDIA L4"), 121.0);
  EXPECT_DOUBLE_EQ(tflops("Tesla V100-SXM2-16GB"), 125.0);
  EXPECT_EQ(tflops("NVIDIA GeForce RTX 4090"), -1.0);
  EXPECT_EQ(tflops("CPU"), -1.0);
  EXPECT_EQ(tflops("simulated accelerator"), -1.0);
}

TEST(ModelFlops, TheLineSaysTflopsAndMfuPerDevice) {
  // 1,000 units/s of 1 TFLOP each over 2 H200s: 500 TFLOP/s a device, 50.5% of 989.4.
  const std::string h200 = model_flops_line(1000, 1e12, 2, "NVIDIA H200");
  EXPECT_NE(h200.find("500.00 TFLOP/s per device, MFU 50.5% of the H200 SXM, dense bf16 peak "
                      "(989 TFLOP/s)"),
            std::string::npos)
      << h200;
  const std::string cpu = model_flops_line(2000, 5e6, 1, "CPU");
  EXPECT_NE(cpu.find("0.010 TFLOP/s per device (no MFU: no peak figure for the CPU)"),
            std::string::npos)
      << cpu;
}

TEST(ModelFlops, Gpt2PerTokenIsLlmCsFormula) {
  const nn::GptConfig gpt2 = nn::gpt_preset("gpt2");
  const double L = 12, C = 768, T = 1024, V = static_cast<double>(gpt2.vocabulary);
  ASSERT_EQ(gpt2.layers, 12);
  ASSERT_EQ(gpt2.channels, 768);
  ASSERT_EQ(gpt2.context, 1024);
  // Per block: the query/key/value (3 C^2), projection (C^2) and MLP (8 C^2) matrices; the
  // logits' (V C); attention's scores and weighted sum, 2 T C multiply-adds per token a block.
  const double matrices = L * 12 * C * C + V * C;
  const double by_hand = 6 * matrices + 12 * L * C * T;
  const double per_token = training_flops(parallel::gpt_workload(gpt2).multiply_adds) / T;
  EXPECT_NEAR(per_token / by_hand, 1.0, 1e-9) << per_token << " against " << by_hand;
}

// The counter's own arithmetic, by hand: a 3 -> 4 channel 3 x 3 convolution over 8 x 8 (2
// images), a (7, 5) x (5, 3) product, attention of 2 x 5 tokens in 3 heads of 4; nothing is
// counted outside a count, and two counts cannot nest.
TEST(MultiplyAddCount, ConvolutionProductAndAttentionAddTheirs) {
  const Tensor x = zeros({2, 3, 8, 8}), w = zeros({4, 3, 3, 3});
  const Tensor a = zeros({7, 5}), b = zeros({5, 3});
  const Tensor qkv = zeros({2, 5, 3 * 3 * 4});
  conv2d_forward(x, w, {.stride = 1, .padding = 1});  // not counting
  MultiplyAddCount count;
  EXPECT_THROW(MultiplyAddCount nested, Error);
  conv2d_forward(x, w, {.stride = 1, .padding = 1});
  EXPECT_EQ(count.total(), 2.0 * 4 * 8 * 8 * 3 * 9);
  matmul(a, b);
  EXPECT_EQ(count.total(), 2.0 * 4 * 8 * 8 * 3 * 9 + 7 * 3 * 5);
  AttentionSaved saved;
  attention_forward(qkv, 3, true, saved);
  EXPECT_EQ(count.total(), 2.0 * 4 * 8 * 8 * 3 * 9 + 7 * 3 * 5 + 2.0 * 2 * 3 * 5 * 5 * 4);
}

// ResNet-50 at 224 px: 4.09 G multiply-adds per image, the figure torchvision publishes for it
// ("GFLOPS 4.09", convolutions and the classifier); the model is left in training mode with its
// running statistics as they were.
TEST(MultiplyAddCount, ResNet50At224IsItsPublishedFigure) {
  const auto model =
      nn::make_model({.name = "resnet50", .in_channels = 3, .num_classes = 1000, .image_size = 224},
                     Device::cpu());
  TrainingFlags flags;
  flags.image_size = 224;
  const std::vector<float> running_mean_before =
      model->state().buffers.front().second->to_vector<float>();
  const double macs = classifier_multiply_adds(*model, 3, flags, Device::cpu());
  EXPECT_NEAR(macs / 1e9, 4.09, 0.01);
  EXPECT_TRUE(model->training());
  EXPECT_EQ(model->state().buffers.front().second->to_vector<float>(), running_mean_before);
}

// The two ways the labs get an image model's multiply-adds agree: day 4's workload model (which
// plans model parallelism) and the count of days 1-3 (which runs the model), for a Vision
// Transformer and a CoAtNet.
TEST(MultiplyAddCount, RunningAModelCountsWhatItsWorkloadModelSays) {
  for (const char* name : {"vit-micro", "coatnet-micro"}) {
    SCOPED_TRACE(name);
    const nn::ModelConfig config{
        .name = name, .in_channels = 1, .num_classes = 10, .image_size = 28};
    const auto model = nn::make_model(config, Device::cpu());
    TrainingFlags flags;
    flags.image_size = 28;
    const double counted = classifier_multiply_adds(*model, 1, flags, Device::cpu());
    EXPECT_NEAR(counted / parallel::image_workload(config).multiply_adds, 1.0, 0.02);
  }
}

}  // namespace
}  // namespace course::train
