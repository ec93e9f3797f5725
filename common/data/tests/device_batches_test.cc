// The batches' way onto the device: with non_blocking the copy of batch b + 1 is queued before
// batch b is handed out (the overlap), without it each copy is made when asked for; the
// batches arrive whole and in the loader's order; on a GPU the copy runs on its own stream
// ordered by events. Also open_dataset's choices and errors.
#include "common/data/device_batches.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/data/memory_images.h"
#include "common/data/open_dataset.h"
#include "common/data/permutation.h"
#include "common/data/synthetic_images.h"
#include "common/testing/errors_and_files.h"

namespace course {
namespace {

using ::testing::HasSubstr;

// Six 1x1 images whose pixel is their index, in batches of two.
std::shared_ptr<const Dataset> numbered() {
  std::vector<uint8_t> pixels = {0, 1, 2, 3, 4, 5};
  return std::make_shared<MemoryImages>(
      LabelledImages{Tensor::from_vector(pixels, {6, 1, 1, 1}),
                     Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5}, {6})},
      6);
}

// The events of one epoch: "copy N" when batch N's transfer is queued, "use N" when handed out.
std::vector<std::string> epoch_events(bool non_blocking, Device device) {
  DataLoader loader(numbered(), {.size = 1, .train = false, .mean = {0}, .std = {1}},
                    {.batch_size = 2, .num_workers = 1});
  std::vector<std::string> events;
  int copies = 0;
  DeviceBatches batches(loader, device, non_blocking,
                        [&](const Batch& host, Device d, const Stream& s) -> Batch {
                          events.push_back("copy " + std::to_string(copies++));
                          return copy_to_device(host, d, s);
                        });
  batches.start_epoch(in_order(6), 0);
  for (int b = 0; b < 3; ++b) {
    const Batch batch = batches.next();
    EXPECT_EQ(batch.images.device(), device);
    EXPECT_EQ(batch.labels.to_vector<int64_t>(), (std::vector<int64_t>{2 * b, 2 * b + 1}));
    const std::vector<float> images = batch.images.to_vector<float>();
    EXPECT_NEAR(images[1] * 255.0f, 2 * b + 1, 1e-3f);
    events.push_back("use " + std::to_string(b));
  }
  return events;
}

TEST(DeviceBatches, NonBlockingQueuesTheNextCopyBeforeTheStepUsesTheCurrentBatch) {
  EXPECT_EQ(epoch_events(true, Device::cpu()),
            (std::vector<std::string>{"copy 0", "copy 1", "use 0", "copy 2", "use 1", "use 2"}));
}

TEST(DeviceBatches, BlockingCopiesEachBatchWhenAskedFor) {
  EXPECT_EQ(epoch_events(false, Device::cpu()),
            (std::vector<std::string>{"copy 0", "use 0", "copy 1", "use 1", "copy 2", "use 2"}));
}

TEST(DeviceBatches, OnAGpuTheCopiesRunOnTheCopyStreamAndArriveWhole) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible: " << cuda_status();
  EXPECT_EQ(epoch_events(true, Device::cuda(0)),
            (std::vector<std::string>{"copy 0", "copy 1", "use 0", "copy 2", "use 1", "use 2"}));
}

TEST(DeviceBatches, WithoutATransferTheLoadersBatchesAreUsedWhereTheyAre) {
  DataLoader loader(numbered(), {.size = 1, .train = false, .mean = {0}, .std = {1}},
                    {.batch_size = 4});
  DeviceBatches batches(loader, Device::cpu(), true, nullptr);
  batches.start_epoch(in_order(6), 0);
  EXPECT_EQ(batches.next().labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(batches.next().labels.to_vector<int64_t>(), (std::vector<int64_t>{4, 5}));
}

TEST(DeviceBatches, PreparationAppliesToTrainingBatchesNotToPlacedOnes) {
  DataLoader loader(numbered(), {.size = 1, .train = false, .mean = {0}, .std = {1}},
                    {.batch_size = 2});
  const auto reversed = [](Batch b) {
    std::vector<int64_t> labels = b.labels.to_vector<int64_t>();
    std::reverse(labels.begin(), labels.end());
    b.labels = Tensor::from_vector(labels, {static_cast<int64_t>(labels.size())});
    return b;
  };
  const Batch held{Tensor::empty({1, 1, 1, 1}), Tensor::from_vector<int64_t>({7, 8}, {2})};
  for (const bool with_transfer : {false, true}) {
    DeviceBatches::Transfer transfer;
    if (with_transfer) transfer = copy_to_device;
    DeviceBatches batches(loader, Device::cpu(), true, transfer, reversed);
    batches.start_epoch(in_order(6), 0);
    EXPECT_EQ(batches.next().labels.to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
    EXPECT_EQ(batches.next().labels.to_vector<int64_t>(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(batches.place(held).labels.to_vector<int64_t>(), (std::vector<int64_t>{7, 8}))
        << "validation batches are placed as they are";
  }
}

TEST(OpenDataset, SyntheticImagesSplitFiveToOne) {
  const LabDatasets data = open_dataset({.synthetic = 50});
  EXPECT_EQ(data.train->size(), 50);
  EXPECT_EQ(data.val->size(), 10);
  EXPECT_EQ(data.train->channels(), 1);
  EXPECT_FALSE(data.train_transform.train);
  EXPECT_TRUE(open_dataset({.synthetic = 50, .augment = true}).train_transform.train);
}

TEST(OpenDataset, MissingOrUnknownFoldersAreOneClearError) {
  const std::string nowhere = testing::temp_path("nowhere");
  EXPECT_THAT(testing::error_of([&] { open_dataset({.data_dir = nowhere}); }),
              HasSubstr("does not exist"));
  const std::string empty = testing::temp_path("empty-dataset");
  std::filesystem::create_directories(empty);
  EXPECT_THAT(testing::error_of([&] { open_dataset({.data_dir = empty}); }),
              HasSubstr("holds none of Fashion-MNIST"));
}

TEST(MemoryImages, HandOutImagesAsHeightWidthChannels) {
  const LabelledImages rgb = synthetic_images(2, 3, 4, 5, 1);
  const MemoryImages images(rgb, 5);
  const Tensor second = images.image(1);
  EXPECT_EQ(second.shape(), (Shape{4, 4, 3}));
  const std::vector<uint8_t> planar = rgb.images.to_vector<uint8_t>();
  const std::vector<uint8_t> interleaved = second.to_vector<uint8_t>();
  // Pixel (y 2, x 1), channel 2 of image 1.
  EXPECT_EQ(interleaved[(2 * 4 + 1) * 3 + 2], planar[((1 * 3 + 2) * 4 + 2) * 4 + 1]);
  EXPECT_THAT(
      testing::error_of([&] {
        MemoryImages(LabelledImages{rgb.images, Tensor::from_vector<int64_t>({0, 7}, {2})}, 5);
      }),
      HasSubstr("label 7 of sample 1"));
}

}  // namespace
}  // namespace course
