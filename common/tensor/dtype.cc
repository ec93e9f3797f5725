// Names and sizes of the element types.
#include "common/tensor/dtype.h"

namespace course {

size_t dtype_size(DType dtype) {
  return visit_dtype(dtype, []<class T>() { return sizeof(T); });
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kU8:
      return "u8";
    case DType::kI8:
      return "i8";
  }
  return "unknown";
}

DType parse_dtype(std::string_view name) {
  for (DType d :
       {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kU8, DType::kI8}) {
    if (dtype_name(d) == name) return d;
  }
  COURSE_FAIL("unknown dtype '", name, "' (expected f32, f16, bf16, i32, i64, u8 or i8)");
}

bool is_floating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

}  // namespace course
