// GPU instantiations of the elementwise kernels (their bodies are in elementwise_ops.h).
#include "common/kernels/elementwise_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define POINTWISE(T, F)                               \
  COURSE_INSTANTIATE_FOR_EACH(PointwiseForward<T, F>) \
  COURSE_INSTANTIATE_FOR_EACH(PointwiseBackward<T, F>)
#define FLOAT_KERNELS(T)                        \
  COURSE_INSTANTIATE_FOR_EACH(Add<T>)           \
  COURSE_INSTANTIATE_FOR_EACH(Mul<T>)           \
  COURSE_INSTANTIATE_FOR_EACH(Axpy<T>)          \
  COURSE_INSTANTIATE_FOR_EACH(Scale<T>)         \
  COURSE_INSTANTIATE_FOR_EACH(ReluForward<T>)   \
  COURSE_INSTANTIATE_FOR_EACH(AddRelu<T>)       \
  COURSE_INSTANTIATE_FOR_EACH(ReluBackward<T>)  \
  POINTWISE(T, GeluTanh)                        \
  POINTWISE(T, Silu)                            \
  POINTWISE(T, Sigmoid)                         \
  POINTWISE(T, Tanh)                            \
  COURSE_INSTANTIATE_FOR_EACH(SwigluForward<T>) \
  COURSE_INSTANTIATE_FOR_EACH(SwigluBackward<T>)
COURSE_FLOAT_TYPES(FLOAT_KERNELS)

#define FILL(T) COURSE_INSTANTIATE_FOR_EACH(Fill<T>)
COURSE_ALL_TYPES(FILL)

// clang-format off
#define CAST_TO(To, From) COURSE_INSTANTIATE_FOR_EACH(Cast<To, From>)
#define CAST_FROM(From)                    \
  CAST_TO(float, From)                     \
  CAST_TO(::course::Half, From)            \
  CAST_TO(::course::BFloat16, From)        \
  CAST_TO(int32_t, From)                   \
  CAST_TO(int64_t, From)                   \
  CAST_TO(uint8_t, From)                   \
  CAST_TO(int8_t, From)
COURSE_ALL_TYPES(CAST_FROM)
// clang-format on
