// The Vision Transformer: its token layers and a small model against finite differences (both
// memory formats of the patch embedding), its presets' parameter counts against timm's
// ImageNet models and the papers, the built models against the count, and its shape checks.
#include "common/models/vit/vit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/models/models.h"
#include "common/nn/vit_tokens.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/gradcheck.h"
#include "common/testing/random_tensor.h"

namespace course::nn {
namespace {

using testing::check_gradients;
using testing::random_tensor;

using testing::kCpu;

TEST(Vit, PatchTokensMatchFiniteDifferencesInBothFormats) {
  for (MemoryFormat format : {MemoryFormat::kContiguous, MemoryFormat::kChannelsLast}) {
    SCOPED_TRACE(memory_format_name(format));
    PatchTokens tokens(5, kCpu);
    tokens.bias->value = random_tensor({5}, DType::kF32, kCpu, 1).tensor;
    const Tensor x =
        to_memory_format(random_tensor({2, 5, 3, 2}, DType::kF32, kCpu, 2).tensor, format);
    const Tensor y = tokens.forward(x);
    ASSERT_EQ(y.shape(), Shape({2, 6, 5}));
    // Token (h, w) of image n is the pixel's channel vector.
    const Tensor nchw = to_memory_format(x, MemoryFormat::kContiguous);
    const std::vector<float> in = nchw.to_vector<float>(), out = y.to_vector<float>(),
                             bias = tokens.bias->value.to_vector<float>();
    EXPECT_FLOAT_EQ(out[(1 * 6 + 4) * 5 + 3], in[((1 * 5 + 3) * 3 + 2) * 2 + 0] + bias[3]);
    EXPECT_TRUE(check_gradients(tokens, x));
  }
}

TEST(Vit, ClassTokenAndPoolMatchFiniteDifferences) {
  std::mt19937 rng(3);
  ClassToken embed(4, 6, rng, kCpu);
  EXPECT_TRUE(check_gradients(embed, random_tensor({2, 4, 6}, DType::kF32, kCpu, 4).tensor));
  FirstTokenPool pool;
  EXPECT_TRUE(check_gradients(pool, random_tensor({3, 4, 6}, DType::kF32, kCpu, 5).tensor));
}

// 8 px RGB images in 4 px patches (4 tokens and the class token), 2 blocks of 8 channels.
TEST(Vit, SmallModelMatchesFiniteDifferencesThroughEveryParameter) {
  std::mt19937 rng(6);
  const VitConfig config{"vit-test", 8, 4, 2, 2, 8, 0, 3, 5};
  ModulePtr vit = make_vit(config, rng, kCpu);
  const Tensor images = random_tensor({2, 3, 8, 8}, DType::kF32, kCpu, 7).tensor;
  EXPECT_EQ(vit->forward(images).shape(), Shape({2, 5}));
  EXPECT_TRUE(check_gradients(*vit, images, {.samples_per_tensor = 6, .step = 1e-3}));
}

// timm's ImageNet-1k models (vit_tiny/small/base/large_patch16_224, vit_huge_patch14_224)
// hold exactly these; the papers round them to 5.7M, 22M, 86M, 307M (304M with the 1,000-class
// head) and 632M, and ViT-G/14's 1,843M is without its head.
TEST(Vit, ParameterCountsAreThePublishedOnes) {
  EXPECT_EQ(vit_parameter_count(vit_preset("vit-ti16")), 5'717'416);
  EXPECT_EQ(vit_parameter_count(vit_preset("vit-s16")), 22'050'664);
  EXPECT_EQ(vit_parameter_count(vit_preset("vit-b16")), 86'567'656);
  EXPECT_EQ(vit_parameter_count(vit_preset("vit-l16")), 304'326'632);
  EXPECT_EQ(vit_parameter_count(vit_preset("vit-h14")), 632'045'800);
  const VitConfig g = vit_preset("vit-g14");
  const int64_t head = g.channels * g.classes + g.classes;
  EXPECT_NEAR((vit_parameter_count(g) - head) / 1e6, 1843, 0.5);
  EXPECT_THAT(testing::error_of([] { vit_preset("vit-x"); }), ::testing::HasSubstr("vit-b16"));
}

TEST(Vit, BuiltModelsHoldTheCountedParameters) {
  std::mt19937 rng(8);
  for (const char* name : {"vit-micro", "vit-ti16"}) {
    const VitConfig config = vit_preset(name);
    ModulePtr vit = make_vit(config, rng, kCpu);
    EXPECT_EQ(vit->parameter_count(), vit_parameter_count(config)) << name;
  }
  // Through make_model, for the labs' images: Fashion-MNIST's 28 px, CIFAR-10's 32 px.
  for (int64_t side : {28, 32}) {
    ModulePtr vit = make_model(
        {.name = "vit-micro", .in_channels = 1, .num_classes = 10, .image_size = side}, kCpu);
    EXPECT_EQ(vit->forward(zeros({2, 1, side, side})).shape(), Shape({2, 10}));
    const auto names = vit->state().parameters;
    EXPECT_EQ(names.front().first, "stem.patch_embed.proj.weight");
    EXPECT_EQ(names[3].first, "stem.embed.pos_embed");
    EXPECT_EQ(names.back().first, "head.fc.bias");
    EXPECT_EQ(names[3].second->value.size(0), (side / 4) * (side / 4) + 1);
  }
}

TEST(Vit, ShapesThatDoNotFitGetOneMessage) {
  std::mt19937 rng(9);
  EXPECT_THAT(testing::error_of([&] {
                make_vit({"v", 30, 4, 1, 2, 8}, rng, kCpu);
              }),
              ::testing::HasSubstr("its 4-px patches do not tile a 30-px image"));
  EXPECT_THAT(testing::error_of([&] {
                make_vit({"v", 32, 4, 1, 3, 8}, rng, kCpu);
              }),
              ::testing::HasSubstr("8 channels do not split into 3 heads"));
  EXPECT_THAT(testing::error_of([&] { make_model({.name = "vit-micro", .image_size = 30}, kCpu); }),
              ::testing::HasSubstr("do not tile a 30-px image"));
}

}  // namespace
}  // namespace course::nn
