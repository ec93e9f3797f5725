// Choosing and opening the lab's dataset.
#include "day2_ddp/data.h"

#include <filesystem>

#include "common/data/image_folder.h"

namespace day2 {

namespace {

namespace fs = std::filesystem;

bool holds_fashion_mnist(const fs::path& dir) {
  return fs::exists(dir / "train-images-idx3-ubyte.gz") ||
         fs::exists(dir / "train-images-idx3-ubyte");
}

}  // namespace

LabData load_lab_data(const LabOptions& o) {
  using namespace course;
  LabData data;
  const TransformOptions grey{.size = o.image_size, .train = false};
  if (o.synthetic > 0 || holds_fashion_mnist(o.data_dir)) {
    const auto source = [&](Split split) {
      return std::make_shared<MemoryImages>(train::lab_images(o, split), kFashionMnistClasses);
    };
    data = {source(Split::kTrain), source(Split::kTest), grey, grey};
    data.train_transform.train = o.augment;
    return data;
  }
  COURSE_CHECK(fs::is_directory(o.data_dir), "--data-dir ", o.data_dir, " does not exist");
  COURSE_CHECK(fs::is_directory(fs::path(o.data_dir) / "train"), "--data-dir ", o.data_dir,
               " holds neither Fashion-MNIST (train-images-idx3-ubyte[.gz]) nor a train/ folder "
               "of class folders");
  const std::string val = (fs::path(o.data_dir) / "val").string();
  COURSE_CHECK(fs::is_directory(val), "--data-dir ", o.data_dir,
               " has train/ but no val/ folder of class folders");
  const TransformOptions rgb{.size = o.image_size,
                             .train = true,
                             .eval_crop_fraction = 0.875f,
                             .mean = {0.485f, 0.456f, 0.406f},
                             .std = {0.229f, 0.224f, 0.225f}};
  data = {std::make_shared<ImageFolder>((fs::path(o.data_dir) / "train").string()),
          std::make_shared<ImageFolder>(val), rgb, rgb};
  data.val_transform.train = false;
  COURSE_CHECK(data.val->num_classes() == data.train->num_classes(), "--data-dir ", o.data_dir,
               ": train/ has ", data.train->num_classes(), " classes but val/ has ",
               data.val->num_classes());
  return data;
}

}  // namespace day2
