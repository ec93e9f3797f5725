// ImageFolder: one sub-folder per class holding JPEG/PNG/BMP files (ImageNet's train/ and val/
// layout), so a cluster user points --data-dir at real ImageNet. Classes are the sorted folder
// names; images are decoded by OpenCV as 3-channel RGB when asked for.
#pragma once

#include <string>
#include <vector>

#include "common/data/dataset.h"

namespace course {

class ImageFolder : public Dataset {
 public:
  // Throws when `root` does not exist, has no class folders, or holds no images.
  explicit ImageFolder(const std::string& root);
  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  int64_t channels() const override { return 3; }
  int64_t num_classes() const override { return static_cast<int64_t>(classes_.size()); }
  int64_t label(int64_t index) const override { return labels_[index]; }
  Tensor image(int64_t index) const override;
  std::optional<Encoded> encoded(int64_t index) const override;  // .jpg/.jpeg files
  bool stores_encoded() const override { return true; }

  const std::vector<std::string>& classes() const { return classes_; }
  const std::string& path(int64_t index) const { return files_[index]; }

 private:
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
};

}  // namespace course
