// Random labelled images, for measuring throughput without a dataset (--synthetic N).
#pragma once

#include <cstdint>

#include "common/data/fashion_mnist.h"

namespace course {

// `count` images of (channels, side, side) u8 and labels in [0, classes), in pinned host
// memory like loaded datasets, the same for the same seed.
LabelledImages synthetic_images(int64_t count, int64_t channels, int64_t side, int64_t classes,
                                uint32_t seed);

}  // namespace course
