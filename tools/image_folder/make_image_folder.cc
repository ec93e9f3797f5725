// `bazel run //tools:make_image_folder -- --out DIR`: writes Fashion-MNIST (or random images)
// as an ImageFolder tree, DIR/{train,val}/<class>/<index>.<jpg|png>, resized to --size and in
// colour, so the ImageNet code path (decoding, RandomResizedCrop) can be run and timed
// without ImageNet.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/data/memory_images.h"
#include "common/data/synthetic_images.h"
#include "common/train/lab_flags.h"
#include "common/train/lab_main.h"

namespace {

using namespace course;
namespace fs = std::filesystem;

struct Options {
  std::string out;
  std::string source = "fashion-mnist";
  std::string data_dir = kFashionMnistDir;
  std::string format = "jpg";
  int64_t train_count = 1000, val_count = 200;
  int size = 64;
};

void write_split(const Dataset& images, int64_t count, const fs::path& dir, const Options& o) {
  COURSE_CHECK(count <= images.size(), "asked for ", count, " images, the source has ",
               images.size());
  for (int64_t c = 0; c < images.num_classes(); ++c)
    fs::create_directories(dir / std::to_string(c));
  for (int64_t i = 0; i < count; ++i) {
    const Tensor pixels = images.image(i);  // (H, W, C)
    const cv::Mat grey_or_colour(static_cast<int>(pixels.size(0)), static_cast<int>(pixels.size(1)),
                                 CV_8UC(static_cast<int>(pixels.size(2))), pixels.data());
    cv::Mat colour, resized;
    if (grey_or_colour.channels() == 1) {
      cv::cvtColor(grey_or_colour, colour, cv::COLOR_GRAY2BGR);
    } else {
      cv::cvtColor(grey_or_colour, colour, cv::COLOR_RGB2BGR);
    }
    cv::resize(colour, resized, cv::Size(o.size, o.size), 0, 0, cv::INTER_LINEAR);
    const fs::path file =
        dir / std::to_string(images.label(i)) / (std::to_string(i) + "." + o.format);
    COURSE_CHECK(cv::imwrite(file.string(), resized), "cannot write ", file.string());
  }
}

std::shared_ptr<Dataset> open_source(const Options& o, Split split) {
  if (o.source == "synthetic") {
    const int64_t n = split == Split::kTrain ? o.train_count : o.val_count;
    return std::make_shared<MemoryImages>(
        synthetic_images(n, 3, o.size, kFashionMnistClasses, split == Split::kTrain ? 1 : 2),
        kFashionMnistClasses);
  }
  return std::make_shared<MemoryImages>(load_fashion_mnist(o.data_dir, split),
                                        kFashionMnistClasses);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Write Fashion-MNIST or random images as an ImageFolder (train/ and val/)");
  app.add_option("--out", o.out, "folder to create")->required();
  app.add_option("--source", o.source)
      ->check(CLI::IsMember({"fashion-mnist", "synthetic"}))
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir, "Fashion-MNIST's folder")->capture_default_str();
  app.add_option("--format", o.format)->check(CLI::IsMember({"jpg", "png"}))->capture_default_str();
  app.add_option("--train", o.train_count, "training images")->capture_default_str();
  app.add_option("--val", o.val_count, "validation images")->capture_default_str();
  app.add_option("--size", o.size, "side of the written images")
      ->check(CLI::Range(8, 4096))
      ->capture_default_str();
  train::parse_or_exit(app, argc, argv);
  return train::lab_main([&] {
    COURSE_CHECK(o.train_count > 0 && o.val_count > 0, "--train and --val must be positive");
    write_split(*open_source(o, Split::kTrain), o.train_count, fs::path(o.out) / "train", o);
    write_split(*open_source(o, Split::kTest), o.val_count, fs::path(o.out) / "val", o);
    std::printf("wrote %lld + %lld %s images of %dx%d to %s\n",
                static_cast<long long>(o.train_count), static_cast<long long>(o.val_count),
                o.format.c_str(), o.size, o.size, o.out.c_str());
  });
}
