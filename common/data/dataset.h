// The dataset interface every lab reads through: labelled images decoded on demand, as
// tensors. Implementations: images in memory (Fashion-MNIST, synthetic; memory_images.h) and
// files in class folders (image_folder.h). Decoding libraries stay inside the readers.
#pragma once

#include <cstdint>

#include "common/core/error.h"
#include "common/tensor/tensor.h"

namespace course {

// A sample that cannot be read or decoded; the message names it (its path for files).
class CorruptSampleError : public Error {
 public:
  using Error::Error;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual int64_t channels() const = 0;
  virtual int64_t num_classes() const = 0;
  virtual int64_t label(int64_t index) const = 0;
  // (H, W, channels()) u8 on the CPU, RGB order; throws CorruptSampleError.
  virtual Tensor image(int64_t index) const = 0;
};

}  // namespace course
