// ImageNet's shape made from a small labelled dataset (Fashion-MNIST by default), so day 3 can
// train ResNet-50 at 224 px from JPEGs as the course's ImageNet runs do, and watch the loader
// become the bottleneck: each source image becomes a colour photograph-sized image (sides drawn
// from 200 to 500 pixels, ImageNet's typical range) with the garment tinted, scaled and placed
// at random on a textured background. Classes multiply: class = source class x tints + tint,
// so 10 source classes give 100 (10 tints) or 1000 (100 tints). Everything about image i is
// drawn from i alone, so a dataset is the same whichever order or machine writes it.
#pragma once

#include <memory>

#include "common/data/dataset.h"

namespace course {

class ImageNetShaped : public Dataset {
 public:
  // `classes` must be a multiple of the source's classes.
  ImageNetShaped(std::shared_ptr<const Dataset> source, int64_t classes);
  int64_t size() const override { return source_->size(); }
  int64_t channels() const override { return 3; }
  int64_t num_classes() const override { return classes_; }
  int64_t label(int64_t index) const override;
  Tensor image(int64_t index) const override;  // (H, W, 3) u8, RGB

  // Image i's JPEG quality, drawn from 75 to 95.
  static int jpeg_quality(int64_t index);

 private:
  std::shared_ptr<const Dataset> source_;
  int64_t classes_, tints_;
};

}  // namespace course
