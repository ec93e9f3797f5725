// What a JPEG's markers say before any pixel is decoded, and where such a file can be decoded:
// the planning half of day 3's GPU data path. nvJPEG's hardware decoder (A100, H100, H200)
// takes baseline Huffman files in one scan without 4:1:0/4:1:1 chroma; its CUDA decoder takes
// baseline and progressive Huffman files of 1 or 3 components; everything else (CMYK/YCCK,
// arithmetic coding, 12-bit samples, lossless) is decoded on the host by OpenCV.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace course {

enum class JpegCoding { kBaseline, kExtended, kProgressive, kLossless, kArithmetic };

struct JpegHeader {
  int width = 0, height = 0, components = 0, precision = 0;
  JpegCoding coding = JpegCoding::kBaseline;
  int scans = 0;  // start-of-scan markers (1 for an interleaved baseline file)
  // The largest ratio of one component's horizontal sampling factor to another's: 1 for 4:4:4
  // and grey, 2 for 4:2:0 and 4:2:2, 4 for 4:1:1 and 4:1:0.
  int horizontal_subsampling = 1;
};

// Parses the markers from SOI to the end of the first scan's header and counts the scans;
// throws CorruptSampleError naming `name` when the bytes are not a JPEG or end too early.
JpegHeader read_jpeg_header(std::span<const uint8_t> bytes, const std::string& name);

enum class JpegDecoder { kHardware, kCuda, kHost };

// Where a file with this header is decoded; `hardware` says whether the GPU has a JPEG engine.
JpegDecoder choose_jpeg_decoder(const JpegHeader& header, bool hardware);

const char* jpeg_decoder_name(JpegDecoder decoder);  // "hardware", "CUDA", "host"

}  // namespace course
