// Day 3's GPU data path against the CPU path it replaces. The crop-resize kernel against
// OpenCV's crop, INTER_LINEAR resize and flip on boxes of every kind (whole image, one pixel,
// upscaled, downscaled, exactly halved, on the right and bottom edges); the loader's planned
// batches decoded on the device against the workers' decoded batches on the same seeds, from an
// ImageFolder of irregular JPEGs with a progressive one, a grey one and a PNG, and from tar
// shards and a packed file of the same JPEGs; corrupt files; refusals. On the simulated accelerator
// OpenCV stands in for nvJPEG (1 level apart at most, the kernel's rounding against OpenCV's fixed
// point); on a GPU nvJPEG's IDCT differs from libjpeg's by a few levels.
#include "common/data/device_decode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/data/data_loader.h"
#include "common/data/image_folder.h"
#include "common/data/open_dataset.h"
#include "common/data/packed_images.h"
#include "common/data/tar_shards.h"
#include "common/kernels/crop_resize.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"

namespace course {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

// The CPU path of one image: crop, resize, flip, normalise, as planar floats.
std::vector<float> opencv_reference(const cv::Mat& image, const CropBox& box, bool flip, int size,
                                    const std::vector<float>& mean, const std::vector<float>& std) {
  cv::Mat resized;
  const cv::Mat crop = image(cv::Rect(box.x, box.y, box.width, box.height));
  if (box.width == size && box.height == size) {
    resized = crop.clone();
  } else {
    cv::resize(crop, resized, cv::Size(size, size), 0, 0, cv::INTER_LINEAR);
  }
  if (flip) cv::flip(resized, resized, 1);
  std::vector<float> out;
  for (int c = 0; c < image.channels(); ++c) {
    for (int y = 0; y < size; ++y) {
      for (int x = 0; x < size; ++x) {
        out.push_back((resized.ptr<uint8_t>(y)[x * image.channels() + c] / 255.0f - mean[c]) /
                      std[c]);
      }
    }
  }
  return out;
}

using CropResizeTest = testing::DeviceCaseTest<DType, MemoryFormat>;

TEST_P(CropResizeTest, MatchesOpenCvOnEveryKindOfBox) {
  const DType dtype = value<0>();
  const MemoryFormat format = value<1>();
  const int size = 16;
  for (const int channels : {1, 3}) {
    const std::vector<float> mean = {0.485f, 0.456f, 0.406f}, std = {0.229f, 0.224f, 0.225f};
    const std::vector<float> m(mean.begin(), mean.begin() + channels),
        s(std.begin(), std.begin() + channels);
    // Each image's width and height, and its box: x, y, width, height.
    const std::vector<std::pair<cv::Size, CropBox>> cases = {
        {{37, 29}, {0, 0, 37, 29}},   // the whole image, downscaled unevenly
        {{5, 9}, {2, 3, 1, 1}},       // one pixel, upscaled
        {{11, 7}, {1, 2, 5, 5}},      // upscaled, the box on the bottom edge
        {{64, 40}, {32, 8, 32, 32}},  // exactly halved, on the right edge
        {{16, 16}, {0, 0, 16, 16}},   // the size itself: a copy
        {{200, 3}, {150, 0, 50, 3}},  // a thin strip
        {{97, 61}, {3, 5, 94, 56}},   // downscaled by a ratio that is not whole
    };
    std::vector<uint8_t> pixels;
    std::vector<int64_t> images;
    std::vector<int32_t> crops;
    std::vector<float> expected;
    cv::RNG rng(channels);
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto& [shape, box] = cases[i];
      cv::Mat image(shape.height, shape.width, CV_8UC(channels));
      rng.fill(image, cv::RNG::UNIFORM, 0, 256);
      const bool flip = i % 2 == 1;
      images.insert(images.end(), {static_cast<int64_t>(pixels.size()), shape.height, shape.width});
      pixels.insert(pixels.end(), image.data, image.data + image.total() * channels);
      crops.insert(crops.end(), {box.x, box.y, box.width, box.height, flip ? 1 : 0});
      const std::vector<float> one = opencv_reference(image, box, flip, size, m, s);
      expected.insert(expected.end(), one.begin(), one.end());
    }
    const int64_t n = static_cast<int64_t>(cases.size());
    const Tensor out = crop_resize_normalize(
        Tensor::from_vector(pixels, {static_cast<int64_t>(pixels.size())}).to(device()),
        Tensor::from_vector(images, {n, 3}).to(device()),
        Tensor::from_vector(crops, {n, 5}).to(device()), channels, size, m, s, dtype, format);
    ASSERT_EQ(out.shape(), (Shape{n, channels, size, size}));
    ASSERT_EQ(out.memory_format(), format);
    ASSERT_EQ(out.dtype(), dtype);
    const std::vector<float> actual =
        cast(to_memory_format(out, MemoryFormat::kContiguous), DType::kF32)
            .to(Device::cpu())
            .to_vector<float>();
    // f32: at most one level of 255 (OpenCV's 11-bit fixed-point weights); bf16 adds its 8 bits.
    for (size_t k = 0; k < actual.size(); ++k) {
      const double bound =
          1.01 / (255.0 * 0.224) + (dtype == DType::kF32 ? 0.0 : std::abs(expected[k]) / 128.0);
      ASSERT_NEAR(actual[k], expected[k], bound) << "channels " << channels << ", element " << k;
    }
  }
}

COURSE_INSTANTIATE_DEVICE_CASES(CropResizeTest, ::testing::Values(DType::kF32, DType::kBF16),
                                ::testing::Values(MemoryFormat::kContiguous,
                                                  MemoryFormat::kChannelsLast));

// An ImageFolder of irregular images: two classes, sizes from 23 to 301 pixels a side, one
// progressive JPEG, one grey JPEG, one PNG.
std::string make_folder(const std::string& name) {
  const fs::path root = testing::temp_path(name);
  fs::remove_all(root);
  cv::RNG rng(7);
  const std::vector<cv::Size> sizes = {{301, 23}, {40, 200}, {64, 64},  {129, 97},
                                       {33, 45},  {250, 80}, {77, 151}, {96, 95}};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const fs::path dir = root / (i % 2 ? "cat" : "dog");
    fs::create_directories(dir);
    const int channels = i == 3 ? 1 : 3;
    cv::Mat image(sizes[i], CV_8UC(channels));
    // Smooth content with some texture, as photographs have, so the decoders' IDCTs are
    // compared on the frequencies real images carry.
    cv::Mat small(4, 4, CV_8UC(channels));
    rng.fill(small, cv::RNG::UNIFORM, 0, 256);
    cv::resize(small, image, sizes[i], 0, 0, cv::INTER_CUBIC);
    cv::Mat noise(sizes[i], CV_8UC(channels));
    rng.fill(noise, cv::RNG::UNIFORM, 0, 24);
    image += noise;
    const std::string file = (dir / std::to_string(i)).string();
    if (i == 5) {
      cv::imwrite(file + ".png", image);
    } else {
      cv::imwrite(file + ".jpg", image,
                  {cv::IMWRITE_JPEG_QUALITY, 75 + 3 * static_cast<int>(i),
                   cv::IMWRITE_JPEG_PROGRESSIVE, i == 6 ? 1 : 0});
    }
  }
  return root.string();
}

TransformOptions transform(bool train) {
  TransformOptions t;
  t.size = 24;
  t.train = train;
  t.eval_crop_fraction = 0.875f;
  t.mean = {0.5f, 0.4f, 0.3f};
  t.std = {0.25f, 0.2f, 0.3f};
  return t;
}

// The batches of one epoch from the workers' CPU path and from the device path, side by side.
struct TwoPaths {
  std::vector<Batch> cpu, device;
  DeviceDecoder::Counts counts;
};

TwoPaths both_paths(const std::shared_ptr<const Dataset>& data, const TransformOptions& t,
                    Device device, int workers) {
  LoaderOptions options{.batch_size = 3, .num_workers = workers, .seed = 11};
  DataLoader cpu(data, t, options);
  options.decode_on_device = true;
  DataLoader planned(data, t, options);
  DeviceDecoder decoder(device);
  Stream stream(device);
  std::vector<int64_t> order(static_cast<size_t>(data->size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(order.size() - 1 - i);
  cpu.start_epoch(order, 2);
  planned.start_epoch(order, 2);
  TwoPaths out;
  while (!cpu.done()) {
    out.cpu.push_back(cpu.next());
    out.device.push_back(decoder.decode(planned.next(), stream));
  }
  stream.synchronize();
  out.counts = decoder.counts();
  return out;
}

// The device path's batches against the workers': the same labels, pixels within the decoders'
// difference. On the simulated accelerator OpenCV's fixed-point resize rounds about one value
// in ten the other way; on a GPU nvJPEG's IDCT and chroma upsampling differ from libjpeg's.
void expect_paths_agree(const TwoPaths& paths, bool train, Device device) {
  const double max_levels = device.is_cuda() ? 12.0 : 1.01,
               mean_levels = device.is_cuda() ? 1.5 : 0.25;
  ASSERT_EQ(paths.cpu.size(), paths.device.size());
  const std::vector<float> std = transform(train).std;
  double total = 0;
  int64_t count = 0;
  for (size_t b = 0; b < paths.cpu.size(); ++b) {
    EXPECT_EQ(paths.device[b].images.device(), device);
    EXPECT_EQ(paths.device[b].labels.to(Device::cpu()).to_vector<int64_t>(),
              paths.cpu[b].labels.to_vector<int64_t>());
    const std::vector<float> expected = paths.cpu[b].images.to_vector<float>();
    const std::vector<float> actual = paths.device[b].images.to(Device::cpu()).to_vector<float>();
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t k = 0; k < actual.size(); ++k) {
      const double levels = std::abs(actual[k] - expected[k]) * std[k / (24 * 24) % 3] * 255.0;
      ASSERT_LE(levels, max_levels)
          << (train ? "training" : "validation") << " batch " << b << ", element " << k;
      total += levels;
      ++count;
    }
  }
  EXPECT_LT(total / count, mean_levels) << (train ? "training" : "validation");
}

using DeviceDecodeTest = testing::DeviceTest;

TEST_P(DeviceDecodeTest, BatchesMatchTheWorkersDecodedOnTheSameDraws) {
  if (device().is_cpu()) GTEST_SKIP() << "the CPU is no decoding device (see RefusesTheCpu)";
  const auto data = std::make_shared<ImageFolder>(make_folder("irregular"));
  for (const bool train : {true, false}) {
    const TwoPaths paths = both_paths(data, transform(train), device(), train ? 2 : 0);
    expect_paths_agree(paths, train, device());
    EXPECT_EQ(paths.counts.host, 1) << "the PNG, decoded by a worker";
    EXPECT_EQ(paths.counts.hardware + paths.counts.cuda, 7);
    EXPECT_EQ(paths.counts.retried_on_host + paths.counts.skipped, 0);
  }
}

// The stored formats hand out their JPEG bytes as they were written, and the device path over
// each decodes as the workers do; formats that hold pixels give none.
TEST_P(DeviceDecodeTest, TarShardsAndPackedFilesGiveTheirJpegBytes) {
  if (device().is_cpu()) GTEST_SKIP() << "the CPU is no decoding device";
  const auto folder = std::make_shared<ImageFolder>(make_folder("formats"));
  const fs::path root = testing::temp_path("formats-stored");
  fs::remove_all(root);
  fs::create_directories(root / "tar");
  std::vector<std::vector<uint8_t>> written;
  {
    TarShardWriter shards((root / "tar").string(), "shard", 3, 1 << 20);
    PackedWriter packed(
        (root / "train.pack").string(),
        {.page_size = 1 << 16, .classes = 2, .height = 1, .width = 1, .channels = 3});
    for (int64_t i = 0; i < folder->size(); ++i) {
      std::optional<Dataset::Encoded> jpeg = folder->encoded(i);
      if (!jpeg) continue;  // the PNG
      shards.add(std::to_string(100 + i), jpeg->bytes, folder->label(i));
      packed.add(jpeg->bytes, folder->label(i));
      written.push_back(std::move(jpeg->bytes));
    }
    shards.finish();
    packed.finish();
  }
  const std::vector<std::pair<std::shared_ptr<const Dataset>, std::string>> stored = {
      {std::make_shared<TarShards>((root / "tar").string(), 2, false), "shard "},
      {std::make_shared<PackedImages>((root / "train.pack").string()), "packed file "}};
  for (const auto& [data, name] : stored) {
    ASSERT_TRUE(data->stores_encoded());
    ASSERT_EQ(data->size(), static_cast<int64_t>(written.size()));
    for (int64_t i = 0; i < data->size(); ++i) {
      const std::optional<Dataset::Encoded> jpeg = data->encoded(i);
      ASSERT_TRUE(jpeg.has_value());
      EXPECT_EQ(jpeg->bytes, written[i]) << name << i;
      EXPECT_EQ(jpeg->name.find(name), 0u) << jpeg->name;
    }
    expect_paths_agree(both_paths(data, transform(true), device(), 1), true, device());
  }
  // Pixels, packed or in memory: nothing to hand out, and the lab's check says so.
  {
    PackedWriter pixels((root / "pixels.pack").string(), {.encoding = PackedEncoding::kPixels,
                                                          .page_size = 1 << 16,
                                                          .classes = 2,
                                                          .height = 2,
                                                          .width = 2,
                                                          .channels = 1});
    pixels.add({1, 2, 3, 4}, 1);
    pixels.finish();
  }
  const PackedImages pixels((root / "pixels.pack").string());
  EXPECT_FALSE(pixels.stores_encoded());
  EXPECT_FALSE(pixels.encoded(0).has_value());
  EXPECT_NE(error_of([&] {
              check_decode_device({.decode_device = DecodeDevice::kGpu}, pixels);
            }).find("holds decoded images"),
            std::string::npos);
}

// A JPEG whose header reads but whose Huffman table is bogus: no decoder can decode it.
void break_huffman_table(const std::string& file) {
  std::vector<uint8_t> bytes;
  {
    std::FILE* f = std::fopen(file.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    uint8_t chunk[4096];
    size_t got;
    while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0)
      bytes.insert(bytes.end(), chunk, chunk + got);
    std::fclose(f);
  }
  for (size_t i = 2; i + 21 < bytes.size(); ++i) {
    if (bytes[i] == 0xFF && bytes[i + 1] == 0xC4) {
      for (size_t k = 5; k < 21; ++k) bytes[i + k] = 0xFF;  // 16 code counts summing past 256
      break;
    }
  }
  std::FILE* f = std::fopen(file.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

TEST_P(DeviceDecodeTest, CorruptFilesFailOrAreSkippedWithTheirNames) {
  if (device().is_cpu()) GTEST_SKIP() << "the CPU is no decoding device";
  const std::string root = make_folder("corrupt");
  break_huffman_table(root + "/dog/2.jpg");
  {  // not a JPEG at all, under a JPEG's name: found by the worker's header walk
    std::FILE* f = std::fopen((root + "/cat/1.jpg").c_str(), "wb");
    std::fputs("not an image", f);
    std::fclose(f);
  }
  const auto data = std::make_shared<ImageFolder>(root);
  LoaderOptions options{.batch_size = 8, .decode_on_device = true};
  DeviceDecoder decoder(device());
  Stream stream(device());
  {
    DataLoader strict(data, transform(true), options);
    strict.start_epoch({0, 1, 2, 3, 4, 5, 6, 7}, 0);
    EXPECT_NE(error_of([&] { strict.next(); }).find("cat/1.jpg is not a readable JPEG"),
              std::string::npos);
  }
  DataLoader strict(data, transform(true), options);
  strict.start_epoch({4, 5, 6}, 0);  // dog/0, dog/2 (broken), dog/4
  const std::string broken = error_of([&] { decoder.decode(strict.next(), stream); });
  EXPECT_NE(broken.find("dog/2.jpg cannot be decoded"), std::string::npos) << broken;

  options.skip_corrupt = true;
  DataLoader lenient(data, transform(true), options);
  lenient.start_epoch({0, 1, 2, 3, 4, 5, 6, 7}, 0);
  const Batch batch = decoder.decode(lenient.next(), stream);
  stream.synchronize();
  EXPECT_EQ(batch.images.size(0), 6);
  EXPECT_EQ(lenient.skipped_samples(), 1);
  EXPECT_EQ(decoder.counts().skipped, 1);
}

TEST_P(DeviceDecodeTest, RefusesTheCpuAndTransformsItCannotApply) {
  if (!device().is_cpu()) GTEST_SKIP() << "the refusals are the CPU's";
  EXPECT_NE(error_of([] { DeviceDecoder decoder(Device::cpu()); }).find("but it is the CPU"),
            std::string::npos);
  const auto data = std::make_shared<ImageFolder>(make_folder("refusals"));
  TransformOptions t = transform(true);
  t.policy.kind = AugmentPolicyKind::kRandAugment;
  const LoaderOptions options{.decode_on_device = true};
  EXPECT_NE(error_of([&] {
              DataLoader loader(data, t, options);
            }).find("an automatic augmentation policy needs the images on the host"),
            std::string::npos);
  t = transform(true);
  t.jitter.brightness = 0.2f;
  EXPECT_NE(error_of([&] { DataLoader loader(data, t, options); }).find("--aug-device"),
            std::string::npos);
}

COURSE_INSTANTIATE_DEVICE_TESTS(DeviceDecodeTest);

}  // namespace
}  // namespace course
