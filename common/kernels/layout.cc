// Memory-format conversion, dispatched by element size.
#include "common/kernels/layout.h"

#include <cstdint>

#include "common/kernels/launch.h"
#include "common/kernels/layout_ops.h"

namespace course {

namespace {

template <class Word>
void relayout(const Tensor& x, Tensor& out) {
  const auto& s = x.strides();
  for_each_index(x.device(), x.numel(),
                 ops::Relayout<Word>{static_cast<const Word*>(x.data()),
                                     static_cast<Word*>(out.data()),
                                     x.size(1),
                                     x.size(2),
                                     x.size(3),
                                     {s[0], s[1], s[2], s[3]},
                                     out.memory_format() == MemoryFormat::kChannelsLast});
}

}  // namespace

Tensor to_memory_format(const Tensor& x, MemoryFormat format) {
  if (x.memory_format() == format) return x;
  COURSE_CHECK(x.dim() == 4, "memory-format conversion needs a 4-D tensor, got ", x.str());
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

}  // namespace course
