// A marker walk over the JPEG's header (ITU T.81, annex B) and the decoder choice.
#include "common/data/jpeg_header.h"

#include <algorithm>

#include "common/data/dataset.h"

namespace course {

namespace {

class MarkerReader {
 public:
  MarkerReader(std::span<const uint8_t> bytes, const std::string& name)
      : bytes_(bytes), name_(name) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw CorruptSampleError(name_ + " is not a readable JPEG: " + why);
  }
  void need(size_t count) const {
    if (at_ + count > bytes_.size()) fail("it ends inside its header");
  }
  uint8_t byte() {
    need(1);
    return bytes_[at_++];
  }
  int word() {
    const int high = byte();
    return high << 8 | byte();
  }
  size_t at() const { return at_; }
  void skip(size_t count) {
    need(count);
    at_ += count;
  }
  // The next marker's code, after any fill bytes.
  uint8_t marker() {
    if (byte() != 0xFF) fail("a marker was expected at byte " + std::to_string(at_ - 1));
    uint8_t code = byte();
    while (code == 0xFF) code = byte();
    return code;
  }
  // Skips entropy-coded data up to the next marker that is not a restart or a stuffed 0xFF.
  void skip_entropy_data() {
    while (at_ + 1 < bytes_.size()) {
      if (bytes_[at_] == 0xFF && bytes_[at_ + 1] != 0 &&
          !(bytes_[at_ + 1] >= 0xD0 && bytes_[at_ + 1] <= 0xD7) && bytes_[at_ + 1] != 0xFF) {
        return;
      }
      ++at_;
    }
    at_ = bytes_.size();
  }
  bool done() const { return at_ >= bytes_.size(); }

 private:
  std::span<const uint8_t> bytes_;
  const std::string& name_;
  size_t at_ = 0;
};

void read_frame(MarkerReader& in, uint8_t code, JpegHeader& h) {
  const size_t end = in.at() + in.word();
  h.precision = in.byte();
  h.height = in.word();
  h.width = in.word();
  h.components = in.byte();
  if (h.width == 0 || h.height == 0 || h.components == 0) {
    in.fail("its frame has no pixels (" + std::to_string(h.width) + " x " +
            std::to_string(h.height) + ", " + std::to_string(h.components) + " components)");
  }
  int widest = 0, narrowest = 4;
  for (int c = 0; c < h.components; ++c) {
    in.skip(1);  // the component's id
    const int horizontal = in.byte() >> 4;
    in.skip(1);  // its quantisation table
    widest = std::max(widest, horizontal);
    narrowest = std::min(narrowest, std::max(horizontal, 1));
  }
  h.horizontal_subsampling = std::max(1, widest / narrowest);
  const int process = code & 0x0F;  // SOF0..SOF15 without DHT (0xC4), JPG (0xC8), DAC (0xCC)
  if (code >= 0xC9) {
    h.coding = JpegCoding::kArithmetic;
  } else if (process == 3 || process == 7) {
    h.coding = JpegCoding::kLossless;
  } else if (process == 2 || process == 6) {
    h.coding = JpegCoding::kProgressive;
  } else {
    h.coding = process == 0 ? JpegCoding::kBaseline : JpegCoding::kExtended;
  }
  in.skip(end - std::min(end, in.at()));
}

}  // namespace

JpegHeader read_jpeg_header(std::span<const uint8_t> bytes, const std::string& name) {
  MarkerReader in(bytes, name);
  if (bytes.size() < 2 || bytes[0] != 0xFF || bytes[1] != 0xD8) in.fail("no start-of-image marker");
  in.skip(2);
  JpegHeader h;
  bool frame = false;
  while (!in.done()) {
    const uint8_t code = in.marker();
    if (code == 0xD9) break;  // end of image
    if (code >= 0xD0 && code <= 0xD7) continue;
    if (code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC) {
      if (frame) in.fail("it has a second frame");
      read_frame(in, code, h);
      frame = true;
      continue;
    }
    const int length = in.word();
    if (length < 2) in.fail("a segment's length is " + std::to_string(length));
    in.skip(static_cast<size_t>(length) - 2);
    if (code == 0xDA) {  // start of scan: its entropy-coded data follows
      if (!frame) in.fail("a scan comes before the frame header");
      ++h.scans;
      in.skip_entropy_data();
    }
  }
  if (!frame) in.fail("it has no frame header");
  if (h.scans == 0) in.fail("it has no scan");
  return h;
}

JpegDecoder choose_jpeg_decoder(const JpegHeader& h, bool hardware) {
  const bool huffman_8bit =
      h.precision == 8 && (h.coding == JpegCoding::kBaseline || h.coding == JpegCoding::kExtended ||
                           h.coding == JpegCoding::kProgressive);
  if (!huffman_8bit || (h.components != 1 && h.components != 3)) return JpegDecoder::kHost;
  if (hardware && h.coding == JpegCoding::kBaseline && h.scans == 1 &&
      h.horizontal_subsampling < 4) {
    return JpegDecoder::kHardware;
  }
  return JpegDecoder::kCuda;
}

const char* jpeg_decoder_name(JpegDecoder decoder) {
  switch (decoder) {
    case JpegDecoder::kHardware:
      return "hardware";
    case JpegDecoder::kCuda:
      return "CUDA";
    case JpegDecoder::kHost:
      return "host";
  }
  return "?";
}

}  // namespace course
