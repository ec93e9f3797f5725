// Fashion-MNIST, the course's embedded default dataset: 28x28 grey images of 10 clothing
// classes, 60,000 for training and 10,000 for testing, installed by Debian's
// dataset-fashion-mnist package.
#pragma once

#include <string>

#include "common/tensor/tensor.h"

namespace course {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr int kFashionMnistClasses = 10;

struct LabelledImages {
  Tensor images;  // (N, 1, 28, 28) u8 on the CPU
  Tensor labels;  // (N,) i64 in [0, 10)
};

enum class Split { kTrain, kTest };

// Reads `<dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]`; throws course::Error when
// a file is missing, corrupt, or images and labels disagree.
LabelledImages load_fashion_mnist(const std::string& dir, Split split);

}  // namespace course
