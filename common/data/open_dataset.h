// The flags that choose and feed a lab's data, and the one place that opens it: Fashion-MNIST
// (the embedded default), CIFAR-10's binary batches, an ImageFolder tree with train/ and val/
// (ImageNet's layout), WebDataset tar shards in train/ and val/, packed files, or synthetic
// images, each with its training and validation transforms.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/data/data_loader.h"
#include "common/data/dataset.h"
#include "common/data/fashion_mnist.h"
#include "common/data/tar_shards.h"
#include "common/data/transforms.h"

namespace course {

// Where the training images are decoded, cropped and normalised: by the loader's workers on
// the host (OpenCV), or on the training device (device_decode.h).
enum class DecodeDevice { kCpu, kGpu };

// --num-workers's default: the course's 8 loader threads, fitted to the rank (loader_workers).
inline constexpr int kFittedWorkers = -1;

// With the course script's names and defaults (the image size defaults to Fashion-MNIST's).
struct DataFlags {
  std::string data_dir = kFashionMnistDir;
  // auto (detected), idx (Fashion-MNIST), cifar10, folder (ImageFolder), tar (WebDataset
  // shards in train/ and val/), packed (train.pack and val.pack)
  std::string format = "auto";
  int64_t synthetic = 0;     // > 0: that many random images instead of the dataset
  int64_t train_subset = 0;  // > 0: the first N training images (in-memory formats)
  int64_t test_subset = 0;   // > 0: the first N test images (in-memory formats)
  int64_t image_size = 28;
  bool augment = false;  // RandomResizedCrop + flip on in-memory images (always on folders)
  uint32_t seed = 0;     // of weights, shuffling and augmentation
  int num_workers = kFittedWorkers;
  int prefetch_factor = 2;
  bool persistent_workers = true;
  bool pin_memory = true;
  bool non_blocking = true;  // host-to-device copies on a copy stream, one batch ahead
  bool drop_last = false;
  bool skip_corrupt = false;  // a corrupt image is reported and left out instead of failing
  DecodeDevice decode_device = DecodeDevice::kCpu;  // --decode-device (day 3, the loader bench)
};

struct LabDatasets {
  std::shared_ptr<const Dataset> train, val;
  TransformOptions train_transform, val_transform;
};

// Throws one clear error when --data-dir does not exist, holds neither dataset, or its files
// are missing or corrupt; nothing is trained before the data is known to be there.
// `group` forms the samples of tar shards (the day-3 lab passes the trainee's).
LabDatasets open_dataset(const DataFlags& flags, const TarGrouper& group = group_tar_members);

// Throws, saying what to use instead, when --decode-device gpu meets data that is not stored
// as JPEG files (Fashion-MNIST, CIFAR-10, packed pixels, synthetic images).
void check_decode_device(const DataFlags& flags, const Dataset& train);

// The storage format of --data-dir under --format auto (throws when it is none of them).
std::string detect_format(const std::string& data_dir);

// The loader threads of a rank: `requested` when given (0 or more); by default the course's 8,
// but no more than the rank's compute threads less one (the step keeps a core), and at least 1:
// 1 on a 2-core machine, 8 on a node with 16 cores per rank or more.
int loader_workers(int requested, int compute_threads);

// The DataLoader's options for these flags and a batch of `batch_size` images; the default
// workers fitted to this rank's OpenMP threads (parallel/rank_setup.h shares a node's cores out).
LoaderOptions loader_options(const DataFlags& flags, int64_t batch_size);

}  // namespace course
