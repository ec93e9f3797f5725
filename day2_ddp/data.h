// The day-2 lab's datasets: Fashion-MNIST (the embedded default), an ImageFolder tree with
// train/ and val/ (ImageNet's layout) or synthetic images, with their transforms.
#pragma once

#include <memory>

#include "common/data/image_source.h"
#include "common/data/transforms.h"
#include "day2_ddp/options.h"

namespace day2 {

struct LabData {
  std::shared_ptr<const course::ImageSource> train, val;
  course::TransformOptions train_transform, val_transform;
};

// Throws a clear error for a --data-dir that does not exist or holds neither dataset.
LabData load_lab_data(const LabOptions& options);

}  // namespace day2
