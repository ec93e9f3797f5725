// A day-3 rank's training images: the dataset with the workers' augmentation, the rank's span of
// each epoch in its storage's order (TP3.5's pages for packed files), the batch stage (flip and
// jitter with --aug-device, then MixUp / CutMix with the trainee's TP3.1-TP3.2) and the batches
// on the device, decoded there with --decode-device gpu.
#pragma once

#include <cstdint>
#include <optional>
#include <random>

#include "common/data/batch_mix.h"
#include "common/data/data_loader.h"
#include "common/data/device_batches.h"
#include "common/data/device_decode.h"
#include "common/data/open_dataset.h"
#include "day3_data/options.h"

namespace day3 {

// Flip and jitter (with --aug-device), then MixUp / CutMix, of a batch on its device: on the
// loader's host batch the trainee's TP3.1-TP3.2 (cut and targets), on the device the reference
// copies (batch_mix.h). Draws from its own generator, seeded per rank.
class BatchStage {
 public:
  BatchStage(const LabOptions& o, const course::TransformOptions& transform, int64_t classes,
             int rank);
  course::Batch operator()(course::Batch b);

 private:
  const LabOptions& o_;
  const course::TransformOptions& transform_;
  course::MixOptions mix_;
  int64_t classes_;
  std::mt19937 rng_;
};

// The rank's data: the augmented dataset, the loader of a step's images (--accumulate's
// micro-batches together), the batch stage on the host's batches (or, with --aug-device, left to
// the step), and the batches on the device. Refuses an epoch that leaves a rank no image, an odd
// last batch under mixing, or micro-batches that do not cut the step.
struct RankImages {
  RankImages(const LabOptions& o, course::Device device, int rank, int ranks);

  // The batches of `epoch` from `first_batch` on: the rank's span of the storage's order.
  void start_epoch(const LabOptions& o, int64_t epoch, int64_t first_batch, int rank, int ranks);

  course::LabDatasets data;
  int64_t samples, step_batch, steps_per_epoch;
  BatchStage stage;
  course::DataLoader loader;
  std::optional<course::DeviceDecoder> decoder;  // the loader's batches are JPEGs
  course::DeviceBatches batches;

 private:
  course::DeviceBatches::Transfer transfer(course::Device device);
};

}  // namespace day3
