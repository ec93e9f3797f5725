// CoAtNet: its layers and blocks against finite differences in both memory formats (the
// squeeze-excitation, a grouped convolution with a bias, MBConv blocks that keep or halve the
// map, transformer blocks with a relative position bias that keep or pool the grid and widen
// the channels), a small model through every parameter, the presets' parameter counts against
// a built model and against the paper's table, and the shape checks' messages.
#include "common/models/coatnet/coatnet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/models/coatnet/coatnet_blocks.h"
#include "common/models/models.h"
#include "common/nn/conv2d.h"
#include "common/nn/linear.h"
#include "common/nn/relative_attention.h"
#include "common/nn/sequential.h"
#include "common/nn/squeeze_excite.h"
#include "common/nn/token_grid.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/gradcheck.h"
#include "common/testing/random_tensor.h"

namespace course::nn {
namespace {

using testing::check_gradients;
using testing::random_tensor;

using testing::kCpu;
const MemoryFormat kFormats[] = {MemoryFormat::kContiguous, MemoryFormat::kChannelsLast};

Tensor map(const Shape& shape, uint32_t seed, MemoryFormat format) {
  return to_memory_format(random_tensor(shape, DType::kF32, kCpu, seed, -2.0f, 2.0f).tensor,
                          format);
}

TEST(CoatnetLayers, SqueezeExciteAndAGroupedConvolutionMatchFiniteDifferences) {
  for (MemoryFormat format : kFormats) {
    SCOPED_TRACE(memory_format_name(format));
    std::mt19937 rng(1);
    SqueezeExcite se(6, 2, rng, kCpu);
    // Weights of order 1 and small planes, so the gate's path to the input weighs as much as
    // the direct one.
    uint32_t seed = 20;
    for (Parameter* p : se.parameters()) {
      p->value = random_tensor(p->value.shape(), DType::kF32, kCpu, seed++, -1.5f, 1.5f).tensor;
    }
    EXPECT_TRUE(check_gradients(se, map({3, 6, 2, 3}, 2, format)));
    Conv2d grouped(6, 9, 3, {.stride = 2, .padding = 1, .groups = 3}, rng, kCpu, true);
    grouped.bias->value = random_tensor({9}, DType::kF32, kCpu, 3).tensor;
    EXPECT_TRUE(check_gradients(grouped, map({2, 6, 5, 7}, 4, format)));
  }
}

TEST(CoatnetLayers, TokenGridLayersMatchFiniteDifferences) {
  TokenPool2 pool(5, 4);
  const Tensor tokens = random_tensor({2, 20, 3}, DType::kF32, kCpu, 5).tensor;
  EXPECT_EQ(pool.forward(tokens).shape(), Shape({2, 4, 3}));  // 5x4 -> 2x2, the last row dropped
  EXPECT_TRUE(check_gradients(pool, tokens));
  TokenMean mean;
  EXPECT_TRUE(check_gradients(mean, tokens));
  EXPECT_THAT(testing::error_of([&] {
                pool.forward(random_tensor({2, 21, 3}, DType::kF32, kCpu, 1).tensor);
              }),
              ::testing::HasSubstr("built for 5x4 = 20 tokens"));
}

// 2 heads over a 3x4 grid, behind their q|k|v projection.
TEST(CoatnetLayers, RelativePositionAttentionMatchesFiniteDifferences) {
  std::mt19937 rng(6);
  Sequential attention;
  attention.add(std::make_unique<Linear>(8, 24, rng, kCpu), "qkv");
  attention.add(std::make_unique<RelativePositionAttention>(2, 3, 4, rng, kCpu), "core");
  EXPECT_TRUE(check_gradients(attention, random_tensor({2, 12, 8}, DType::kF32, kCpu, 7).tensor));
}

// Same width and map (a residual branch); wider and halved (pooled, projected shortcut).
TEST(CoatnetBlocks, MbconvBlocksMatchFiniteDifferences) {
  for (MemoryFormat format : kFormats) {
    for (const BlockWidths widths : {BlockWidths{8, 8, false}, BlockWidths{8, 12, true}}) {
      SCOPED_TRACE(memory_format_name(format) + std::string(widths.downsample ? " down" : ""));
      std::mt19937 rng(8);
      ModulePtr block = mbconv_block(widths, rng, kCpu);
      const Tensor x = map({3, 8, 6, 4}, 9, format);
      const Tensor y = block->forward(x);
      EXPECT_EQ(y.shape(), widths.downsample ? Shape({3, 12, 3, 2}) : x.shape());
      EXPECT_EQ(y.memory_format(), format);
      EXPECT_TRUE(check_gradients(*block, x, {.samples_per_tensor = 4, .step = 1e-3}));
    }
  }
}

// Over a 4x6 grid: same width, pooled to 2x3 and widened from 8 to 12 channels (3 heads of 4).
TEST(CoatnetBlocks, TransformerBlocksMatchFiniteDifferences) {
  for (const BlockWidths widths : {BlockWidths{8, 8, false}, BlockWidths{8, 12, true}}) {
    SCOPED_TRACE(widths.downsample);
    std::mt19937 rng(10);
    ModulePtr block = relative_transformer_block(widths, 4, 6, 4, rng, kCpu);
    const Tensor x = random_tensor({2, 24, 8}, DType::kF32, kCpu, 11).tensor;
    EXPECT_EQ(block->forward(x).shape(), Shape({2, widths.downsample ? 6 : 24, widths.out}));
    EXPECT_TRUE(check_gradients(*block, x, {.samples_per_tensor = 4, .step = 1e-3}));
  }
}

// 16 px RGB images: stem to 8x8, MBConv to 4x4, a transformer stage at 4x4, one pooling to 2x2.
CoatnetConfig small_config() {
  using S = CoatnetStage;
  return {"coatnet-test", 16, 4, {S{false, 1, 8}, S{true, 1, 8, false}, S{true, 1, 12}}, 3, 5, 4};
}

TEST(Coatnet, SmallModelMatchesFiniteDifferencesThroughEveryParameter) {
  for (MemoryFormat format : kFormats) {
    SCOPED_TRACE(memory_format_name(format));
    std::mt19937 rng(12);
    ModulePtr net = make_coatnet(small_config(), rng, kCpu);
    const Tensor images = map({3, 3, 16, 16}, 13, format);
    EXPECT_EQ(net->forward(images).shape(), Shape({3, 5}));
    EXPECT_EQ(net->parameter_count(), coatnet_parameter_count(small_config()));
    EXPECT_TRUE(check_gradients(*net, images, {.samples_per_tensor = 3, .step = 1e-3}));
  }
}

TEST(Coatnet, BuiltModelsHoldTheCountedParameters) {
  std::mt19937 rng(14);
  for (const char* name : {"coatnet-micro", "coatnet-0"}) {
    ModulePtr net = make_coatnet(coatnet_preset(name), rng, kCpu);
    EXPECT_EQ(net->parameter_count(), coatnet_parameter_count(coatnet_preset(name))) << name;
  }
  ModulePtr micro =
      make_model({.name = "coatnet-micro", .in_channels = 1, .num_classes = 10}, kCpu);
  EXPECT_EQ(micro->forward(zeros({2, 1, 28, 28})).shape(), Shape({2, 10}));
  const auto parameters = micro->state().parameters;
  EXPECT_EQ(parameters.front().first, "stem.conv1.weight");
  EXPECT_EQ(parameters.back().first, "head.fc.bias");
  // Its pieces by name: the blocks' own count; a name it lacks lists the ones it has.
  EXPECT_EQ(micro->child("blocks").children().size(), 6u);
  EXPECT_THAT(testing::error_of([&] { micro->child("block"); }),
              ::testing::HasSubstr("no child named block among this module's children (stem, "
                                   "blocks, head)"));
}

// Dai et al. 2021, Table 3 and Table 14, at 224 px with 1,000 classes: within the rounding of
// the printed figure (1%) for every preset but CoAtNet-6, for which the table's own widths and
// depths give 1.349B against the printed 1.47B (its 42 transformer blocks of 1,536 alone are
// 1.19B); ours is pinned below so a change of the blocks shows.
TEST(Coatnet, ParameterCountsAreThePapers) {
  const std::pair<const char*, double> published[] = {
      {"coatnet-0", 25e6},  {"coatnet-1", 42e6},  {"coatnet-2", 75e6},  {"coatnet-3", 168e6},
      {"coatnet-4", 275e6}, {"coatnet-5", 688e6}, {"coatnet-7", 2.44e9}};
  for (const auto& [name, count] : published) {
    EXPECT_NEAR(coatnet_parameter_count(coatnet_preset(name)) / count, 1.0, 0.01) << name;
  }
  EXPECT_NEAR(coatnet_parameter_count(coatnet_preset("coatnet-6")) / 1e9, 1.349, 0.001);
  EXPECT_THAT(testing::error_of([] { coatnet_preset("coatnet-9"); }),
              ::testing::HasSubstr("coatnet-7"));
}

TEST(Coatnet, ShapesThatDoNotFitGetOneMessage) {
  std::mt19937 rng(15);
  CoatnetConfig odd = small_config();
  odd.image = 12;  // stem to 6, MBConv to 3, then a transformer pooling: fine; 10 is not
  EXPECT_NO_THROW(make_coatnet(odd, rng, kCpu));
  odd.image = 10;
  EXPECT_THAT(testing::error_of([&] { make_coatnet(odd, rng, kCpu); }),
              ::testing::HasSubstr("an MBConv stage halves a 5x5 map, which needs an even side"));
  CoatnetConfig heads = small_config();
  heads.head_dim = 5;
  EXPECT_THAT(testing::error_of([&] { make_coatnet(heads, rng, kCpu); }),
              ::testing::HasSubstr("8 channels does not split into heads of 5"));
  EXPECT_THAT(
      testing::error_of([&] { make_model({.name = "coatnet-micro", .image_size = 3}, kCpu); }),
      ::testing::HasSubstr("too small for its stages"));
  EXPECT_EQ(min_image_size("coatnet-micro"), 7);  // stem to 4, MBConv to 2, pooled to 1
  EXPECT_THAT(testing::error_of([&] {
                make_coatnet({"c", 16, 4, {CoatnetStage{true, 1, 8}, CoatnetStage{false, 1, 8}}},
                             rng, kCpu);
              }),
              ::testing::HasSubstr("an MBConv stage after a transformer stage"));
}

}  // namespace
}  // namespace course::nn
