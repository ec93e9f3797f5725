// The JPEG header walk and the decoder choice: files OpenCV writes (grey, colour 4:2:0,
// progressive), the same files with their frame marker or fields changed to what only the host
// decodes (12 bits, arithmetic coding, lossless, four components, 4:1:1), and broken bytes.
#include "common/data/jpeg_header.h"

#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "common/data/dataset.h"

namespace course {
namespace {

std::vector<uint8_t> jpeg_of(int height, int width, int channels, bool progressive = false,
                             int quality = 90) {
  cv::Mat image(height, width, CV_8UC(channels));
  cv::randu(image, 0, 256);
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(cv::imencode(
      ".jpg", image, bytes,
      {cv::IMWRITE_JPEG_QUALITY, quality, cv::IMWRITE_JPEG_PROGRESSIVE, progressive ? 1 : 0}));
  return bytes;
}

// The offset of the frame header's marker (FF C0..CF, not DHT/JPG/DAC).
size_t frame_marker(const std::vector<uint8_t>& bytes) {
  for (size_t i = 2; i + 1 < bytes.size(); ++i) {
    const uint8_t code = bytes[i + 1];
    if (bytes[i] == 0xFF && code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 &&
        code != 0xCC) {
      return i;
    }
  }
  ADD_FAILURE() << "no frame marker";
  return 0;
}

TEST(JpegHeader, ReadsWhatOpenCvWrote) {
  const JpegHeader grey = read_jpeg_header(jpeg_of(37, 261, 1), "grey");
  EXPECT_EQ(grey.width, 261);
  EXPECT_EQ(grey.height, 37);
  EXPECT_EQ(grey.components, 1);
  EXPECT_EQ(grey.precision, 8);
  EXPECT_EQ(grey.coding, JpegCoding::kBaseline);
  EXPECT_EQ(grey.scans, 1);
  EXPECT_EQ(grey.horizontal_subsampling, 1);

  const JpegHeader colour = read_jpeg_header(jpeg_of(480, 3, 3), "colour");
  EXPECT_EQ(colour.width, 3);
  EXPECT_EQ(colour.height, 480);
  EXPECT_EQ(colour.components, 3);
  EXPECT_EQ(colour.scans, 1);
  EXPECT_EQ(colour.horizontal_subsampling, 2);  // libjpeg's default 4:2:0

  const JpegHeader progressive = read_jpeg_header(jpeg_of(64, 65, 3, true), "progressive");
  EXPECT_EQ(progressive.coding, JpegCoding::kProgressive);
  EXPECT_GT(progressive.scans, 1);
}

TEST(JpegHeader, ChoosesTheDecoderEachFileNeeds) {
  const JpegHeader baseline = read_jpeg_header(jpeg_of(40, 50, 3), "baseline");
  EXPECT_EQ(choose_jpeg_decoder(baseline, true), JpegDecoder::kHardware);
  EXPECT_EQ(choose_jpeg_decoder(baseline, false), JpegDecoder::kCuda);
  const JpegHeader progressive = read_jpeg_header(jpeg_of(40, 50, 1, true), "progressive");
  EXPECT_EQ(choose_jpeg_decoder(progressive, true), JpegDecoder::kCuda);

  // The same baseline file changed field by field into what the GPU's decoders do not take.
  const std::vector<uint8_t> original = jpeg_of(40, 50, 3);
  const size_t sof = frame_marker(original);
  const auto changed = [&](size_t offset, uint8_t value) {
    std::vector<uint8_t> bytes = original;
    bytes[sof + offset] = value;
    return read_jpeg_header(bytes, "changed");
  };
  // FF Cn, length (2), precision, height (2), width (2), components, then 3 bytes a component.
  EXPECT_EQ(changed(1, 0xC1).coding, JpegCoding::kExtended);
  EXPECT_EQ(choose_jpeg_decoder(changed(1, 0xC1), true), JpegDecoder::kCuda);
  EXPECT_EQ(changed(1, 0xC9).coding, JpegCoding::kArithmetic);
  EXPECT_EQ(changed(1, 0xC3).coding, JpegCoding::kLossless);
  for (const uint8_t code : {0xC9, 0xC3, 0xCA, 0xC7}) {
    EXPECT_EQ(choose_jpeg_decoder(changed(1, code), true), JpegDecoder::kHost) << int(code);
  }
  EXPECT_EQ(changed(4, 12).precision, 12);
  EXPECT_EQ(choose_jpeg_decoder(changed(4, 12), true), JpegDecoder::kHost);
  // Luma sampled 4 x 1 against chroma 1 x 1: 4:1:1, which the hardware engine refuses.
  const JpegHeader yuv411 = changed(11, 0x41);
  EXPECT_EQ(yuv411.horizontal_subsampling, 4);
  EXPECT_EQ(choose_jpeg_decoder(yuv411, true), JpegDecoder::kCuda);

  JpegHeader cmyk = baseline;
  cmyk.components = 4;
  EXPECT_EQ(choose_jpeg_decoder(cmyk, true), JpegDecoder::kHost);
  EXPECT_STREQ(jpeg_decoder_name(JpegDecoder::kHardware), "hardware");
  EXPECT_STREQ(jpeg_decoder_name(JpegDecoder::kHost), "host");
}

TEST(JpegHeader, BrokenBytesAreCorruptSamplesNamed) {
  const std::vector<uint8_t> good = jpeg_of(30, 40, 3);
  const auto message = [](const std::vector<uint8_t>& bytes) -> std::string {
    try {
      read_jpeg_header(bytes, "photo.jpg");
    } catch (const CorruptSampleError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message({}).find("photo.jpg is not a readable JPEG: no start-of-image"),
            std::string::npos);
  const std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  EXPECT_NE(message(png).find("no start-of-image"), std::string::npos);
  const size_t sof = frame_marker(good);
  EXPECT_NE(message({good.begin(), good.begin() + static_cast<long>(sof) + 6}).find("ends inside"),
            std::string::npos);
  // Everything from the frame header on cut away: no frame.
  EXPECT_NE(message({good.begin(), good.begin() + static_cast<long>(sof)}).find("no frame header"),
            std::string::npos);
  std::vector<uint8_t> zero_width = good;
  zero_width[sof + 7] = zero_width[sof + 8] = 0;
  EXPECT_NE(message(zero_width).find("no pixels (0 x 30"), std::string::npos);
  std::vector<uint8_t> not_a_marker = good;
  not_a_marker[2] = 0x00;
  EXPECT_NE(message(not_a_marker).find("a marker was expected at byte 2"), std::string::npos);
}

}  // namespace
}  // namespace course
