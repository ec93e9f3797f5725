// CIFAR-10 in its binary format, so users who have it point --data-dir at it: records of one
// label byte and 3072 pixel bytes (the 1024 red, then green, then blue, rows of 32), 10,000
// records per file: data_batch_1.bin ... data_batch_5.bin for training, test_batch.bin for
// testing.
#pragma once

#include <string>

#include "common/data/fashion_mnist.h"

namespace course {

inline constexpr int kCifar10Classes = 10;

// Whether `dir` holds CIFAR-10's binary files (its first training batch).
bool holds_cifar10(const std::string& dir);

// (N, 3, 32, 32) u8 images and their labels; throws course::Error naming the file when one is
// missing, is not a whole number of records, or has a label outside [0, 10).
LabelledImages load_cifar10(const std::string& dir, Split split);

}  // namespace course
