// Where the kernels' tests assert that cuDNN's graphs ran: on a shape the cuDNN frontend's own
// samples cover (16-bit, channels or widths a multiple of 8), they must run; on any other, cuDNN
// may have an engine or not, so either all of them ran or none did (the course's kernels, said
// once). The values are checked against the reference either way.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "common/kernels/plan_cache.h"
#include "common/tensor/dtype.h"

namespace course::testing {

// Whether the frontend's samples cover a norm over `width` values a row (or channels) in `dtype`.
inline bool cudnn_samples_cover(DType dtype, int64_t width) {
  return (dtype == DType::kBF16 || dtype == DType::kF16) && width % 8 == 0;
}

// `ran` of the `graphs` a call makes on a GPU, by what cudnn_samples_cover says of its shape.
inline void expect_cudnn_graphs(bool covered, int64_t ran, int64_t graphs) {
  if (!cudnn_graphs_compiled()) return;
  if (covered) {
    EXPECT_EQ(ran, graphs) << "cuDNN's graphs, on a shape the frontend's samples cover";
  } else {
    EXPECT_TRUE(ran == 0 || ran == graphs) << ran << " of the " << graphs << " graphs ran";
  }
}

}  // namespace course::testing
