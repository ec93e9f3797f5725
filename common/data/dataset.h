// The dataset interface every lab reads through: labelled images decoded on demand, as
// tensors. Implementations: images in memory (Fashion-MNIST, synthetic; memory_images.h) and
// files in class folders (image_folder.h). Decoding libraries stay inside the readers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
  // The sample's stored JPEG bytes and a name for messages (its path, or shard or file and
  // index), for decoding elsewhere than image() does (on a GPU, device_decode.h); nothing when
  // the dataset holds its images decoded, or this one is not a JPEG. Throws CorruptSampleError
  // when the bytes cannot be read.
  struct Encoded {
    std::vector<uint8_t> bytes;
    std::string name;
  };
  virtual std::optional<Encoded> encoded(int64_t /*index*/) const { return std::nullopt; }
  // Whether encoded() can give anything: the samples are stored as files' bytes.
  virtual bool stores_encoded() const { return false; }
};

}  // namespace course
