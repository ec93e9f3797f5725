// Where pipelines cut models, against independent references: the cheapest cut against every
// contiguous cut of irregular costs; a GPT's figures against hand-computed ones; CoAtNet's
// activations between blocks against the shapes its design gives (28 px: the stem halves to
// 14, the first MBConv to 7, the tokens 49, the last stage halves them to 9), in both memory
// formats, and its cut by compute against its cut by parameters.
#include "common/parallel/pipeline/stage_split.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>

#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/models/gpt/gpt.h"
#include "common/models/gpt/gpt_stage.h"
#include "common/models/models.h"
#include "common/nn/piece_stages.h"

namespace course::parallel {
namespace {

std::vector<int64_t> sizes_of(const std::vector<nn::StageBounds>& bounds) {
  std::vector<int64_t> sizes;
  for (const nn::StageBounds& b : bounds) sizes.push_back(b.end_block - b.first_block);
  return sizes;
}

// The costliest stage of the cut into `blocks[s]` blocks per stage.
double costliest(const nn::PartCosts& costs, const std::vector<int64_t>& blocks) {
  double worst = 0;
  size_t next = 0;
  for (size_t s = 0; s < blocks.size(); ++s) {
    double stage = (s == 0 ? costs.first : 0) + (s + 1 == blocks.size() ? costs.last : 0);
    for (int64_t b = 0; b < blocks[s]; ++b) stage += costs.blocks[next++];
    worst = std::max(worst, stage);
  }
  return worst;
}

// The smallest costliest stage over every composition of the blocks into p positive parts.
double best_by_enumeration(const nn::PartCosts& costs, int p) {
  const auto n = static_cast<int64_t>(costs.blocks.size());
  double best = std::numeric_limits<double>::infinity();
  std::vector<int64_t> parts(p, 1);
  std::function<void(int, int64_t)> each = [&](int s, int64_t left) {
    if (s == p - 1) {
      if (left < 1) return;
      parts[s] = left;
      best = std::min(best, costliest(costs, parts));
      return;
    }
    for (int64_t k = 1; k < left; ++k) {
      parts[s] = k;
      each(s + 1, left - k);
    }
  };
  each(0, n);
  return best;
}

TEST(StageSplit, CheapestCutIsTheBestContiguousCut) {
  const nn::PartCosts heavy_ends{.first = 9, .blocks = {3, 9, 1, 1, 7, 2, 8, 0.5}, .last = 11};
  const nn::PartCosts light_ends{.first = 0, .blocks = {1, 1, 1, 12, 1, 1, 1, 1}, .last = 0.25};
  for (const nn::PartCosts& costs : {heavy_ends, light_ends}) {
    for (int p = 1; p <= 5; ++p) {
      const std::vector<int64_t> cut = cheapest_cut(costs, p);
      ASSERT_EQ(static_cast<int>(cut.size()), p);
      int64_t total = 0;
      for (const int64_t blocks : cut) {
        EXPECT_GE(blocks, 1);
        total += blocks;
      }
      EXPECT_EQ(total, 8);
      EXPECT_EQ(costliest(costs, cut), best_by_enumeration(costs, p)) << "p " << p;
    }
  }
}

// A large table: the GPT's ends are heavy in parameters, its output layer in multiply-adds.
TEST(StageSplit, GptByLayersParametersAndCompute) {
  const nn::GptConfig c{"pipe", 7, 2, 16, 8, 3000};
  std::mt19937 rng(1);
  nn::Gpt gpt(c, rng, Device::cpu());
  nn::GptStages staged(gpt);
  EXPECT_EQ(sizes_of(split_stages(staged, 3, StageBalance::kLayers)),
            (std::vector<int64_t>{3, 2, 2}));
  const double table = 3000 * 16, block = 12 * 16 * 16 + 13 * 16;
  const nn::PartCosts alone = staged.parameters(1), cut = staged.parameters(3);
  EXPECT_EQ(alone.first, table + 8 * 16);
  EXPECT_EQ(alone.blocks, std::vector<double>(7, block));
  EXPECT_EQ(alone.last, 2 * 16);        // the tied output layer reads the first part's table
  EXPECT_EQ(cut.last, 2 * 16 + table);  // ... or the last stage's own copy of it
  const std::vector<nn::StageBounds> by_parameters =
      split_stages(staged, 3, StageBalance::kParameters);
  EXPECT_EQ(sizes_of(by_parameters), cheapest_cut(cut, 3));
  EXPECT_TRUE(by_parameters.front().first && by_parameters.back().last);
  EXPECT_EQ(by_parameters.back().end_block, c.layers);
  // Per sequence of 8: the output layer's 3000 x 16 x 8 multiply-adds outweigh 14 blocks'.
  const nn::PartCosts work = staged.multiply_adds();
  EXPECT_EQ(work.last, 3000.0 * 16 * 8);
  EXPECT_EQ(work.blocks[0], 12 * 16 * 16 * 8 + 2 * 8 * 8 * 16);
  EXPECT_EQ(sizes_of(split_stages(staged, 3, StageBalance::kCompute)).back(), 1);
  EXPECT_THROW(split_stages(staged, 8, StageBalance::kLayers), Error);
}

nn::ModulePtr coatnet_micro() {
  return nn::make_model({.name = "coatnet-micro", .seed = 3, .image_size = 28}, Device::cpu());
}

TEST(StageSplit, CoatnetActivationsBetweenBlocks) {
  const nn::ModulePtr model = coatnet_micro();
  for (const MemoryFormat format : {MemoryFormat::kContiguous, MemoryFormat::kChannelsLast}) {
    const Tensor sample = to_memory_format(zeros({1, 1, 28, 28}), format);
    nn::PieceStages staged(*model, sample);
    ASSERT_EQ(staged.blocks(), 6);  // 2 MBConv, to_tokens, 3 transformer
    const std::vector<Shape> entering = {{5, 16, 14, 14}, {5, 32, 7, 7}, {5, 48, 7, 7}, {5, 49, 48},
                                         {5, 49, 64},     {5, 49, 64},   {5, 9, 96}};
    const Tensor micro_batch = zeros({5, 1, 28, 28});
    for (int64_t b = 0; b <= staged.blocks(); ++b) {
      const Tensor landing = staged.empty_activation(b, micro_batch);
      EXPECT_EQ(landing.shape(), entering[b]) << "entering block " << b;
      EXPECT_EQ(landing.dtype(), DType::kF32);
      EXPECT_EQ(landing.memory_format(), landing.dim() == 4 ? format : MemoryFormat::kContiguous)
          << "entering block " << b;
    }
    EXPECT_THROW(staged.empty_activation(7, micro_batch), Error);
  }
  EXPECT_TRUE(model->training());  // the sample's forward left the model as it found it
  EXPECT_THROW(nn::PieceStages(*model, zeros({2, 1, 28, 28})), Error);
}

// The early blocks hold few weights and apply them at 196 or 49 positions, the last at 9:
// balanced by compute, the first stage takes fewer blocks than by parameters.
TEST(StageSplit, CoatnetByComputeIsNotByParameters) {
  const nn::ModulePtr model = coatnet_micro();
  nn::PieceStages staged(*model, zeros({1, 1, 28, 28}));
  const nn::PartCosts weights = staged.parameters(2), work = staged.multiply_adds();
  const std::vector<int64_t> by_parameters =
      sizes_of(split_stages(staged, 2, StageBalance::kParameters));
  const std::vector<int64_t> by_compute = sizes_of(split_stages(staged, 2, StageBalance::kCompute));
  EXPECT_EQ(by_parameters, cheapest_cut(weights, 2));
  EXPECT_EQ(by_compute, cheapest_cut(work, 2));
  EXPECT_LT(by_compute.front(), by_parameters.front());
  EXPECT_LT(costliest(work, by_compute), costliest(work, by_parameters));
  // The stem: a 3x3 convolution 1 -> 16 (and its batch norm's 32) applied at 14 x 14, then ...
  EXPECT_GT(work.first, (9 * 16 + 32) * 196.0);
}

// A ViT's head reads the class token: its parameters once; a block its own at each of 50
// tokens, and the attention's 2 x 50^2 x 64.
TEST(StageSplit, VitMultiplyAddsByHand) {
  const nn::ModulePtr model =
      nn::make_model({.name = "vit-micro", .seed = 3, .image_size = 28}, Device::cpu());
  nn::PieceStages staged(*model, zeros({1, 1, 28, 28}));
  const nn::PartCosts weights = staged.parameters(1), work = staged.multiply_adds();
  EXPECT_EQ(weights.last, 2 * 64 + 64 * 10 + 10);
  EXPECT_EQ(work.last, weights.last);
  ASSERT_EQ(work.blocks.size(), 4u);
  EXPECT_EQ(work.blocks[2], weights.blocks[2] * 50 + 2 * 50.0 * 50 * 64);
  EXPECT_EQ(staged.empty_activation(4, zeros({3, 1, 28, 28})).shape(), (Shape{3, 50, 64}));
}

}  // namespace
}  // namespace course::parallel
