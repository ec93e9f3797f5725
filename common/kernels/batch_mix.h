// MixUp and CutMix on the training device: a batch mixed with its flipped self, and the soft
// targets that go with it. Which samples mix how (lambda ~ Beta, the boxes, the modes) is drawn
// on the host by common/data/batch_mix.h; these kernels apply it.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

// images (N, C, H, W) of any floating dtype, NCHW or channels-last; weights (N,) f32 and
// boxes (N, 4) i32 ([y0, y1, x0, x1), empty when y0 == y1) on the images' device. Returns the
// mixed batch in the images' dtype and memory format: inside sample i's box the pixels of sample
// N-1-i, outside weights[i] x_i + (1 - weights[i]) x_{N-1-i}.
Tensor mix_with_flipped(const Tensor& images, const Tensor& weights, const Tensor& boxes);

// labels (N,) i64 in [0, classes), lambdas (N,) f32 on one device: (N, classes) f32 targets
// lambda_i smooth(y_i) + (1 - lambda_i) smooth(y_{N-1-i}), with label smoothing e putting
// 1 - e + e/classes on the class and e/classes on the others.
Tensor mixed_soft_targets(const Tensor& labels, const Tensor& lambdas, int64_t classes,
                          float smoothing);

}  // namespace course
