// Mini-batches of a labelled image set, ready for a network: shuffled per epoch from a seed
// (the same order in every run), converted from u8 to f32, resized to the requested side and
// normalised ((x / 255 - mean) / std), then placed on the device.
#pragma once

#include <cstdint>
#include <vector>

#include "common/data/fashion_mnist.h"

namespace course {

struct Batch {
  Tensor images;  // (B, C, S, S) f32 on the device
  Tensor labels;  // (B,) i64 on the device
};

struct BatchOptions {
  int64_t batch_size = 128;
  int64_t image_size = 28;  // output side; bilinear resizing when it differs from the data's
  bool shuffle = true;
  bool drop_last = false;
  uint32_t seed = 0;
  float mean = 0.2860f;  // Fashion-MNIST's pixel statistics
  float std = 0.3530f;
};

class ImageBatches {
 public:
  ImageBatches(LabelledImages data, const BatchOptions& options, Device device);

  int64_t size() const;  // batches per epoch
  int64_t samples() const { return data_.labels.numel(); }
  void set_epoch(int64_t epoch);     // reshuffles deterministically from (seed, epoch)
  Batch batch(int64_t index) const;  // the index-th batch of the current epoch

 private:
  LabelledImages data_;
  BatchOptions options_;
  Device device_;
  std::vector<int64_t> order_;
};

// Random images and labels (in pinned host memory, like loaded datasets), for measuring
// throughput without a dataset.
LabelledImages synthetic_images(int64_t count, int64_t channels, int64_t side, int64_t classes,
                                uint32_t seed);

}  // namespace course
