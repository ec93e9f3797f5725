// X-macro lists of element types, for the explicit GPU instantiations in .cu files.
#pragma once

#include <cstdint>

#include "common/tensor/half.h"

#define COURSE_FLOAT_TYPES(M) M(float) M(::course::Half) M(::course::BFloat16)
#define COURSE_ALL_TYPES(M) COURSE_FLOAT_TYPES(M) M(int32_t) M(int64_t) M(uint8_t) M(int8_t)
