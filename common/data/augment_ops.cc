// The RandAugment operations with OpenCV: affine warps for the geometry, blends for the colour
// enhancements, per-channel lookup tables for the histogram operations.
#include "common/data/augment_ops.h"

#include <cmath>
#include <functional>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "common/core/error.h"

namespace course {

namespace {

// `matrix` maps output coordinates to input ones (x_in = M (x_out, y_out, 1)).
cv::Mat warp_from(const cv::Mat& image, const cv::Matx23d& matrix) {
  cv::Mat out;
  cv::warpAffine(image, out, matrix, image.size(), cv::INTER_NEAREST | cv::WARP_INVERSE_MAP,
                 cv::BORDER_CONSTANT, cv::Scalar::all(0));
  return out;
}

cv::Mat rotate(const cv::Mat& image, float degrees) {
  const cv::Point2f centre((image.cols - 1) * 0.5f, (image.rows - 1) * 0.5f);
  cv::Mat out;
  cv::warpAffine(image, out, cv::getRotationMatrix2D(centre, degrees, 1.0), image.size(),
                 cv::INTER_NEAREST, cv::BORDER_CONSTANT, cv::Scalar::all(0));
  return out;
}

// factor x + (1 - factor) other, rounded and saturated to u8.
cv::Mat blend(const cv::Mat& image, const cv::Mat& other, float factor) {
  cv::Mat out;
  cv::addWeighted(image, factor, other, 1.0 - factor, 0.0, out);
  return out;
}

cv::Mat grey_of(const cv::Mat& image) {
  if (image.channels() == 1) return image;
  cv::Mat grey;
  cv::cvtColor(image, grey, cv::COLOR_RGB2GRAY);
  return grey;
}

cv::Mat color(const cv::Mat& image, float factor) {
  if (image.channels() == 1) return image.clone();
  cv::Mat grey3;
  cv::cvtColor(grey_of(image), grey3, cv::COLOR_GRAY2RGB);
  return blend(image, grey3, factor);
}

cv::Mat contrast(const cv::Mat& image, float factor) {
  const double mean = cv::mean(grey_of(image))[0];
  cv::Mat out;
  image.convertTo(out, -1, factor, (1.0 - factor) * mean);
  return out;
}

cv::Mat sharpness(const cv::Mat& image, float factor) {
  cv::Mat blurred = image.clone();
  if (image.rows > 2 && image.cols > 2) {
    const cv::Matx33f kernel(1, 1, 1, 1, 5, 1, 1, 1, 1);
    cv::Mat smoothed;
    cv::filter2D(image, smoothed, -1, kernel * (1.0f / 13.0f));
    const cv::Rect inside(1, 1, image.cols - 2, image.rows - 2);
    smoothed(inside).copyTo(blurred(inside));
  }
  return blend(image, blurred, factor);
}

// Every channel through the table `make_table` builds from that channel.
cv::Mat per_channel_table(const cv::Mat& image,
                          const std::function<cv::Mat(const cv::Mat& channel)>& make_table) {
  std::vector<cv::Mat> channels;
  cv::split(image, channels);
  for (cv::Mat& c : channels) cv::LUT(c, make_table(c), c);
  cv::Mat out;
  cv::merge(channels, out);
  return out;
}

cv::Mat table_of(const std::function<int(int level)>& level_to) {
  cv::Mat table(1, 256, CV_8U);
  for (int level = 0; level < 256; ++level) {
    table.at<uint8_t>(level) = cv::saturate_cast<uint8_t>(level_to(level));
  }
  return table;
}

cv::Mat auto_contrast_table(const cv::Mat& channel) {
  double low = 0, high = 0;
  cv::minMaxLoc(channel, &low, &high);
  if (high <= low) return table_of([](int level) { return level; });
  return table_of([&](int level) {
    return static_cast<int>(std::lround((level - low) * 255.0 / (high - low)));
  });
}

// PIL's ImageOps.equalize: the cumulative histogram spread in steps of (pixels - count of the
// last occupied level) / 255; a channel with one level (or a zero step) is kept.
cv::Mat equalize_table(const cv::Mat& channel) {
  std::vector<int64_t> histogram(256, 0);
  for (int r = 0; r < channel.rows; ++r) {
    const uint8_t* row = channel.ptr<uint8_t>(r);
    for (int c = 0; c < channel.cols; ++c) ++histogram[row[c]];
  }
  int64_t last = 0, occupied = 0;
  for (const int64_t count : histogram) {
    if (count > 0) last = count, ++occupied;
  }
  const int64_t step = (static_cast<int64_t>(channel.total()) - last) / 255;
  if (occupied <= 1 || step == 0) return table_of([](int level) { return level; });
  std::vector<int> lut(256);
  int64_t running = step / 2;
  for (int level = 0; level < 256; ++level) {
    lut[level] = static_cast<int>(running / step);
    running += histogram[level];
  }
  return table_of([&](int level) { return lut[level]; });
}

}  // namespace

const char* augment_op_name(AugmentOp op) {
  switch (op) {
    case AugmentOp::kIdentity:
      return "Identity";
    case AugmentOp::kShearX:
      return "ShearX";
    case AugmentOp::kShearY:
      return "ShearY";
    case AugmentOp::kTranslateX:
      return "TranslateX";
    case AugmentOp::kTranslateY:
      return "TranslateY";
    case AugmentOp::kRotate:
      return "Rotate";
    case AugmentOp::kBrightness:
      return "Brightness";
    case AugmentOp::kColor:
      return "Color";
    case AugmentOp::kContrast:
      return "Contrast";
    case AugmentOp::kSharpness:
      return "Sharpness";
    case AugmentOp::kPosterize:
      return "Posterize";
    case AugmentOp::kSolarize:
      return "Solarize";
    case AugmentOp::kAutoContrast:
      return "AutoContrast";
    case AugmentOp::kEqualize:
      return "Equalize";
  }
  return "?";
}

cv::Mat apply_augment_op(const cv::Mat& image, AugmentOp op, float m) {
  COURSE_CHECK(image.type() == CV_8UC1 || image.type() == CV_8UC3,
               "augmentation needs an 8-bit image of 1 or 3 channels");
  switch (op) {
    case AugmentOp::kIdentity:
      return image.clone();
    case AugmentOp::kShearX:
      return warp_from(image, {1, m, 0, 0, 1, 0});
    case AugmentOp::kShearY:
      return warp_from(image, {1, 0, 0, m, 1, 0});
    case AugmentOp::kTranslateX:
      return warp_from(image, {1, 0, -std::trunc(m), 0, 1, 0});
    case AugmentOp::kTranslateY:
      return warp_from(image, {1, 0, 0, 0, 1, -std::trunc(m)});
    case AugmentOp::kRotate:
      return rotate(image, m);
    case AugmentOp::kBrightness:
      return blend(image, cv::Mat::zeros(image.size(), image.type()), m);
    case AugmentOp::kColor:
      return color(image, m);
    case AugmentOp::kContrast:
      return contrast(image, m);
    case AugmentOp::kSharpness:
      return sharpness(image, m);
    case AugmentOp::kPosterize: {
      const int bits = static_cast<int>(m);
      COURSE_CHECK(bits >= 0 && bits <= 8, "Posterize keeps 0 to 8 bits, got ", m);
      const int mask = (0xFF << (8 - bits)) & 0xFF;
      return per_channel_table(
          image, [&](const cv::Mat&) { return table_of([&](int level) { return level & mask; }); });
    }
    case AugmentOp::kSolarize:
      return per_channel_table(image, [&](const cv::Mat&) {
        return table_of([&](int level) { return level >= m ? 255 - level : level; });
      });
    case AugmentOp::kAutoContrast:
      return per_channel_table(image, auto_contrast_table);
    case AugmentOp::kEqualize:
      return per_channel_table(image, equalize_table);
  }
  COURSE_FAIL("unknown augmentation operation");
}

}  // namespace course
