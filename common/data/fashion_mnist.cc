// Fashion-MNIST from its IDX files.
#include "common/data/fashion_mnist.h"

#include <filesystem>

#include "common/data/idx.h"

namespace course {

namespace {

// The gzip-compressed file as Debian ships it, or the uncompressed one if that is what exists.
std::string find_file(const std::string& dir, const std::string& stem) {
  const std::string base = dir + "/" + stem;
  if (std::filesystem::exists(base + ".gz")) return base + ".gz";
  if (std::filesystem::exists(base)) return base;
  COURSE_FAIL("Fashion-MNIST file ", base,
              "[.gz] not found (install dataset-fashion-mnist with "
              "./setup.sh, or point --data-dir at a folder holding the IDX files)");
}

}  // namespace

LabelledImages load_fashion_mnist(const std::string& dir, Split split) {
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  const Tensor images = read_idx_u8(find_file(dir, prefix + "-images-idx3-ubyte"));
  const Tensor labels = read_idx_u8(find_file(dir, prefix + "-labels-idx1-ubyte"));
  COURSE_CHECK(images.dim() == 3 && images.size(1) == 28 && images.size(2) == 28, dir, ": ", prefix,
               " images have shape ", shape_str(images.shape()), ", expected (N, 28, 28)");
  COURSE_CHECK(labels.dim() == 1 && labels.size(0) == images.size(0), dir, ": ", images.size(0),
               " ", prefix, " images but labels of shape ", shape_str(labels.shape()));
  const uint8_t* raw = labels.data_as<uint8_t>();
  Tensor wide = Tensor::empty_pinned({labels.numel()}, DType::kI64);
  for (int64_t i = 0; i < labels.numel(); ++i) {
    COURSE_CHECK(raw[i] < kFashionMnistClasses, dir, ": ", prefix, " label ", i, " is ",
                 int(raw[i]), ", outside [0, ", kFashionMnistClasses, ")");
    wide.data_as<int64_t>()[i] = raw[i];
  }
  return {images.view({images.size(0), 1, 28, 28}), wide};
}

}  // namespace course
