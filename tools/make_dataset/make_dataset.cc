// `bazel run //tools:make_dataset -- --to tar --out DIR`: writes a dataset the labs can read
// (Fashion-MNIST by default, or any --from folder open_dataset reads: CIFAR-10, an ImageFolder,
// shards, packed files) in one of day 3's three storage formats:
//   folder  DIR/{train,val}/<class>/<index>.jpg      an ImageFolder of JPEG files
//   tar     DIR/{train,val}/shard-NNNNNN.tar         WebDataset shards (<key>.jpg + <key>.cls)
//   packed  DIR/{train,val}.pack                     pages of JPEG bytes or decoded pixels
// Grey images stay grey, unless --imagenet-shaped 100|1000 makes each one a colour image of
// 200-500 pixels a side at JPEG quality 75-95 in 100 or 1000 classes (imagenet_shaped.h). Every
// file is written under a temporary name and renamed when whole.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/data/open_dataset.h"
#include "common/data/packed_images.h"
#include "common/data/tar_shards.h"
#include "common/train/lab_flags.h"
#include "common/train/lab_main.h"
#include "tools/make_dataset/imagenet_shaped.h"

namespace {

using namespace course;
namespace fs = std::filesystem;

struct Options {
  std::string from = kFashionMnistDir;
  int64_t synthetic = 0;
  std::string out, to = "tar", encoding = "jpeg";
  int64_t train = 0, val = 0;  // 0: all
  int64_t shard_samples = 10000, shard_mb = 1024, page_kb = 8192;
  int quality = 90;
  int64_t imagenet_shaped = 0;  // classes; 0: the source's images as they are
};

// Image i's JPEG quality: --quality, or ImageNet-shaped's own spread.
int quality_of(const Options& o, int64_t index) {
  return o.imagenet_shaped > 0 ? ImageNetShaped::jpeg_quality(index) : o.quality;
}

std::vector<uint8_t> jpeg_of(const Tensor& image, int quality) {
  cv::Mat pixels(static_cast<int>(image.size(0)), static_cast<int>(image.size(1)),
                 CV_8UC(static_cast<int>(image.size(2))), image.data());
  cv::Mat bgr = pixels;
  if (pixels.channels() == 3) cv::cvtColor(pixels, bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> bytes;
  COURSE_CHECK(cv::imencode(".jpg", bgr, bytes, {cv::IMWRITE_JPEG_QUALITY, quality}),
               "cannot encode an image as JPEG");
  return bytes;
}

void make_folder(const fs::path& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  COURSE_CHECK(!error, "cannot create the folder ", dir.string(), ": ", error.message());
}

void write_file(const fs::path& path, const std::vector<uint8_t>& bytes) {
  const std::string temporary = path.string() + ".tmp";
  std::FILE* f = std::fopen(temporary.c_str(), "wb");
  COURSE_CHECK(f != nullptr && std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() &&
                   std::fclose(f) == 0,
               "cannot write ", path.string());
  std::error_code error;
  fs::rename(temporary, path, error);
  COURSE_CHECK(!error, "cannot rename ", temporary, ": ", error.message());
}

void write_split(const Dataset& data, int64_t limit, const std::string& split, const Options& o) {
  const int64_t n = limit > 0 ? std::min(limit, data.size()) : data.size();
  const fs::path out(o.out);
  char name[32];
  if (o.to == "folder") {
    // Every class's folder, even one this split has no image of: classes are the folders.
    for (int64_t c = 0; c < data.num_classes(); ++c) {
      std::snprintf(name, sizeof name, "%04lld", static_cast<long long>(c));
      make_folder(out / split / name);
    }
    for (int64_t i = 0; i < n; ++i) {
      std::snprintf(name, sizeof name, "%04lld", static_cast<long long>(data.label(i)));
      const fs::path dir = out / split / name;
      make_folder(dir);
      write_file(dir / (std::to_string(i) + ".jpg"), jpeg_of(data.image(i), quality_of(o, i)));
    }
  } else if (o.to == "tar") {
    make_folder(out / split);
    TarShardWriter shards((out / split).string(), "shard", o.shard_samples, o.shard_mb << 20);
    for (int64_t i = 0; i < n; ++i) {
      std::snprintf(name, sizeof name, "%08lld", static_cast<long long>(i));
      shards.add(name, jpeg_of(data.image(i), quality_of(o, i)), data.label(i));
    }
    shards.finish();
  } else {
    const Tensor first = data.image(0);
    const bool pixels = o.encoding == "pixels";
    PackedWriter packed((out / (split + ".pack")).string(),
                        {.encoding = pixels ? PackedEncoding::kPixels : PackedEncoding::kJpeg,
                         .page_size = o.page_kb << 10,
                         .classes = data.num_classes(),
                         .height = first.size(0),
                         .width = first.size(1),
                         .channels = first.size(2)});
    for (int64_t i = 0; i < n; ++i) {
      const Tensor image = data.image(i);
      COURSE_CHECK(!pixels || image.shape() == first.shape(),
                   "--encoding pixels needs images "
                   "of one shape: image ",
                   i, " is ", image.str(), ", the first ", first.str());
      packed.add(pixels ? image.to_vector<uint8_t>() : jpeg_of(image, quality_of(o, i)),
                 data.label(i));
    }
    packed.finish();
  }
  std::printf("%s: %lld images\n", split.c_str(), static_cast<long long>(n));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Write a dataset as an ImageFolder, WebDataset tar shards or a packed file");
  app.add_option("--from", o.from, "the source (any --data-dir the labs read)")
      ->capture_default_str();
  app.add_option("--synthetic", o.synthetic, "N random images instead of --from");
  app.add_option("--out", o.out, "folder to create")->required();
  app.add_option("--to", o.to, "storage format")
      ->check(CLI::IsMember({"folder", "tar", "packed"}))
      ->capture_default_str();
  app.add_option("--encoding", o.encoding, "packed: JPEG bytes or decoded pixels")
      ->check(CLI::IsMember({"jpeg", "pixels"}))
      ->capture_default_str();
  app.add_option("--train", o.train, "training images (0: all)");
  app.add_option("--val", o.val, "validation images (0: all)");
  app.add_option("--shard-samples", o.shard_samples, "tar: samples per shard")
      ->capture_default_str();
  app.add_option("--shard-mb", o.shard_mb, "tar: MiB per shard at most")->capture_default_str();
  app.add_option("--page-kb", o.page_kb, "packed: page size in KiB (a power of two)")
      ->capture_default_str();
  CLI::Option* quality = app.add_option("--quality", o.quality, "JPEG quality")
                             ->check(CLI::Range(1, 100))
                             ->capture_default_str();
  app.add_option("--imagenet-shaped", o.imagenet_shaped,
                 "CLASSES (a multiple of the source's, e.g. 100 or 1000): colour images of "
                 "200-500 px a side at JPEG quality 75-95, as ImageNet's are")
      ->check(CLI::PositiveNumber)
      ->excludes(quality);
  train::parse_or_exit(app, argc, argv);
  return train::lab_main([&] {
    COURSE_CHECK(o.train >= 0 && o.val >= 0, "--train and --val must not be negative");
    COURSE_CHECK(o.shard_samples > 0 && o.shard_mb > 0 && o.page_kb > 0,
                 "--shard-samples, --shard-mb and --page-kb must be positive");
    LabDatasets data = open_dataset({.data_dir = o.from, .synthetic = o.synthetic});
    if (o.imagenet_shaped > 0) {
      data.train = std::make_shared<ImageNetShaped>(data.train, o.imagenet_shaped);
      data.val = std::make_shared<ImageNetShaped>(data.val, o.imagenet_shaped);
    }
    make_folder(o.out);
    write_split(*data.train, o.train, "train", o);
    write_split(*data.val, o.val, "val", o);
  });
}
