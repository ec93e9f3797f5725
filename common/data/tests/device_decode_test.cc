// Day 3's GPU data path against the CPU path it replaces: the loader's planned batches decoded
// on the device against the workers' decoded batches on the same seeds, from an ImageFolder of
// irregular JPEGs with a progressive one, a grey one and a PNG, and from tar shards and a packed
// file of the same JPEGs; a CMYK JPEG only the host decodes; corrupt files; refusals. On the
// simulated accelerator OpenCV stands in for nvJPEG (1 level apart at most, the kernel's rounding
// against OpenCV's fixed point); on a GPU nvJPEG's IDCT differs from libjpeg's by a few levels.
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
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"

namespace course {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

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

// A 13 x 9 CMYK JPEG (four components, Adobe's APP14 marker), which nvJPEG's batched decoders do
// not take: the worker decodes it (OpenCV converts it to RGB) and it joins the batch as pixels.
const std::vector<uint8_t> kCmykJpeg = {
    0xff, 0xd8, 0xff, 0xee, 0x00, 0x0e, 0x41, 0x64, 0x6f, 0x62, 0x65, 0x00, 0x64, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xff, 0xdb, 0x00, 0x43, 0x00, 0x03, 0x02, 0x02, 0x03, 0x02, 0x02, 0x03, 0x03, 0x03,
    0x03, 0x04, 0x03, 0x03, 0x04, 0x05, 0x08, 0x05, 0x05, 0x04, 0x04, 0x05, 0x0a, 0x07, 0x07, 0x06,
    0x08, 0x0c, 0x0a, 0x0c, 0x0c, 0x0b, 0x0a, 0x0b, 0x0b, 0x0d, 0x0e, 0x12, 0x10, 0x0d, 0x0e, 0x11,
    0x0e, 0x0b, 0x0b, 0x10, 0x16, 0x10, 0x11, 0x13, 0x14, 0x15, 0x15, 0x15, 0x0c, 0x0f, 0x17, 0x18,
    0x16, 0x14, 0x18, 0x12, 0x14, 0x15, 0x14, 0xff, 0xc0, 0x00, 0x14, 0x08, 0x00, 0x09, 0x00, 0x0d,
    0x04, 0x43, 0x11, 0x00, 0x4d, 0x11, 0x00, 0x59, 0x11, 0x00, 0x4b, 0x11, 0x00, 0xff, 0xc4, 0x00,
    0x1f, 0x00, 0x00, 0x01, 0x05, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0xff, 0xc4,
    0x00, 0xb5, 0x10, 0x00, 0x02, 0x01, 0x03, 0x03, 0x02, 0x04, 0x03, 0x05, 0x05, 0x04, 0x04, 0x00,
    0x00, 0x01, 0x7d, 0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13,
    0x51, 0x61, 0x07, 0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15,
    0x52, 0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25,
    0x26, 0x27, 0x28, 0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46,
    0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66,
    0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86,
    0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4,
    0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2,
    0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9,
    0xda, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5,
    0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xff, 0xda, 0x00, 0x0e, 0x04, 0x43, 0x00, 0x4d, 0x00, 0x59, 0x00,
    0x4b, 0x00, 0x00, 0x3f, 0x00, 0xfa, 0x87, 0xf6, 0xad, 0xff, 0x00, 0x97, 0xcf, 0xc6, 0xbd, 0x5f,
    0xfe, 0x1b, 0xdb, 0xfe, 0xa2, 0x3f, 0xf8, 0xfd, 0x7d, 0x0b, 0xf1, 0x93, 0xe3, 0x27, 0xfa, 0xff,
    0x00, 0xdf, 0xfa, 0xf7, 0xaf, 0xbc, 0x7e, 0x30, 0x7c, 0x60, 0xff, 0x00, 0x84, 0x07, 0xcf, 0xfd,
    0xff, 0x00, 0x97, 0xb3, 0x3d, 0xf1, 0x5f, 0x92, 0x1f, 0x1a, 0x3f, 0xe4, 0x6a, 0x6f, 0xf8, 0x17,
    0xf3, 0xa3, 0xfe, 0x1b, 0xdb, 0xfe, 0xa2, 0x3f, 0xf8, 0xfd, 0x7c, 0x57, 0xe3, 0xcf, 0x8c, 0x9f,
    0xf1, 0x39, 0x3f, 0xbf, 0xf5, 0xef, 0x5f, 0x1a, 0x78, 0xe7, 0xfe, 0x0a, 0x4d, 0xff, 0x00, 0x08,
    0xd6, 0xae, 0x6d, 0x7f, 0xb5, 0x76, 0x63, 0x3c, 0x79, 0x95, 0xfa, 0xdf, 0xfb, 0x56, 0xff, 0x00,
    0xcb, 0xe7, 0xe3, 0x5f, 0x97, 0x75, 0xea, 0x1f, 0x19, 0x3f, 0xe5, 0xbf, 0xe3, 0x5e, 0x9b, 0xfb,
    0x6d, 0xff, 0x00, 0xcb, 0xff, 0x00, 0xfc, 0x0a, 0xbf, 0x24, 0x3e, 0x34, 0x7f, 0xc8, 0xd4, 0xdf,
    0xf0, 0x2f, 0xe7, 0x45, 0x7c, 0x57, 0xe3, 0xcf, 0xf9, 0x0c, 0x9f, 0xc6, 0xb9, 0x9f, 0xf8, 0x26,
    0xaf, 0xfc, 0x90, 0xdf, 0x16, 0x7f, 0xd8, 0xe7, 0x7b, 0xff, 0x00, 0xa4, 0x56, 0x15, 0xff, 0xd9,
};

TEST_P(DeviceDecodeTest, FilesOnlyTheHostDecodesTravelAsPixels) {
  if (device().is_cpu()) GTEST_SKIP() << "the CPU is no decoding device";
  const JpegHeader header = read_jpeg_header(kCmykJpeg, "cmyk.jpg");
  ASSERT_EQ(header.components, 4);
  ASSERT_EQ(choose_jpeg_decoder(header, true), JpegDecoder::kHost);
  const std::string root = make_folder("host-only");
  {
    std::FILE* f = std::fopen((root + "/cat/cmyk.jpg").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(kCmykJpeg.data(), 1, kCmykJpeg.size(), f);
    std::fclose(f);
  }
  const auto data = std::make_shared<ImageFolder>(root);
  ASSERT_EQ(data->size(), 9);
  const TwoPaths paths = both_paths(data, transform(true), device(), 1);
  expect_paths_agree(paths, true, device());
  EXPECT_EQ(paths.counts.host, 2) << "the PNG and the CMYK JPEG, decoded by a worker";
  EXPECT_EQ(paths.counts.hardware + paths.counts.cuda, 7);
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
