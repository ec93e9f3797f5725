// The blocks of CoAtNet (Dai et al. 2021, "CoAtNet: Marrying Convolution and Attention for All
// Data Sizes"), pre-normalised, each a main path plus a shortcut:
//   MBConv (stages 1-2, and 3 of CoAtNet-6/7) on (N, C, H, W) maps in either memory format:
//     BatchNorm -> 1x1 expansion to 4x the output width -> BatchNorm, GELU -> depthwise 3x3
//     (stride 2 when downsampling) -> BatchNorm, GELU -> squeeze-excitation (a quarter of the
//     input width) -> 1x1 projection with a bias;
//   the transformer block (the last stages) on (N, h w, C) tokens: LayerNorm -> (2x2 pooling
//     when downsampling) -> q|k|v -> attention with a relative position bias -> projection,
//     then a pre-LN GELU MLP of 4x the width as its own residual branch.
// A shortcut is the identity where the shape stays, else 2x2 average pooling where the block
// downsamples and a 1x1 projection with a bias where the width changes (eq. 4-5 of the paper).
#pragma once

#include <cstdint>
#include <random>

#include "common/nn/module.h"

namespace course::nn {

struct BlockWidths {
  int64_t in, out;
  bool downsample;
};

// Names: norm, expand, expand_norm, depthwise, depthwise_norm, se.{fc1, fc2}, project; under
// main. with shortcut.project beside them where the shape changes.
ModulePtr mbconv_block(BlockWidths widths, std::mt19937& rng, Device device);

// Over tokens of an h x w grid (before any pooling); out / head_dim heads. Names:
// attention.{norm, qkv, core.relative_position_table, proj} (attention.main.* with
// attention.shortcut.project where the shape changes), feed_forward.{norm, fc1, fc2}.
ModulePtr relative_transformer_block(BlockWidths widths, int64_t h, int64_t w, int64_t head_dim,
                                     std::mt19937& rng, Device device);

// Two 3x3 convolutions, the first of stride 2 (BatchNorm and GELU between, a bias after the
// second). Names: conv1, norm1, conv2.
ModulePtr coatnet_stem(int64_t in_channels, int64_t width, std::mt19937& rng, Device device);

// Token mean -> LayerNorm -> pre-logits (a width x width layer, tanh) -> classes. Names: norm,
// pre_logits, fc.
ModulePtr coatnet_head(int64_t width, int64_t classes, std::mt19937& rng, Device device);

}  // namespace course::nn
