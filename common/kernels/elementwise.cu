// GPU instantiations of the elementwise kernels (their bodies are in elementwise_ops.h).
#include "common/kernels/elementwise_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define MAP(T, M)                                \
  COURSE_INSTANTIATE_FOR_EACH(MapElements<T, M>) \
  COURSE_INSTANTIATE_FOR_EACH(MapPackets<T, M>)
#define ACTIVATION(T, F)   \
  MAP(T, ActivationMap<F>) \
  MAP(T, ActivationGradMap<F>)
#define FLOAT_KERNELS(T)                        \
  MAP(T, AddMap)                                \
  MAP(T, MulMap)                                \
  MAP(T, AxpyMap)                               \
  MAP(T, ScaleMap)                              \
  MAP(T, ReluMap)                               \
  MAP(T, AddReluMap)                            \
  MAP(T, ReluGradMap)                           \
  ACTIVATION(T, GeluTanh)                       \
  ACTIVATION(T, Silu)                           \
  ACTIVATION(T, Sigmoid)                        \
  ACTIVATION(T, Tanh)                           \
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

#define CAST_PACKETS_TO(To, From) COURSE_INSTANTIATE_FOR_EACH(CastPackets<To, From>)
#define CAST_PACKETS_FROM(From)         \
  CAST_PACKETS_TO(float, From)          \
  CAST_PACKETS_TO(::course::Half, From) \
  CAST_PACKETS_TO(::course::BFloat16, From)
COURSE_FLOAT_TYPES(CAST_PACKETS_FROM)
