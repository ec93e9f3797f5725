// Tinting, scaling and placing each source image on a background of its own.
#include "tools/make_dataset/imagenet_shaped.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <random>

namespace course {

namespace {

// Image i's generator: the same draws wherever and whenever i is made.
std::mt19937 generator_of(int64_t index, uint32_t purpose) {
  std::seed_seq seeds{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), purpose};
  return std::mt19937(seeds);
}

// Tint t of `tints`: a hue around the colour wheel, fully saturated, as RGB in [0, 1].
cv::Vec3f tint_colour(int64_t tint, int64_t tints) {
  const float hue = 6.0f * static_cast<float>(tint) / static_cast<float>(tints);
  const float x = 1.0f - std::abs(std::fmod(hue, 2.0f) - 1.0f);
  const int sector = static_cast<int>(hue) % 6;
  const cv::Vec3f rgb[6] = {{1, x, 0}, {x, 1, 0}, {0, 1, x}, {0, x, 1}, {x, 0, 1}, {1, 0, x}};
  return rgb[sector];
}

}  // namespace

ImageNetShaped::ImageNetShaped(std::shared_ptr<const Dataset> source, int64_t classes)
    : source_(std::move(source)), classes_(classes) {
  COURSE_CHECK(classes > 0 && classes % source_->num_classes() == 0, "--imagenet-shaped needs a ",
               "multiple of the source's ", source_->num_classes(), " classes, got ", classes);
  tints_ = classes / source_->num_classes();
}

int64_t ImageNetShaped::label(int64_t index) const {
  std::mt19937 rng = generator_of(index, 1);
  return source_->label(index) * tints_ +
         std::uniform_int_distribution<int64_t>(0, tints_ - 1)(rng);
}

int ImageNetShaped::jpeg_quality(int64_t index) {
  std::mt19937 rng = generator_of(index, 2);
  return std::uniform_int_distribution<int>(75, 95)(rng);
}

Tensor ImageNetShaped::image(int64_t index) const {
  std::mt19937 rng = generator_of(index, 3);
  std::uniform_int_distribution<int> side(200, 500);
  const int width = side(rng), height = side(rng);
  // A smooth background: a few random colours upsampled, with grain.
  cv::RNG pixels_rng(rng());
  cv::Mat coarse(3, 4, CV_16SC3), background, grain(height, width, CV_16SC3);
  pixels_rng.fill(coarse, cv::RNG::UNIFORM, 0, 160);
  cv::resize(coarse, background, cv::Size(width, height), 0, 0, cv::INTER_CUBIC);
  pixels_rng.fill(grain, cv::RNG::NORMAL, 0, 12);
  background += grain;
  background.convertTo(background, CV_8UC3);
  // The source image, grey levels as the tint's strength, scaled to 40-90% of the shorter side.
  const Tensor source = source_->image(index);
  cv::Mat grey(static_cast<int>(source.size(0)), static_cast<int>(source.size(1)),
               CV_8UC(static_cast<int>(source.size(2))), source.data());
  if (grey.channels() == 3) cv::cvtColor(grey, grey, cv::COLOR_RGB2GRAY);
  const int object = static_cast<int>(std::min(width, height) *
                                      std::uniform_real_distribution<float>(0.4f, 0.9f)(rng));
  cv::Mat strength;
  cv::resize(grey, strength, cv::Size(object, object), 0, 0, cv::INTER_CUBIC);
  const int x = std::uniform_int_distribution<int>(0, width - object)(rng);
  const int y = std::uniform_int_distribution<int>(0, height - object)(rng);
  const cv::Vec3f tint = tint_colour(label(index) % tints_, tints_) * 255.0f;
  Tensor out = Tensor::empty({height, width, 3}, DType::kU8);
  cv::Mat rgb(height, width, CV_8UC3, out.data());
  background.copyTo(rgb);
  for (int r = 0; r < object; ++r) {
    for (int c = 0; c < object; ++c) {
      const float a = strength.at<uint8_t>(r, c) / 255.0f;
      cv::Vec3b& p = rgb.at<cv::Vec3b>(y + r, x + c);
      for (int k = 0; k < 3; ++k) p[k] = cv::saturate_cast<uint8_t>(a * tint[k] + (1 - a) * p[k]);
    }
  }
  return out;
}

}  // namespace course
