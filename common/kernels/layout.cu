// Memory-format conversion (NCHW <-> NHWC) dispatched by element size, the conversion that casts
// in the same pass (a convolution's compute weights), and the relaid f32 accumulation: the bodies
// (one for the CPU and the GPU), their dispatch and their GPU instantiations.
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/elementwise_ops.h"
#include "common/kernels/index4.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/layout.h"
#include "common/kernels/type_lists.cuh"

namespace course::ops {

// For each physical index i of the output (dense in `out` order), copies the element with the
// same logical (n, c, h, w) from the input, converted to To. A plain conversion moves words
// (To = From, an unsigned type of the element's size: one instantiation per element size serves
// every dtype); a cast moves floating values.
template <class To, class From>
struct Relayout {
  const From* in;
  To* out;
  int64_t channels, height, width;
  Strides4 in_strides;
  bool out_channels_last;

  COURSE_HD void operator()(int64_t i) const {
    int64_t n, c, h, w;
    if (out_channels_last) {  // i = ((n * H + h) * W + w) * C + c
      c = i % channels;
      w = (i / channels) % width;
      h = (i / (channels * width)) % height;
      n = i / (channels * width * height);
    } else {  // i = ((n * C + c) * H + h) * W + w
      w = i % width;
      h = (i / width) % height;
      c = (i / (width * height)) % channels;
      n = i / (width * height * channels);
    }
    out[i] = convert<To>(in[in_strides.at(n, c, h, w)]);
  }
};

// For each index i of a contiguous (N, C, H, W) f32 output: out[i] += the element of the same
// logical (n, c, h, w) of `in` (any floating type, either format). A convolution's weight
// gradient, computed in 16 bits in the convolution's layout, joins its f32 master gradient in
// this one pass (no relayout, cast and add apart).
template <class T>
struct AccumulateRelaid {
  const T* in;
  float* out;
  int64_t channels, height, width;
  Strides4 in_strides;

  COURSE_HD void operator()(int64_t i) const {
    const int64_t w = i % width, h = (i / width) % height;
    const int64_t c = (i / (width * height)) % channels, n = i / (width * height * channels);
    out[i] += static_cast<float>(in[in_strides.at(n, c, h, w)]);
  }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

template <class To, class From>
void relayout(const Tensor& x, Tensor& out) {
  const Dims4 d = dims4(x, "memory-format conversion");
  const bool to_channels_last = out.memory_format() == MemoryFormat::kChannelsLast;
  for_each_index(
      x.device(), x.numel(),
      ops::Relayout<To, From>{static_cast<const From*>(x.data()), static_cast<To*>(out.data()), d.c,
                              d.h, d.w, d.strides, to_channels_last});
}

}  // namespace

Tensor to_memory_format(const Tensor& x, MemoryFormat format) {
  if (x.memory_format() == format) return x;
  dims4(x, "memory-format conversion");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device(), format);
  switch (dtype_size(x.dtype())) {
    case 1:
      relayout<uint8_t, uint8_t>(x, out);
      break;
    case 2:
      relayout<uint16_t, uint16_t>(x, out);
      break;
    case 4:
      relayout<uint32_t, uint32_t>(x, out);
      break;
    case 8:
      relayout<uint64_t, uint64_t>(x, out);
      break;
    default:
      COURSE_FAIL("no relayout for ", dtype_name(x.dtype()));
  }
  return out;
}

Tensor to_dtype_and_format(const Tensor& x, DType dtype, MemoryFormat format) {
  if (x.dtype() == dtype) return to_memory_format(x, format);
  if (x.memory_format() == format) return cast(x, dtype);
  dims4(x, "cast and memory-format conversion");
  Tensor out = Tensor::empty(x.shape(), dtype, x.device(), format);
  visit_floating(x.dtype(), "cast and memory-format conversion", [&]<class From>() {
    visit_floating(dtype, "cast and memory-format conversion",
                   [&]<class To>() { relayout<To, From>(x, out); });
  });
  return out;
}

void accumulate_f32_(Tensor& out, const Tensor& x) {
  const Dims4 d = dims4(x, "accumulate_f32_");
  COURSE_CHECK(out.dtype() == DType::kF32 && out.shape() == x.shape() &&
                   out.memory_format() == MemoryFormat::kContiguous && out.device() == x.device(),
               "accumulate_f32_ adds ", x.str(), " into a contiguous f32 tensor of its shape on ",
               x.device().str(), ", got ", out.str());
  visit_floating(x.dtype(), "accumulate_f32_", [&]<class T>() {
    for_each_index(
        x.device(), x.numel(),
        ops::AccumulateRelaid<T>{x.data_as<T>(), out.data_as<float>(), d.c, d.h, d.w, d.strides});
  });
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define RELAYOUT_WORDS(W) COURSE_INSTANTIATE_FOR_EACH(course::ops::Relayout<W, W>)
RELAYOUT_WORDS(uint8_t)
RELAYOUT_WORDS(uint16_t)
RELAYOUT_WORDS(uint32_t)
RELAYOUT_WORDS(uint64_t)
#define RELAYOUT_CAST_TO(To, From) COURSE_INSTANTIATE_FOR_EACH(course::ops::Relayout<To, From>)
#define RELAYOUT_CAST_FROM(From)         \
  RELAYOUT_CAST_TO(float, From)          \
  RELAYOUT_CAST_TO(::course::Half, From) \
  RELAYOUT_CAST_TO(::course::BFloat16, From)
COURSE_FLOAT_TYPES(RELAYOUT_CAST_FROM)
#define ACCUMULATE_RELAID(T) COURSE_INSTANTIATE_FOR_EACH(course::ops::AccumulateRelaid<T>)
COURSE_FLOAT_TYPES(ACCUMULATE_RELAID)

}  // namespace course
