// Crop boxes, the list of per-sample steps, and running it into normalised planes.
#include "common/data/transforms.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "common/core/error.h"

namespace course {

CropBox random_resized_crop_box(int width, int height, std::mt19937& rng, float min_scale,
                                float max_scale, float min_ratio, float max_ratio) {
  const double area = static_cast<double>(width) * height;
  std::uniform_real_distribution<double> scale(min_scale, max_scale);
  std::uniform_real_distribution<double> log_ratio(std::log(min_ratio), std::log(max_ratio));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * scale(rng);
    const double ratio = std::exp(log_ratio(rng));
    const int w = static_cast<int>(std::lround(std::sqrt(target * ratio)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / ratio)));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      const int x = std::uniform_int_distribution<int>(0, width - w)(rng);
      const int y = std::uniform_int_distribution<int>(0, height - h)(rng);
      return {x, y, w, h};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < min_ratio) {
    h = static_cast<int>(std::lround(w / min_ratio));
  } else if (in_ratio > max_ratio) {
    w = static_cast<int>(std::lround(h * max_ratio));
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

CropBox center_crop_box(int width, int height, float fraction) {
  COURSE_CHECK(fraction > 0.0f && fraction <= 1.0f, "crop fraction must be in (0, 1], got ",
               fraction);
  const int side = std::max(1, static_cast<int>(std::lround(std::min(width, height) * fraction)));
  return {(width - side) / 2, (height - side) / 2, side, side};
}

std::vector<ImageStep> compose(const TransformOptions& o) {
  std::vector<ImageStep> steps;
  const bool random_crop = o.train && o.random_crop, centre_crop = !o.train;
  const float fraction = o.eval_crop_fraction;
  const int side = static_cast<int>(o.size);
  steps.push_back(
      [random_crop, centre_crop, fraction, side](const cv::Mat& image, std::mt19937& rng) {
        CropBox box{0, 0, image.cols, image.rows};
        if (random_crop) box = random_resized_crop_box(image.cols, image.rows, rng);
        if (centre_crop) box = center_crop_box(image.cols, image.rows, fraction);
        const cv::Mat crop = image(cv::Rect(box.x, box.y, box.width, box.height));
        if (box.width == side && box.height == side) return crop;
        cv::Mat resized;
        cv::resize(crop, resized, cv::Size(side, side), 0, 0, cv::INTER_LINEAR);
        return resized;
      });
  if (!o.train) return steps;
  const JitterOptions jitter = o.jitter;
  const bool flip = o.flip;
  steps.push_back([jitter, flip](const cv::Mat& image, std::mt19937& rng) {
    return apply_jitter(image, draw_jitter(jitter, flip, rng));
  });
  if (o.policy.kind != AugmentPolicyKind::kNone) {
    const AugmentPolicy policy = o.policy;
    steps.push_back(
        [policy](const cv::Mat& image, std::mt19937& rng) { return augment(image, policy, rng); });
  }
  steps.insert(steps.end(), o.extra_steps.begin(), o.extra_steps.end());
  return steps;
}

void transform_image(const Tensor& pixels, const TransformOptions& o, std::mt19937& rng,
                     float* out) {
  transform_image(pixels, compose(o), o, rng, out);
}

void transform_image(const Tensor& pixels, const std::vector<ImageStep>& steps,
                     const TransformOptions& o, std::mt19937& rng, float* out) {
  COURSE_CHECK(pixels.dim() == 3 && pixels.dtype() == DType::kU8 && pixels.device().is_cpu(),
               "an image to transform must be (H, W, C) u8 on the CPU, got ", pixels.str());
  const int channels = static_cast<int>(pixels.size(2));
  COURSE_CHECK(static_cast<size_t>(channels) == o.mean.size() && o.mean.size() == o.std.size(),
               "an image of ", channels, " channels needs as many means and deviations, got ",
               o.mean.size());
  cv::Mat image(static_cast<int>(pixels.size(0)), static_cast<int>(pixels.size(1)),
                CV_8UC(channels), pixels.data());
  for (const ImageStep& step : steps) image = step(image, rng);
  const int side = static_cast<int>(o.size);
  COURSE_CHECK(image.rows == side && image.cols == side && image.channels() == channels &&
                   image.depth() == CV_8U,
               "the transforms' steps must keep ", side, " x ", side, " u8 images of ", channels,
               " channels");
  std::vector<cv::Mat> planes(channels);
  for (int c = 0; c < channels; ++c) {
    planes[c] = cv::Mat(side, side, CV_32FC1, out + static_cast<int64_t>(c) * side * side);
  }
  cv::Mat as_float;
  image.convertTo(as_float, CV_32F);
  std::vector<cv::Mat> split;
  cv::split(as_float, split);
  for (int c = 0; c < channels; ++c) {
    split[c].convertTo(planes[c], CV_32F, 1.0 / (255.0 * o.std[c]), -o.mean[c] / o.std[c]);
  }
}

}  // namespace course
