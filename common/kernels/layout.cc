// Memory-format conversion, dispatched by element size, and the relaid f32 accumulation.
#include "common/kernels/layout.h"

#include <cstdint>

#include "common/kernels/index4.h"
#include "common/kernels/launch.h"
#include "common/kernels/layout_ops.h"

namespace course {

namespace {

template <class Word>
void relayout(const Tensor& x, Tensor& out) {
  const Dims4 d = dims4(x, "memory-format conversion");
  const bool to_channels_last = out.memory_format() == MemoryFormat::kChannelsLast;
  for_each_index(
      x.device(), x.numel(),
      ops::Relayout<Word>{static_cast<const Word*>(x.data()), static_cast<Word*>(out.data()), d.c,
                          d.h, d.w, d.strides, to_channels_last});
}

}  // namespace

Tensor to_memory_format(const Tensor& x, MemoryFormat format) {
  if (x.memory_format() == format) return x;
  dims4(x, "memory-format conversion");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device(), format);
  switch (dtype_size(x.dtype())) {
    case 1:
      relayout<uint8_t>(x, out);
      break;
    case 2:
      relayout<uint16_t>(x, out);
      break;
    case 4:
      relayout<uint32_t>(x, out);
      break;
    case 8:
      relayout<uint64_t>(x, out);
      break;
    default:
      COURSE_FAIL("no relayout for ", dtype_name(x.dtype()));
  }
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
