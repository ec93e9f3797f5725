// Choosing and opening the lab's dataset.
#include "common/data/open_dataset.h"

#include <algorithm>
#include <filesystem>

#include "common/data/image_folder.h"
#include "common/data/memory_images.h"
#include "common/data/synthetic_images.h"

namespace course {

namespace {

namespace fs = std::filesystem;

bool holds_fashion_mnist(const fs::path& dir) {
  return fs::exists(dir / "train-images-idx3-ubyte.gz") ||
         fs::exists(dir / "train-images-idx3-ubyte");
}

// --synthetic N: N random 28x28 grey images for training and N / 5 for validation.
LabelledImages in_memory_images(const DataFlags& f, Split split) {
  if (f.synthetic == 0) return load_fashion_mnist(f.data_dir, split);
  const bool train = split == Split::kTrain;
  return synthetic_images(train ? f.synthetic : std::max<int64_t>(f.synthetic / 5, 1), 1, 28,
                          kFashionMnistClasses, f.seed + (train ? 0 : 1));
}

}  // namespace

LabDatasets open_dataset(const DataFlags& f) {
  COURSE_CHECK(f.synthetic >= 0, "--synthetic must not be negative");
  COURSE_CHECK(f.image_size > 0, "--image-size must be positive, got ", f.image_size);
  if (f.synthetic > 0 || holds_fashion_mnist(f.data_dir)) {
    const auto images = [&](Split split) {
      return std::make_shared<MemoryImages>(in_memory_images(f, split), kFashionMnistClasses);
    };
    const TransformOptions grey{.size = f.image_size, .train = false};
    LabDatasets data{images(Split::kTrain), images(Split::kTest), grey, grey};
    data.train_transform.train = f.augment;
    return data;
  }
  COURSE_CHECK(fs::is_directory(f.data_dir), "--data-dir ", f.data_dir, " does not exist");
  COURSE_CHECK(fs::is_directory(fs::path(f.data_dir) / "train"), "--data-dir ", f.data_dir,
               " holds neither Fashion-MNIST (train-images-idx3-ubyte[.gz]) nor a train/ folder "
               "of class folders");
  const std::string val = (fs::path(f.data_dir) / "val").string();
  COURSE_CHECK(fs::is_directory(val), "--data-dir ", f.data_dir,
               " has train/ but no val/ folder of class folders");
  const TransformOptions rgb{.size = f.image_size,
                             .train = true,
                             .eval_crop_fraction = 0.875f,
                             .mean = {0.485f, 0.456f, 0.406f},
                             .std = {0.229f, 0.224f, 0.225f}};
  LabDatasets data{std::make_shared<ImageFolder>((fs::path(f.data_dir) / "train").string()),
                   std::make_shared<ImageFolder>(val), rgb, rgb};
  data.val_transform.train = false;
  COURSE_CHECK(data.val->num_classes() == data.train->num_classes(), "--data-dir ", f.data_dir,
               ": train/ has ", data.train->num_classes(), " classes but val/ has ",
               data.val->num_classes());
  return data;
}

LoaderOptions loader_options(const DataFlags& f, int64_t batch_size) {
  return {.batch_size = batch_size,
          .num_workers = f.num_workers,
          .prefetch_factor = f.prefetch_factor,
          .persistent_workers = f.persistent_workers,
          .pin_memory = f.pin_memory,
          .drop_last = f.drop_last,
          .skip_corrupt = f.skip_corrupt,
          .seed = f.seed};
}

}  // namespace course
