// Labelled images decoded on demand, the input of the DataLoader: in memory (Fashion-MNIST,
// synthetic images) or files in class folders (common/data/image_folder.h).
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <string>

#include "common/data/fashion_mnist.h"

namespace course {

// A sample that cannot be read or decoded; the message names it (its path for files).
class CorruptSampleError : public Error {
 public:
  using Error::Error;
};

class ImageSource {
 public:
  virtual ~ImageSource() = default;
  virtual int64_t size() const = 0;
  virtual int64_t channels() const = 0;
  virtual int64_t num_classes() const = 0;
  virtual int64_t label(int64_t index) const = 0;
  // (H, W, channels()) u8, RGB order; throws CorruptSampleError.
  virtual cv::Mat image(int64_t index) const = 0;
};

// Images already in memory as (N, C, H, W) u8 with (N,) i64 labels.
class MemoryImages : public ImageSource {
 public:
  MemoryImages(LabelledImages data, int64_t num_classes);
  int64_t size() const override { return data_.labels.numel(); }
  int64_t channels() const override { return data_.images.size(1); }
  int64_t num_classes() const override { return num_classes_; }
  int64_t label(int64_t index) const override;
  cv::Mat image(int64_t index) const override;

 private:
  LabelledImages data_;
  int64_t num_classes_;
};

}  // namespace course
