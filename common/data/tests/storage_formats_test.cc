// The three storage formats of day 3 and CIFAR-10's binary batches: what is written reads back
// (pixels against OpenCV's own encode/decode, labels, pages), tar members' offsets against
// files archived by GNU tar, the epoch orders (WebDataset's shard-then-buffer shuffle, FFCV's
// quasi-random pages) are permutations with their locality, the formats are detected, and bad
// files (truncated, a member without its pair, a bad header or index, a class out of range)
// are one clear error, or with skip_corrupt a counted skip.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>

#include "common/data/cifar10.h"
#include "common/data/open_dataset.h"
#include "common/data/packed_images.h"
#include "common/data/tar_shards.h"
#include "common/testing/errors_and_files.h"

namespace course {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using ::testing::HasSubstr;
using testing::temp_path;

// A random grey image (rows x cols) and its JPEG bytes.
struct Encoded {
  cv::Mat pixels;
  std::vector<uint8_t> jpeg;
};

Encoded random_image(int seed, int channels = 1) {
  cv::Mat m(12, 10, CV_8UC(channels));
  cv::setRNGSeed(seed);
  cv::randu(m, 0, 256);
  Encoded e{m, {}};
  cv::imencode(".jpg", m, e.jpeg);
  return e;
}

// What OpenCV decodes from the bytes, as (H, W, C) RGB like the readers return.
std::vector<uint8_t> decoded(const std::vector<uint8_t>& jpeg, int channels) {
  cv::Mat d = cv::imdecode(jpeg, channels == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
  if (channels == 3) cv::cvtColor(d, d, cv::COLOR_BGR2RGB);
  return std::vector<uint8_t>(d.data, d.data + d.total() * d.elemSize());
}

std::vector<uint8_t> bytes_of(const Tensor& t) { return t.to_vector<uint8_t>(); }

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// --- CIFAR-10 -------------------------------------------------------------------------------

// A CIFAR-10 batch of `records` records: record r has label (r + offset) % 10 and pixel bytes
// (r + p) % 256.
std::string cifar_batch(int records, int offset) {
  std::string out;
  for (int r = 0; r < records; ++r) {
    out += static_cast<char>((r + offset) % 10);
    for (int p = 0; p < 3072; ++p) out += static_cast<char>((r + p) % 256);
  }
  return out;
}

TEST(Cifar10, ReadsPlanarRecordsAsImages) {
  const std::string dir = temp_path("cifar");
  fs::create_directories(dir);
  for (int b = 1; b <= 5; ++b) {
    write_bytes(dir + "/data_batch_" + std::to_string(b) + ".bin", cifar_batch(3, b));
  }
  write_bytes(dir + "/test_batch.bin", cifar_batch(2, 7));
  ASSERT_TRUE(holds_cifar10(dir));
  const LabelledImages train = load_cifar10(dir, Split::kTrain);
  EXPECT_EQ(train.images.shape(), (Shape{15, 3, 32, 32}));
  EXPECT_EQ(train.labels.to_vector<int64_t>()[4], (1 + 2) % 10);  // batch 2, record 1
  const std::vector<uint8_t> pixels = train.images.to_vector<uint8_t>();
  // Image 4 is record 1 of its batch: channel c, row y, column x is byte c*1024 + 32y + x.
  EXPECT_EQ(pixels[4 * 3072 + 1024 + 32 * 2 + 5], (1 + 1024 + 64 + 5) % 256);
  EXPECT_EQ(load_cifar10(dir, Split::kTest).labels.to_vector<int64_t>(),
            (std::vector<int64_t>{7, 8}));
  write_bytes(dir + "/test_batch.bin", cifar_batch(2, 7).substr(0, 5000));
  EXPECT_THAT(error_of([&] { load_cifar10(dir, Split::kTest); }),
              HasSubstr("not a whole number of 3073-byte records"));
  std::string bad = cifar_batch(1, 0);
  bad[0] = 10;
  write_bytes(dir + "/test_batch.bin", bad);
  EXPECT_THAT(error_of([&] { load_cifar10(dir, Split::kTest); }),
              HasSubstr("label 10 is not in [0, 10)"));
}

// --- packed files ---------------------------------------------------------------------------

TEST(PackedImages, PixelsAndJpegsReadBackPageByPage) {
  const std::string path = temp_path("pixels.pack");
  {
    PackedWriter w(path, {.encoding = PackedEncoding::kPixels,
                          .page_size = 4096,
                          .classes = 3,
                          .height = 12,
                          .width = 10,
                          .channels = 1});
    for (int i = 0; i < 70; ++i) {
      const cv::Mat m = random_image(i).pixels;
      w.add(std::vector<uint8_t>(m.data, m.data + m.total()), i % 3);
    }
    w.finish();
  }
  const PackedImages pixels(path);
  ASSERT_EQ(pixels.size(), 70);
  EXPECT_EQ(pixels.label(5), 2);
  const cv::Mat m = random_image(33).pixels;
  EXPECT_EQ(bytes_of(pixels.image(33)), std::vector<uint8_t>(m.data, m.data + m.total()));
  // 120-byte samples: 34 to a 4096-byte page, pages 1 and 2 full, page 3 partly.
  EXPECT_EQ(pixels.sample_pages()[0], 1);
  EXPECT_EQ(pixels.sample_pages()[33], 1);
  EXPECT_EQ(pixels.sample_pages()[34], 2);
  EXPECT_EQ(pixels.sample_pages()[69], 3);

  const std::string jpegs = temp_path("jpegs.pack");
  PackedWriter w(jpegs, {.page_size = 4096, .classes = 2, .channels = 3});
  for (int i = 0; i < 9; ++i) w.add(random_image(i, 3).jpeg, i % 2);
  w.finish();
  const PackedImages images(jpegs);
  EXPECT_EQ(bytes_of(images.image(4)), decoded(random_image(4, 3).jpeg, 3));
  EXPECT_EQ(images.image(4).shape(), (Shape{12, 10, 3}));
}

TEST(PackedImages, BadFilesAreClearErrors) {
  const std::string path = temp_path("bad.pack");
  {
    PackedWriter w(path, {.page_size = 4096, .classes = 2, .channels = 1});
    EXPECT_THAT(error_of([&] { w.add(std::vector<uint8_t>(5000, 1), 0); }),
                HasSubstr("does not fit a page of 4096 bytes"));
    EXPECT_THAT(error_of([&] { w.add({1, 2}, 2); }), HasSubstr("label 2 is not in [0, 2)"));
    // Not finished: nothing is left behind.
  }
  EXPECT_FALSE(fs::exists(path) || fs::exists(path + ".tmp"));
  EXPECT_THAT(error_of([&] { PackedWriter(path, {.page_size = 5000, .classes = 2}); }),
              HasSubstr("power of two"));
  {
    PackedWriter w(path, {.page_size = 4096, .classes = 2, .channels = 1});
    for (int i = 0; i < 4; ++i) w.add(std::vector<uint8_t>(3000, i), i % 2);  // a page each
    w.finish();
  }
  const std::string good = read_file(path);
  const std::string copy = temp_path("copy.pack");
  const auto error_with = [&](std::string bytes) {
    write_bytes(copy, bytes);
    return error_of([&] { PackedImages p(copy); });
  };
  EXPECT_THAT(error_with("short"), HasSubstr("too short for its header"));
  std::string magic = good;
  magic[0] = 'X';
  EXPECT_THAT(error_with(magic), HasSubstr("bad magic"));
  EXPECT_THAT(error_with(good.substr(0, good.size() - 10)), HasSubstr("truncated"));
  // The index is the file's last 4 x 24 bytes: sample 1's offset, then sample 2's label.
  std::string moved = good;
  const size_t index = good.size() - 4 * 24;
  const int64_t across = 4096 - 2;
  std::memcpy(&moved[index + 24], &across, 8);
  EXPECT_THAT(error_with(moved), HasSubstr("sample 1 lies outside the data pages"));
  const int64_t straddling = 2 * 4096 - 2;
  std::memcpy(&moved[index + 24], &straddling, 8);
  EXPECT_THAT(error_with(moved), HasSubstr("sample 1 straddles a page boundary"));
  std::string label = good;
  const int64_t nine = 9;
  std::memcpy(&label[index + 2 * 24 + 16], &nine, 8);
  EXPECT_THAT(error_with(label), HasSubstr("sample 2's label 9 is not in [0, 2)"));
}

TEST(PackedImages, QuasiRandomOrderKeepsFewPagesInUse) {
  std::vector<int64_t> pages;
  for (int64_t i = 0; i < 200; ++i) pages.push_back(1 + i / 10);  // 20 pages of 10 samples
  const std::vector<int64_t> order = quasi_random_order(pages, 3, 5, 0);
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(200);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all) << "a permutation of the samples";
  // Every run of 30 samples from the start of a group comes from 3 pages.
  for (size_t first = 0; first < 180; first += 30) {
    std::set<int64_t> used;
    for (size_t k = first; k < first + 30; ++k) used.insert(pages[order[k]]);
    EXPECT_EQ(used.size(), 3u) << "samples " << first << "-" << first + 29;
  }
  EXPECT_NE(order, all);
  EXPECT_NE(order, quasi_random_order(pages, 3, 5, 1)) << "another epoch, another order";
  EXPECT_EQ(order, quasi_random_order(pages, 3, 5, 0));
}

// --- tar shards -----------------------------------------------------------------------------

TEST(TarShards, MemberOffsetsMatchGnuTarsArchive) {
  const std::string dir = temp_path("gnutar");
  fs::create_directories(dir + "/sub");
  const std::string long_name = "sub/" + std::string(120, 'n') + ".jpg";
  write_bytes(dir + "/a.cls", "4");
  write_bytes(dir + "/" + long_name, std::string(700, 'x') + "end");
  write_bytes(dir + "/b.cls", "12345");
  const std::string tar = dir + ".tar";
  ASSERT_EQ(
      std::system(("tar -cf " + tar + " -C " + dir + " a.cls " + long_name + " b.cls").c_str()), 0);
  const std::vector<TarMember> members = list_tar_members(tar);
  ASSERT_EQ(members.size(), 3u);
  const std::string archive = read_file(tar);
  for (const TarMember& m : members) {
    EXPECT_EQ(archive.substr(m.offset, m.size), read_file(dir + "/" + m.name)) << m.name;
  }
  EXPECT_EQ(members[1].name, long_name);
}

TEST(TarShards, GroupingFollowsWebDataset) {
  const std::vector<TarSample> samples = group_tar_members({{"x/0001.jpg", 0, 1},
                                                            {"x/0001.cls", 0, 1},
                                                            {"x.d/0002.seg.png", 0, 1},
                                                            {"x.d/0002.cls", 0, 1},
                                                            {"x/0001.txt", 0, 1}});
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].key, "x/0001");
  EXPECT_EQ(samples[1].key, "x.d/0002");
  EXPECT_EQ(samples[1].parts.count("seg.png"), 1u);
  EXPECT_EQ(samples[2].key, "x/0001") << "a key that comes back later is a new sample";
}

// Writes 12 grey JPEG samples into shards of 5 under `dir`; sample i has class i % 4.
void write_shards(const std::string& dir) {
  fs::create_directories(dir);
  TarShardWriter w(dir, "shard", 5, 1 << 20);
  for (int i = 0; i < 12; ++i) {
    w.add("sample" + std::to_string(100 + i), random_image(i).jpeg, i % 4);
  }
  w.finish();
  EXPECT_EQ(w.shards(), 3);
}

TEST(TarShards, WrittenShardsReadBack) {
  const std::string dir = temp_path("shards");
  write_shards(dir);
  EXPECT_TRUE(fs::exists(dir + "/shard-000002.tar"));
  const TarShards shards(dir, 0, false);
  ASSERT_EQ(shards.size(), 12);
  EXPECT_EQ(shards.shard_sizes(), (std::vector<int64_t>{5, 5, 2}));
  EXPECT_EQ(shards.num_classes(), 4);
  EXPECT_EQ(shards.channels(), 1);
  EXPECT_EQ(shards.label(7), 3);
  EXPECT_EQ(bytes_of(shards.image(7)), decoded(random_image(7).jpeg, 1));
  // The shards are ordinary tars: GNU tar lists the pairs.
  const std::vector<TarMember> members = list_tar_members(dir + "/shard-000001.tar");
  EXPECT_EQ(members[0].name, "sample105.jpg");
  EXPECT_EQ(members[1].name, "sample105.cls");
}

TEST(TarShards, BadShardsAreClearErrorsOrCountedSkips) {
  const std::string dir = temp_path("bad-shards");
  write_shards(dir);
  const std::string whole = read_file(dir + "/shard-000000.tar");
  write_bytes(dir + "/shard-000000.tar", whole.substr(0, 1800));
  EXPECT_THAT(error_of([&] { TarShards s(dir, 0, false); }),
              HasSubstr("shard-000000.tar is not a whole tar archive"));
  write_bytes(dir + "/shard-000000.tar", "not a tar at all");
  EXPECT_THAT(error_of([&] { TarShards s(dir, 0, false); }),
              HasSubstr("is not a whole tar archive"));
  write_bytes(dir + "/shard-000000.tar", whole);
  EXPECT_THAT(error_of([&] { TarShards s(dir, 3, false); }), HasSubstr("class 3 is not in [0, 3)"));

  // A sample without its .cls: GNU tar deletes the member.
  ASSERT_EQ(std::system(("tar --delete -f " + dir + "/shard-000001.tar sample106.cls").c_str()), 0);
  EXPECT_THAT(error_of([&] { TarShards s(dir, 0, false); }),
              HasSubstr("sample 'sample106' has no .cls member"));
  const TarShards skipping(dir, 0, true);
  EXPECT_EQ(skipping.skipped(), 1);
  EXPECT_EQ(skipping.size(), 11);
}

TEST(TarShards, WebDatasetOrderShufflesShardsThenWithinTheBuffer) {
  const std::vector<int64_t> sizes = {5, 5, 5, 5};
  const std::vector<int64_t> streamed = webdataset_order(sizes, 1, 3, 0);
  // A buffer of one keeps each shard's samples in sequence: only the shards move.
  for (size_t k = 0; k < streamed.size(); ++k) {
    EXPECT_EQ(streamed[k] % 5, static_cast<int64_t>(k % 5)) << k;
  }
  std::vector<int64_t> identity(20);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(streamed, identity);
  const std::vector<int64_t> buffered = webdataset_order(sizes, 8, 3, 0);
  std::vector<int64_t> sorted = buffered;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, identity) << "a permutation";
  EXPECT_EQ(buffered, webdataset_order(sizes, 8, 3, 0));
  EXPECT_NE(buffered, webdataset_order(sizes, 8, 3, 1));
  // The first output is drawn once the buffer is full: from the first 9 samples streamed.
  const int64_t first_shard = streamed[0] / 5;
  EXPECT_TRUE(buffered[0] / 5 == first_shard || buffered[0] / 5 == streamed[5] / 5);
}

// --- detection ------------------------------------------------------------------------------

// A CIFAR-10 folder of 10 training images (5 batches of 2) and 3 test images.
std::string write_cifar_dir(const std::string& name) {
  const std::string dir = temp_path(name);
  fs::create_directories(dir);
  for (int b = 1; b <= 5; ++b) {
    write_bytes(dir + "/data_batch_" + std::to_string(b) + ".bin", cifar_batch(2, b));
  }
  write_bytes(dir + "/test_batch.bin", cifar_batch(3, 0));
  return dir;
}

TEST(OpenDataset, DetectsEachFormat) {
  const std::string tar_dir = temp_path("tar-data");
  write_shards(tar_dir + "/train");
  write_shards(tar_dir + "/val");
  EXPECT_EQ(detect_format(tar_dir), "tar");
  const LabDatasets tars = open_dataset({.data_dir = tar_dir, .image_size = 12});
  EXPECT_EQ(tars.train->size(), 12);
  EXPECT_EQ(tars.train_transform.mean.size(), 1u);

  const std::string packed_dir = temp_path("packed-data");
  fs::create_directories(packed_dir);
  for (const char* name : {"train.pack", "val.pack"}) {
    PackedWriter w(packed_dir + "/" + name, {.page_size = 4096, .classes = 2, .channels = 3});
    for (int i = 0; i < 4; ++i) w.add(random_image(i, 3).jpeg, i % 2);
    w.finish();
  }
  EXPECT_EQ(detect_format(packed_dir), "packed");
  EXPECT_EQ(open_dataset({.data_dir = packed_dir}).val->num_classes(), 2);
  EXPECT_THAT(error_of([&] { open_dataset({.data_dir = packed_dir, .format = "tar"}); }),
              HasSubstr("does not exist"));
  EXPECT_EQ(detect_format(kFashionMnistDir), "idx");

  const std::string cifar_dir = write_cifar_dir("cifar-data");
  EXPECT_EQ(detect_format(cifar_dir), "cifar10");
  const LabDatasets cifar = open_dataset({.data_dir = cifar_dir, .image_size = 32});
  EXPECT_EQ(cifar.train->size(), 10);
  EXPECT_EQ(cifar.val->channels(), 3);
  EXPECT_EQ(cifar.train->image(0).shape(), (Shape{32, 32, 3}));
  EXPECT_FLOAT_EQ(cifar.train_transform.mean[0], 0.4914f) << "CIFAR-10's own statistics";
}

TEST(OpenDataset, SubsetsAreEachSplitsFirstImages) {
  const std::string dir = write_cifar_dir("cifar-subsets");
  const LabDatasets whole = open_dataset({.data_dir = dir});
  const LabDatasets part = open_dataset({.data_dir = dir, .train_subset = 4, .test_subset = 2});
  ASSERT_EQ(part.train->size(), 4);
  ASSERT_EQ(part.val->size(), 2);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(part.train->label(i), whole.train->label(i));
    EXPECT_EQ(part.train->image(i).to_vector<uint8_t>(),
              whole.train->image(i).to_vector<uint8_t>());
  }
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(part.val->label(i), whole.val->label(i));
    EXPECT_EQ(part.val->image(i).to_vector<uint8_t>(), whole.val->image(i).to_vector<uint8_t>());
  }
  EXPECT_EQ(open_dataset({.data_dir = dir, .test_subset = 3}).train->size(), 10)
      << "a test subset leaves the training split whole";
  EXPECT_THAT(error_of([&] { open_dataset({.data_dir = dir, .test_subset = 4}); }),
              HasSubstr("--test-subset 4 is more than the 3 test images"));
  EXPECT_THAT(error_of([&] { open_dataset({.data_dir = dir, .train_subset = 11}); }),
              HasSubstr("--train-subset 11 is more than the 10 training images"));
  EXPECT_THAT(error_of([&] { open_dataset({.data_dir = dir, .test_subset = -1}); }),
              HasSubstr("must not be negative"));
}

}  // namespace
}  // namespace course
