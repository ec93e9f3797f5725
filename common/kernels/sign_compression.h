// 1-bit compression with error feedback, the arithmetic of 1-bit Adam and 1-bit LAMB's
// compressed all-reduce (common/parallel/data_parallel/compressed_allreduce.h); bodies in
// sign_compression.cu. A buffer is cut into chunks of `chunk` elements, a multiple of 8; a
// chunk travels as chunk / 8 bytes of signs and one f32 scale, 32 times fewer bytes than f32.
#pragma once

#include <cstdint>

#include "common/tensor/tensor.h"

namespace course {

// x (n,) f32 with n a multiple of chunk, error like x (updated in place), bits (n / 8,) u8 and
// scales (n / chunk,) f32 written: chunk c's scale is the mean |x + error| over its elements
// below `valid` (the rest is padding, left out and its error kept 0), each element's bit is
// whether x + error >= 0, and error becomes x + error - the compressed value.
void compress_signs_(const Tensor& x, Tensor& error, Tensor& bits, Tensor& scales, int64_t chunk,
                     int64_t valid);

// out (chunk,) f32 = the mean of `ranks` compressed copies of one chunk: bits (ranks chunk / 8,)
// u8 and scales (ranks,) f32, one copy after the other.
void average_signs(const Tensor& bits, const Tensor& scales, Tensor& out, int64_t chunk);

// out (n,) f32 = what compressed chunks stand for: scale times +-1 per element; bits (n / 8,) u8
// and scales (n / chunk,) f32.
void expand_signs(const Tensor& bits, const Tensor& scales, Tensor& out, int64_t chunk);

}  // namespace course
