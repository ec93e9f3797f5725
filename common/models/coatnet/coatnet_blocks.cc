// CoAtNet's blocks, assembled from the layers of common/nn.
#include "common/models/coatnet/coatnet_blocks.h"

#include "common/kernels/elementwise.h"
#include "common/nn/activation.h"
#include "common/nn/batch_norm.h"
#include "common/nn/branch_sum.h"
#include "common/nn/conv2d.h"
#include "common/nn/init.h"
#include "common/nn/layer_norm.h"
#include "common/nn/linear.h"
#include "common/nn/pooling.h"
#include "common/nn/relative_attention.h"
#include "common/nn/residual_branch.h"
#include "common/nn/squeeze_excite.h"
#include "common/nn/token_grid.h"

namespace course::nn {

namespace {

constexpr int64_t kExpansion = 4;  // MBConv's inverted bottleneck and the MLP's width

std::unique_ptr<Linear> linear(int64_t in, int64_t out, std::mt19937& rng, Device device,
                               LinearEpilogue epilogue = LinearEpilogue::kBias) {
  return std::make_unique<Linear>(normal({out, in}, 0.02f, rng, device),
                                  zeros({out}, DType::kF32, device), epilogue);
}

std::unique_ptr<Conv2d> conv(int64_t in, int64_t out, int64_t kernel, Conv2dShape shape,
                             bool with_bias, std::mt19937& rng, Device device) {
  return std::make_unique<Conv2d>(in, out, kernel, shape, rng, device, with_bias);
}

// The block with its shortcut: a residual branch where the shape stays, else the pooling and
// projection (from `pool` and `project`, each null where not needed) beside it.
ModulePtr with_shortcut(ModulePtr main, ModulePtr pool, ModulePtr project) {
  if (!pool && !project) return std::make_unique<ResidualBranch>(std::move(main));
  auto shortcut = std::make_unique<Sequential>();
  if (pool) shortcut->add(std::move(pool), "pool");
  if (project) shortcut->add(std::move(project), "project");
  return std::make_unique<BranchSum>(std::move(main), std::move(shortcut));
}

}  // namespace

ModulePtr mbconv_block(BlockWidths b, std::mt19937& rng, Device device) {
  const int64_t hidden = kExpansion * b.out, reduced = std::max<int64_t>(1, b.in / 4);
  auto main = std::make_unique<Sequential>();
  main->add(std::make_unique<BatchNorm2d>(b.in, device), "norm");
  main->add(conv(b.in, hidden, 1, {}, false, rng, device), "expand");
  main->add(std::make_unique<BatchNorm2d>(hidden, device), "expand_norm");
  main->add(std::make_unique<GELU>());
  const Conv2dShape depthwise{.stride = b.downsample ? 2 : 1, .padding = 1, .groups = hidden};
  main->add(conv(hidden, hidden, 3, depthwise, false, rng, device), "depthwise");
  main->add(std::make_unique<BatchNorm2d>(hidden, device), "depthwise_norm");
  main->add(std::make_unique<GELU>());
  main->add(std::make_unique<SqueezeExcite>(hidden, reduced, rng, device), "se");
  main->add(conv(hidden, b.out, 1, {}, true, rng, device), "project");
  return with_shortcut(std::move(main), b.downsample ? std::make_unique<AvgPool2d>() : nullptr,
                       b.in != b.out ? conv(b.in, b.out, 1, {}, true, rng, device) : nullptr);
}

ModulePtr relative_transformer_block(BlockWidths b, int64_t h, int64_t w, int64_t head_dim,
                                     std::mt19937& rng, Device device) {
  COURSE_CHECK(head_dim > 0 && b.out % head_dim == 0, "a transformer block of width ", b.out,
               " does not split into heads of ", head_dim);
  const int64_t grid_h = b.downsample ? h / 2 : h, grid_w = b.downsample ? w / 2 : w;
  auto main = std::make_unique<Sequential>();
  main->add(std::make_unique<LayerNorm>(b.in, device), "norm");
  if (b.downsample) main->add(std::make_unique<TokenPool2>(h, w), "pool");
  main->add(linear(b.in, 3 * b.out, rng, device), "qkv");
  main->add(
      std::make_unique<RelativePositionAttention>(b.out / head_dim, grid_h, grid_w, rng, device),
      "core");
  main->add(linear(b.out, b.out, rng, device), "proj");

  auto feed_forward = std::make_unique<Sequential>();
  feed_forward->add(std::make_unique<LayerNorm>(b.out, device), "norm");
  feed_forward->add(linear(b.out, kExpansion * b.out, rng, device, LinearEpilogue::kBiasGelu),
                    "fc1");  // GELU in its epilogue
  feed_forward->add(linear(kExpansion * b.out, b.out, rng, device), "fc2");

  auto block = std::make_unique<Sequential>();
  block->add(
      with_shortcut(std::move(main), b.downsample ? std::make_unique<TokenPool2>(h, w) : nullptr,
                    b.in != b.out ? linear(b.in, b.out, rng, device) : nullptr),
      "attention");
  block->add(std::make_unique<ResidualBranch>(std::move(feed_forward)), "feed_forward");
  return block;
}

ModulePtr coatnet_stem(int64_t in_channels, int64_t width, std::mt19937& rng, Device device) {
  auto stem = std::make_unique<Sequential>();
  stem->add(conv(in_channels, width, 3, {.stride = 2, .padding = 1}, false, rng, device), "conv1");
  stem->add(std::make_unique<BatchNorm2d>(width, device), "norm1");
  stem->add(std::make_unique<GELU>());
  stem->add(conv(width, width, 3, {.padding = 1}, true, rng, device), "conv2");
  return stem;
}

ModulePtr coatnet_head(int64_t width, int64_t classes, std::mt19937& rng, Device device) {
  auto head = std::make_unique<Sequential>();
  head->add(std::make_unique<TokenMean>());
  head->add(std::make_unique<LayerNorm>(width, device), "norm");
  head->add(linear(width, width, rng, device), "pre_logits");
  head->add(std::make_unique<Tanh>());
  head->add(linear(width, classes, rng, device), "fc");
  return head;
}

}  // namespace course::nn
