// A Dataset of images already in memory: Fashion-MNIST and synthetic images.
#pragma once

#include "common/data/dataset.h"
#include "common/data/fashion_mnist.h"

namespace course {

// (N, C, H, W) u8 images with (N,) i64 labels in [0, num_classes).
class MemoryImages : public Dataset {
 public:
  MemoryImages(LabelledImages data, int64_t num_classes);
  int64_t size() const override { return data_.labels.numel(); }
  int64_t channels() const override { return data_.images.size(1); }
  int64_t num_classes() const override { return num_classes_; }
  int64_t label(int64_t index) const override;
  Tensor image(int64_t index) const override;

 private:
  LabelledImages data_;
  int64_t num_classes_;
};

}  // namespace course
