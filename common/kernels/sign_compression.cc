// Dispatch of the 1-bit compression kernels, with their argument checks.
#include "common/kernels/sign_compression.h"

#include <algorithm>

#include "common/kernels/launch.h"
#include "common/kernels/sign_compression_ops.h"

namespace course {

namespace {

// bits (n / 8,) u8 and scales (n / chunk,) f32 on `device` describe n values in chunks.
void check_compressed(const Tensor& bits, const Tensor& scales, int64_t n, int64_t chunk,
                      Device device, const char* name) {
  COURSE_CHECK(chunk > 0 && chunk % 8 == 0 && n % chunk == 0, name, ": chunks of ", chunk,
               " elements must be a positive multiple of 8 dividing ", n);
  COURSE_CHECK(bits.dtype() == DType::kU8 && bits.numel() == n / 8 && bits.device() == device, name,
               ": the signs must be (", n / 8, ",) u8 on ", device.str(), ", got ", bits.str());
  COURSE_CHECK(
      scales.dtype() == DType::kF32 && scales.numel() == n / chunk && scales.device() == device,
      name, ": the scales must be (", n / chunk, ",) f32 on ", device.str(), ", got ",
      scales.str());
}

}  // namespace

void compress_signs_(const Tensor& x, Tensor& error, Tensor& bits, Tensor& scales, int64_t chunk,
                     int64_t valid) {
  COURSE_CHECK(x.dtype() == DType::kF32 && error.dtype() == DType::kF32 &&
                   error.numel() == x.numel() && error.device() == x.device(),
               "compress_signs_: x and its error must be f32 of one size on one device, got ",
               x.str(), " and ", error.str());
  check_compressed(bits, scales, x.numel(), chunk, x.device(), "compress_signs_");
  COURSE_CHECK(valid >= 0 && valid <= x.numel(), "compress_signs_: ", valid, " valid elements of ",
               x.numel());
  const int64_t chunks = x.numel() / chunk;
  const int64_t pieces = (chunk + ops::kSignPiece - 1) / ops::kSignPiece;
  Tensor partial = Tensor::empty({chunks * pieces}, DType::kF32, x.device());
  for_each_row(x.device(), chunks * pieces, std::min(chunk, ops::kSignPiece),
               ops::PieceMagnitudes{x.data_as<float>(), error.data_as<float>(),
                                    partial.data_as<float>(), chunk, pieces, valid});
  for_each_row(
      x.device(), chunks, pieces,
      ops::ChunkScales{partial.data_as<float>(), scales.data_as<float>(), chunk, pieces, valid});
  for_each_index(x.device(), x.numel() / 8,
                 ops::SignBytes{x.data_as<float>(), error.data_as<float>(), bits.data_as<uint8_t>(),
                                scales.data_as<float>(), chunk, valid},
                 8);
}

void average_signs(const Tensor& bits, const Tensor& scales, Tensor& out, int64_t chunk) {
  COURSE_CHECK(out.dtype() == DType::kF32 && out.numel() == chunk, "average_signs: out must be (",
               chunk, ",) f32, got ", out.str());
  check_compressed(bits, scales, scales.numel() * chunk, chunk, out.device(), "average_signs");
  for_each_index(out.device(), chunk,
                 ops::AverageSigns{bits.data_as<uint8_t>(), scales.data_as<float>(),
                                   out.data_as<float>(), chunk, static_cast<int>(scales.numel())},
                 scales.numel());
}

void expand_signs(const Tensor& bits, const Tensor& scales, Tensor& out, int64_t chunk) {
  COURSE_CHECK(out.dtype() == DType::kF32, "expand_signs: out must be f32, got ", out.str());
  check_compressed(bits, scales, out.numel(), chunk, out.device(), "expand_signs");
  for_each_index(out.device(), out.numel(),
                 ops::ExpandSigns{bits.data_as<uint8_t>(), scales.data_as<float>(),
                                  out.data_as<float>(), chunk});
}

}  // namespace course
