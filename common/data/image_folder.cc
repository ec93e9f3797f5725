// Scanning class folders and decoding images with OpenCV.
#include "common/data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace course {

namespace {

namespace fs = std::filesystem;

std::string lower_extension(const fs::path& file) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

bool is_jpeg(const fs::path& file) {
  const std::string ext = lower_extension(file);
  return ext == ".jpg" || ext == ".jpeg";
}

bool is_image(const fs::path& file) {
  const std::string ext = lower_extension(file);
  return is_jpeg(file) || ext == ".png" || ext == ".bmp";
}

}  // namespace

ImageFolder::ImageFolder(const std::string& root) {
  std::error_code error;
  COURSE_CHECK(fs::is_directory(root, error), "image folder ", root,
               " does not exist or is not a directory");
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) classes_.push_back(entry.path().filename().string());
  }
  COURSE_CHECK(!classes_.empty(), "image folder ", root,
               " has no classes (expected one sub-folder of images per class)");
  std::sort(classes_.begin(), classes_.end());
  for (size_t c = 0; c < classes_.size(); ++c) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(fs::path(root) / classes_[c])) {
      if (entry.is_regular_file() && is_image(entry.path())) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      files_.push_back(std::move(f));
      labels_.push_back(static_cast<int64_t>(c));
    }
  }
  COURSE_CHECK(!files_.empty(), "image folder ", root, " has ", classes_.size(),
               " class folder(s) but no .jpg/.jpeg/.png/.bmp images");
}

Tensor ImageFolder::image(int64_t index) const {
  const cv::Mat bgr = cv::imread(files_[index], cv::IMREAD_COLOR);
  if (bgr.empty()) throw CorruptSampleError("cannot read or decode image " + files_[index]);
  Tensor rgb = Tensor::empty({bgr.rows, bgr.cols, 3}, DType::kU8);
  cv::Mat out(bgr.rows, bgr.cols, CV_8UC3, rgb.data());
  cv::cvtColor(bgr, out, cv::COLOR_BGR2RGB);
  return rgb;
}

std::optional<Dataset::Encoded> ImageFolder::encoded(int64_t index) const {
  if (!is_jpeg(files_[index])) return std::nullopt;
  std::ifstream in(files_[index], std::ios::binary);
  if (!in) throw CorruptSampleError("cannot read image " + files_[index]);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) throw CorruptSampleError("cannot read image " + files_[index]);
  return Encoded{std::move(bytes), files_[index]};
}

}  // namespace course
