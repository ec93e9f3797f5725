// Element types of tensors, their sizes and names, and the C++ type behind each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/core/error.h"
#include "common/tensor/half.h"

namespace course {

enum class DType { kF32, kF16, kBF16, kI32, kI64, kU8, kI8 };

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);  // "f32", "f16", "bf16", "i32", "i64", "u8", "i8"
DType parse_dtype(std::string_view name);  // inverse of dtype_name; throws on anything else
bool is_floating(DType dtype);

template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOf<Half> {
  static constexpr DType value = DType::kF16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::kBF16;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kI32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kI64;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kU8;
};
template <>
struct DTypeOf<int8_t> {  // quantized values (day 4's int8 inference)
  static constexpr DType value = DType::kI8;
};

// Calls fn.template operator()<T>() with T the C++ type of `dtype`, for the floating-point
// dtypes; any other dtype is an error naming `op`.
template <class Fn>
decltype(auto) visit_floating(DType dtype, std::string_view op, Fn&& fn) {
  switch (dtype) {
    case DType::kF32:
      return fn.template operator()<float>();
    case DType::kF16:
      return fn.template operator()<Half>();
    case DType::kBF16:
      return fn.template operator()<BFloat16>();
    default:
      COURSE_FAIL(op, " needs a floating-point tensor, got ", dtype_name(dtype));
  }
}

// The same for every dtype.
template <class Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kI32:
      return fn.template operator()<int32_t>();
    case DType::kI64:
      return fn.template operator()<int64_t>();
    case DType::kU8:
      return fn.template operator()<uint8_t>();
    case DType::kI8:
      return fn.template operator()<int8_t>();
    default:
      return visit_floating(dtype, "visit_dtype", fn);
  }
}

}  // namespace course
