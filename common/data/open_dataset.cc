// Choosing and opening the lab's dataset.
#include "common/data/open_dataset.h"

#include <omp.h>

#include <algorithm>
#include <filesystem>

#include "common/data/cifar10.h"
#include "common/data/image_folder.h"
#include "common/data/memory_images.h"
#include "common/data/packed_images.h"
#include "common/data/synthetic_images.h"
#include "common/data/tar_shards.h"

namespace course {

namespace {

namespace fs = std::filesystem;

bool holds_fashion_mnist(const fs::path& dir) {
  return fs::exists(dir / "train-images-idx3-ubyte.gz") ||
         fs::exists(dir / "train-images-idx3-ubyte");
}

bool holds_shards(const fs::path& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) return false;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".tar") return true;
  }
  return false;
}

// --synthetic N: N random 28x28 grey images for training and N / 5 for validation.
LabelledImages all_in_memory_images(const DataFlags& f, const std::string& format, Split split) {
  if (format == "cifar10") return load_cifar10(f.data_dir, split);
  if (f.synthetic == 0) return load_fashion_mnist(f.data_dir, split);
  const bool train = split == Split::kTrain;
  return synthetic_images(train ? f.synthetic : std::max<int64_t>(f.synthetic / 5, 1), 1, 28,
                          kFashionMnistClasses, f.seed + (train ? 0 : 1));
}

// With --train-subset N (--test-subset N), the training (test) split's first N images.
LabelledImages in_memory_images(const DataFlags& f, const std::string& format, Split split) {
  LabelledImages data = all_in_memory_images(f, format, split);
  const bool train = split == Split::kTrain;
  const int64_t subset = train ? f.train_subset : f.test_subset;
  if (subset == 0) return data;
  const int64_t n = data.labels.numel();
  COURSE_CHECK(subset <= n, train ? "--train-subset " : "--test-subset ", subset,
               " is more than the ", n, train ? " training images" : " test images");
  return {data.images.slice(0, subset), data.labels.slice(0, subset)};
}

// Per-channel statistics: Fashion-MNIST's for grey images, CIFAR-10's, else ImageNet's.
TransformOptions whole_image_transform(const DataFlags& f, int64_t channels, bool cifar) {
  TransformOptions t{.size = f.image_size, .train = false};
  if (cifar) {
    t.mean = {0.4914f, 0.4822f, 0.4465f};
    t.std = {0.2470f, 0.2435f, 0.2616f};
  } else if (channels == 3) {
    t.mean = {0.485f, 0.456f, 0.406f};
    t.std = {0.229f, 0.224f, 0.225f};
  }
  return t;
}

// Images stored whole (in memory, shards, packed): crops and flips only with --augment.
LabDatasets whole_images(const DataFlags& f, std::shared_ptr<const Dataset> train,
                         std::shared_ptr<const Dataset> val, bool cifar) {
  COURSE_CHECK(val->num_classes() == train->num_classes() && val->channels() == train->channels(),
               "--data-dir ", f.data_dir, ": the training set has ", train->num_classes(),
               " classes of ", train->channels(), "-channel images, the validation set ",
               val->num_classes(), " of ", val->channels());
  const TransformOptions t = whole_image_transform(f, train->channels(), cifar);
  LabDatasets data{std::move(train), std::move(val), t, t};
  data.train_transform.train = f.augment;
  return data;
}

LabDatasets image_folders(const DataFlags& f) {
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

}  // namespace

std::string detect_format(const std::string& data_dir) {
  const fs::path dir(data_dir);
  COURSE_CHECK(fs::is_directory(dir), "--data-dir ", data_dir, " does not exist");
  if (holds_fashion_mnist(dir)) return "idx";
  if (holds_cifar10(data_dir)) return "cifar10";
  if (fs::exists(dir / "train.pack")) return "packed";
  if (holds_shards(dir / "train")) return "tar";
  COURSE_CHECK(fs::is_directory(dir / "train"), "--data-dir ", data_dir,
               " holds none of Fashion-MNIST (train-images-idx3-ubyte[.gz]), CIFAR-10 "
               "(data_batch_1.bin), train.pack, or a train/ folder of class folders or .tar "
               "shards");
  return "folder";
}

LabDatasets open_dataset(const DataFlags& f, const TarGrouper& group) {
  COURSE_CHECK(f.synthetic >= 0, "--synthetic must not be negative");
  COURSE_CHECK(f.train_subset >= 0 && f.test_subset >= 0,
               "--train-subset and --test-subset must not be negative");
  COURSE_CHECK(f.image_size > 0, "--image-size must be positive, got ", f.image_size);
  const std::string format =
      f.synthetic > 0 ? "idx" : (f.format == "auto" ? detect_format(f.data_dir) : f.format);
  const fs::path dir(f.data_dir);
  if (format == "idx" || format == "cifar10") {
    const int64_t classes = format == "cifar10" ? kCifar10Classes : kFashionMnistClasses;
    const auto images = [&](Split split) {
      return std::make_shared<MemoryImages>(in_memory_images(f, format, split), classes);
    };
    return whole_images(f, images(Split::kTrain), images(Split::kTest), format == "cifar10");
  }
  COURSE_CHECK(f.train_subset == 0 && f.test_subset == 0,
               "--train-subset and --test-subset need in-memory data (Fashion-MNIST, ",
               "CIFAR-10 or --synthetic), not ", format);
  if (format == "packed") {
    return whole_images(f, std::make_shared<PackedImages>((dir / "train.pack").string()),
                        std::make_shared<PackedImages>((dir / "val.pack").string()), false);
  }
  if (format == "tar") {
    const auto shards = [&](const char* split, int64_t classes) {
      return std::make_shared<TarShards>((dir / split).string(), classes, f.skip_corrupt, group);
    };
    const auto train = shards("train", 0);
    return whole_images(f, train, shards("val", train->num_classes()), false);
  }
  COURSE_CHECK(fs::is_directory(dir / "train"), "--data-dir ", f.data_dir,
               " has no train/ folder of class folders");
  return image_folders(f);
}

int loader_workers(int requested, int compute_threads) {
  constexpr int kCourseWorkers = 8;
  if (requested != kFittedWorkers) return requested;
  return std::clamp(compute_threads - 1, 1, kCourseWorkers);
}

LoaderOptions loader_options(const DataFlags& f, int64_t batch_size) {
  return {.batch_size = batch_size,
          .num_workers = loader_workers(f.num_workers, omp_get_max_threads()),
          .prefetch_factor = f.prefetch_factor,
          .persistent_workers = f.persistent_workers,
          .pin_memory = f.pin_memory,
          .drop_last = f.drop_last,
          .skip_corrupt = f.skip_corrupt,
          .decode_on_device = f.decode_device == DecodeDevice::kGpu,
          .seed = f.seed};
}

void check_decode_device(const DataFlags& f, const Dataset& train) {
  if (f.decode_device != DecodeDevice::kGpu) return;
  COURSE_CHECK(train.stores_encoded(), "--decode-device gpu decodes JPEG files, but ",
               f.synthetic > 0 ? std::string("--synthetic images") : f.data_dir,
               " holds decoded images: write the data as JPEGs with //tools:make_dataset "
               "(--to folder, tar or packed), or use --decode-device cpu");
}

}  // namespace course
