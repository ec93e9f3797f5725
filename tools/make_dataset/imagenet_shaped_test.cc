// make_dataset's ImageNet-shaped images: sides spread over 200-500 pixels, classes the source's
// times the tints with every tint drawn about equally often, JPEG qualities over 75-95, the
// tinted object present, every draw a function of the index alone, OpenCV decoding each JPEG
// at its size; a class count that is not a multiple of the source's is refused.
#include "tools/make_dataset/imagenet_shaped.h"

#include <gtest/gtest.h>

#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/data/memory_images.h"
#include "common/testing/errors_and_files.h"

namespace course {
namespace {

// 10 classes of 28 x 28 grey images: a bright square on black, as a garment on Fashion-MNIST's
// background, its place and size varying.
std::shared_ptr<const Dataset> squares(int64_t n) {
  Tensor images = Tensor::empty({n, 1, 28, 28}, DType::kU8);
  std::vector<int64_t> labels;
  uint8_t* p = images.data_as<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t first = 2 + i % 7, last = 20 + i % 6;
    for (int64_t y = 0; y < 28; ++y) {
      for (int64_t x = 0; x < 28; ++x) {
        p[i * 784 + y * 28 + x] = y >= first && y < last && x >= first && x < last ? 250 : 0;
      }
    }
    labels.push_back(i * 7 % 10);
  }
  return std::make_shared<MemoryImages>(LabelledImages{images, Tensor::from_vector(labels, {n})},
                                        10);
}

TEST(ImageNetShaped, SizesClassesAndQualitiesSpreadAsImageNets) {
  const int64_t n = 400;
  const auto source = squares(n);
  const ImageNetShaped data(source, 100);
  EXPECT_EQ(data.num_classes(), 100);
  EXPECT_EQ(data.channels(), 3);
  EXPECT_EQ(data.size(), n);
  int smallest = 1000, largest = 0, lowest_quality = 100, highest_quality = 0;
  std::map<int64_t, int> tints;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = data.label(i);
    ASSERT_EQ(label / 10, source->label(i)) << "image " << i;
    ++tints[label % 10];
    const int quality = ImageNetShaped::jpeg_quality(i);
    ASSERT_GE(quality, 75);
    ASSERT_LE(quality, 95);
    lowest_quality = std::min(lowest_quality, quality);
    highest_quality = std::max(highest_quality, quality);
    if (i % 8 != 0) continue;  // every eighth image drawn: the pixels cost time
    const Tensor image = data.image(i);
    ASSERT_EQ(image.dim(), 3);
    ASSERT_EQ(image.size(2), 3);
    for (const int64_t side : {image.size(0), image.size(1)}) {
      ASSERT_GE(side, 200);
      ASSERT_LE(side, 500);
      smallest = std::min<int>(smallest, static_cast<int>(side));
      largest = std::max<int>(largest, static_cast<int>(side));
    }
  }
  EXPECT_LT(smallest, 240);
  EXPECT_GT(largest, 460);
  EXPECT_LE(lowest_quality, 77);
  EXPECT_GE(highest_quality, 93);
  // 400 draws over 10 tints: 40 expected each; a tint outside 15-65 is 4 deviations away.
  ASSERT_EQ(tints.size(), 10u);
  for (const auto& [tint, count] : tints) {
    EXPECT_GE(count, 15) << "tint " << tint;
    EXPECT_LE(count, 65) << "tint " << tint;
  }
}

TEST(ImageNetShaped, TheObjectCarriesItsTintAndEveryDrawRepeats) {
  const ImageNetShaped data(squares(40), 1000);  // 100 tints
  for (int64_t i = 0; i < 40; i += 13) {
    const Tensor image = data.image(i), again = data.image(i);
    ASSERT_EQ(image.shape(), again.shape());
    EXPECT_EQ(image.to_vector<uint8_t>(), again.to_vector<uint8_t>()) << "image " << i;
    EXPECT_EQ(data.label(i), data.label(i));
    EXPECT_EQ(ImageNetShaped::jpeg_quality(i), ImageNetShaped::jpeg_quality(i));
    // The brightest pixels are the object's: their colour is the tint's hue at full strength,
    // so its largest channel is near 255 and (being a saturated hue) its smallest far below.
    cv::Mat rgb(static_cast<int>(image.size(0)), static_cast<int>(image.size(1)), CV_8UC3,
                image.data());
    int brightest = 0, dimmest_of_brightest = 255;
    for (int y = 0; y < rgb.rows; ++y) {
      for (int x = 0; x < rgb.cols; ++x) {
        const cv::Vec3b p = rgb.at<cv::Vec3b>(y, x);
        const int high = std::max({p[0], p[1], p[2]}), low = std::min({p[0], p[1], p[2]});
        if (high > brightest || (high == brightest && low < dimmest_of_brightest)) {
          brightest = high;
          dimmest_of_brightest = low;
        }
      }
    }
    EXPECT_GE(brightest, 240) << "image " << i;
    EXPECT_LE(dimmest_of_brightest, 120) << "image " << i;
    // Its JPEG, as make_dataset writes it, decodes at its size.
    std::vector<uint8_t> jpeg;
    cv::Mat bgr;
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    ASSERT_TRUE(cv::imencode(".jpg", bgr, jpeg,
                             {cv::IMWRITE_JPEG_QUALITY, ImageNetShaped::jpeg_quality(i)}));
    const cv::Mat decoded = cv::imdecode(jpeg, cv::IMREAD_COLOR);
    EXPECT_EQ(decoded.rows, rgb.rows);
    EXPECT_EQ(decoded.cols, rgb.cols);
  }
}

TEST(ImageNetShaped, RefusesClassesThatAreNoMultipleOfTheSources) {
  EXPECT_NE(testing::error_of([] {
              ImageNetShaped data(squares(4), 15);
            }).find("needs a multiple of the source's 10 classes, got 15"),
            std::string::npos);
}

}  // namespace
}  // namespace course
