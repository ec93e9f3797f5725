// The DataLoader (batches independent of workers and prefetching, the prefetch bound, epoch
// coverage, corrupt samples, the default workers), the transforms against their formulas, and
// ImageFolder on real PNG/JPEG files written with OpenCV.
#include "common/data/data_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <thread>

#include "common/data/image_folder.h"
#include "common/data/memory_images.h"
#include "common/data/open_dataset.h"
#include "common/data/permutation.h"
#include "common/data/synthetic_images.h"
#include "common/testing/errors_and_files.h"

namespace course {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

std::shared_ptr<const Dataset> synthetic(int64_t n) {
  return std::make_shared<MemoryImages>(synthetic_images(n, 1, 28, 10, 3), 10);
}

TransformOptions augmenting(int64_t size) { return {.size = size, .train = true}; }

// Every batch of two epochs, flattened: images then labels.
std::vector<float> two_epochs(const LoaderOptions& options) {
  DataLoader loader(synthetic(50), augmenting(20), options);
  std::vector<float> out;
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch_permutation(50, 7, epoch), epoch);
    while (!loader.done()) {
      const Batch b = loader.next();
      const auto images = b.images.to_vector<float>();
      const auto labels = b.labels.to_vector<int64_t>();
      out.insert(out.end(), images.begin(), images.end());
      out.insert(out.end(), labels.begin(), labels.end());
    }
  }
  return out;
}

TEST(DataLoader, BatchesDoNotDependOnWorkersOrPrefetching) {
  const std::vector<float> reference = two_epochs({.batch_size = 8, .num_workers = 0});
  ASSERT_EQ(reference.size(), 2u * (50 * 20 * 20 + 50));
  for (int workers : {1, 3}) {
    for (int prefetch : {1, 4}) {
      for (bool persistent : {true, false}) {
        EXPECT_EQ(two_epochs({.batch_size = 8,
                              .num_workers = workers,
                              .prefetch_factor = prefetch,
                              .persistent_workers = persistent}),
                  reference)
            << workers << " workers, prefetch " << prefetch << ", persistent " << persistent;
      }
    }
  }
}

TEST(DataLoader, EachEpochVisitsItsIndicesInOrderAndDropLastDropsTheTail) {
  auto source = synthetic(23);
  DataLoader loader(source, {.size = 28, .train = false},
                    {.batch_size = 5, .num_workers = 2, .drop_last = false});
  const std::vector<int64_t> order = epoch_permutation(23, 1, 0);
  loader.start_epoch(order, 0);
  EXPECT_EQ(loader.batches(), 5);
  std::vector<int64_t> labels;
  while (!loader.done()) {
    const auto l = loader.next().labels.to_vector<int64_t>();
    labels.insert(labels.end(), l.begin(), l.end());
  }
  std::vector<int64_t> expected;
  for (int64_t i : order) expected.push_back(source->label(i));
  EXPECT_EQ(labels, expected);
  EXPECT_THAT(error_of([&] { loader.next(); }), HasSubstr("all consumed"));

  DataLoader dropping(source, {.size = 28, .train = false}, {.batch_size = 5, .drop_last = true});
  dropping.start_epoch(order, 0);
  EXPECT_EQ(dropping.batches(), 4);
}

// Counts decoded images, to watch how far ahead the workers run.
class CountingSource : public MemoryImages {
 public:
  CountingSource() : MemoryImages(synthetic_images(100, 1, 28, 10, 3), 10) {}
  Tensor image(int64_t index) const override {
    ++decoded;
    return MemoryImages::image(index);
  }
  mutable std::atomic<int> decoded{0};
};

TEST(DataLoader, WorkersStayAtMostPrefetchFactorBatchesAhead) {
  auto source = std::make_shared<CountingSource>();
  DataLoader loader(source, {.size = 28, .train = false},
                    {.batch_size = 1, .num_workers = 2, .prefetch_factor = 3});
  loader.start_epoch(in_order(100), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (source->decoded < 6 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(source->decoded, 6);  // 2 workers x 3 batches, and no more
  loader.next();
  while (source->decoded < 7 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(source->decoded, 7);
}

TEST(DataLoader, BadOptionsAndIndicesAreErrors) {
  EXPECT_THAT(error_of([] { DataLoader(synthetic(4), {}, {.batch_size = 0}); }),
              HasSubstr("--batch-size must be positive"));
  EXPECT_THAT(error_of([] { DataLoader(synthetic(4), {}, {.prefetch_factor = 0}); }),
              HasSubstr("--prefetch-factor"));
  DataLoader loader(synthetic(4), {}, {.batch_size = 8, .drop_last = true});
  EXPECT_THAT(error_of([&] { loader.start_epoch({0, 9}, 0); }), HasSubstr("outside the dataset"));
  EXPECT_THAT(error_of([&] { loader.start_epoch({0, 1}, 0); }), HasSubstr("no complete batch"));
}

// The default workers fit the rank (the course's 8 at most, one core left to the step, at least
// one); a requested count is kept, 0 included.
TEST(DataLoader, DefaultWorkersFitTheRanksThreads) {
  EXPECT_EQ(loader_workers(kFittedWorkers, 1), 1);
  EXPECT_EQ(loader_workers(kFittedWorkers, 2), 1);
  EXPECT_EQ(loader_workers(kFittedWorkers, 6), 5);
  EXPECT_EQ(loader_workers(kFittedWorkers, 9), 8);
  EXPECT_EQ(loader_workers(kFittedWorkers, 64), 8);
  EXPECT_EQ(loader_workers(0, 64), 0);
  EXPECT_EQ(loader_workers(12, 2), 12);
  DataFlags flags;
  EXPECT_EQ(loader_options(flags, 32).num_workers, loader_workers(-1, omp_get_max_threads()));
  flags.num_workers = 3;
  EXPECT_EQ(loader_options(flags, 32).num_workers, 3);
}

TEST(Transforms, ValidationNormalisesEachChannelByTheFormula) {
  cv::Mat image(2, 2, CV_8UC3);
  for (int y = 0; y < 2; ++y) {
    for (int x = 0; x < 2; ++x) image.at<cv::Vec3b>(y, x) = cv::Vec3b(10 * x, 100 + y, 255);
  }
  TransformOptions o{
      .size = 2, .train = false, .mean = {0.5f, 0.4f, 0.3f}, .std = {0.2f, 0.3f, 0.4f}};
  std::mt19937 rng(0);
  std::vector<float> out(12);
  const Tensor pixels = Tensor::from_vector(
      std::vector<uint8_t>(image.data, image.data + image.total() * image.elemSize()), {2, 2, 3});
  transform_image(pixels, o, rng, out.data());
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 2; ++y) {
      for (int x = 0; x < 2; ++x) {
        const float v = image.at<cv::Vec3b>(y, x)[c] / 255.0f;
        EXPECT_NEAR(out[(c * 2 + y) * 2 + x], (v - o.mean[c]) / o.std[c], 1e-5) << c << y << x;
      }
    }
  }
  EXPECT_THAT(error_of([&] { transform_image(pixels, {.size = 2}, rng, out.data()); }),
              HasSubstr("3 channels"));
}

TEST(Transforms, RandomResizedCropBoxesFollowTorchvisionsBounds) {
  std::mt19937 rng(5), again(5);
  for (int i = 0; i < 500; ++i) {
    const CropBox b = random_resized_crop_box(320, 240, rng);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.y, 0);
    ASSERT_LE(b.x + b.width, 320);
    ASSERT_LE(b.y + b.height, 240);
    const double area = static_cast<double>(b.width) * b.height / (320.0 * 240.0);
    const double ratio = static_cast<double>(b.width) / b.height;
    if (b.width == 320 && b.height == 240) continue;  // the fallback
    EXPECT_GE(area, 0.08 * 0.97);
    EXPECT_GE(ratio, 0.75 * 0.97);
    EXPECT_LE(ratio, 4.0 / 3.0 * 1.03);
    const CropBox same = random_resized_crop_box(320, 240, again);
    ASSERT_EQ(same.x, b.x);
    ASSERT_EQ(same.width, b.width);
  }
  // A 1000 x 10 strip fits no draw: the central crop at the widest allowed ratio.
  std::mt19937 strip_rng(1);
  const CropBox strip = random_resized_crop_box(1000, 10, strip_rng);
  EXPECT_EQ(strip.width, 13);
  EXPECT_EQ(strip.height, 10);
  EXPECT_EQ(strip.x, (1000 - 13) / 2);
  const CropBox center = center_crop_box(256, 300, 0.875f);
  EXPECT_EQ(center.width, 224);
  EXPECT_EQ(center.x, 16);
  EXPECT_EQ(center.y, 38);
}

class ImageFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::temp_path(std::string("folder_") +
                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ + "/shirt");
    std::filesystem::create_directories(root_ + "/boot");
    // OpenCV writes BGR: (0, 0, 255) is red.
    cv::imwrite(root_ + "/shirt/a.png", cv::Mat(6, 8, CV_8UC3, cv::Scalar(0, 0, 255)));
    cv::imwrite(root_ + "/shirt/b.jpg", cv::Mat(9, 5, CV_8UC3, cv::Scalar(255, 0, 0)));
    cv::imwrite(root_ + "/boot/c.PNG", cv::Mat(7, 7, CV_8UC3, cv::Scalar(0, 255, 0)));
    std::ofstream(root_ + "/boot/notes.txt") << "not an image";
  }
  std::string root_;
};

TEST_F(ImageFolderTest, ClassesAreSortedFolderNamesAndImagesDecodeAsRgb) {
  ImageFolder folder(root_);
  EXPECT_EQ(folder.classes(), (std::vector<std::string>{"boot", "shirt"}));
  ASSERT_EQ(folder.size(), 3);
  EXPECT_EQ(folder.label(0), 0);
  EXPECT_EQ(folder.label(1), 1);
  const Tensor red = folder.image(1);  // (H, W, 3) RGB
  EXPECT_EQ(red.size(1), 8);
  const std::vector<uint8_t> pixels = red.to_vector<uint8_t>();
  EXPECT_EQ(std::vector<uint8_t>(pixels.begin(), pixels.begin() + 3),
            (std::vector<uint8_t>{255, 0, 0}));
  DataLoader loader(std::make_shared<ImageFolder>(root_),
                    {.size = 4, .train = true, .mean = {0, 0, 0}, .std = {1, 1, 1}},
                    {.batch_size = 3, .num_workers = 2});
  loader.start_epoch(in_order(3), 0);
  const Batch batch = loader.next();
  EXPECT_EQ(batch.images.shape(), (Shape{3, 3, 4, 4}));
  EXPECT_NEAR(batch.images.to_vector<float>()[3 * 16], 1.0f, 0.02f);  // red plane of "a.png"
}

TEST_F(ImageFolderTest, ACorruptImageFailsWithItsPathOrIsSkipped) {
  std::ofstream(root_ + "/boot/broken.jpg") << "\xff\xd8\xff\xe0 truncated";
  auto folder = std::make_shared<ImageFolder>(root_);
  ASSERT_EQ(folder->size(), 4);
  const TransformOptions rgb{.size = 4, .mean = {0, 0, 0}, .std = {1, 1, 1}};
  DataLoader strict(folder, rgb, {.batch_size = 4, .num_workers = 2});
  strict.start_epoch(in_order(4), 0);
  EXPECT_THAT(error_of([&] { strict.next(); }), HasSubstr("boot/broken.jpg"));
  DataLoader lenient(folder, rgb, {.batch_size = 4, .num_workers = 2, .skip_corrupt = true});
  lenient.start_epoch(in_order(4), 0);
  EXPECT_EQ(lenient.next().labels.numel(), 3);
  EXPECT_EQ(lenient.skipped_samples(), 1);
}

TEST_F(ImageFolderTest, MissingOrEmptyFoldersAreErrors) {
  EXPECT_THAT(error_of([&] { ImageFolder(root_ + "/nowhere"); }), HasSubstr("does not exist"));
  EXPECT_THAT(error_of([&] { ImageFolder(root_ + "/boot"); }), HasSubstr("has no classes"));
  std::filesystem::create_directories(root_ + "/empty/class");
  EXPECT_THAT(error_of([&] { ImageFolder(root_ + "/empty"); }), HasSubstr("no .jpg"));
}

}  // namespace
}  // namespace course
