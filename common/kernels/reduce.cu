// The reductions: the single-source reducers of reduce_ops.h dispatched, and their GPU
// instantiations.
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/linear.h"
#include "common/kernels/reduce.h"
#include "common/kernels/reduce_ops.h"
#include "common/kernels/type_lists.cuh"

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

float sum(const Tensor& x) {
  return visit_floating(x.dtype(), "sum", [&]<class T>() {
    return reduce_index(x.device(), x.numel(), ops::SumReducer<T>{x.data_as<T>()});
  });
}

float mean(const Tensor& x) {
  COURSE_CHECK(x.numel() > 0, "mean of an empty tensor");
  return sum(x) / static_cast<float>(x.numel());
}

float max(const Tensor& x) {
  COURSE_CHECK(x.numel() > 0, "max of an empty tensor");
  return visit_floating(x.dtype(), "max", [&]<class T>() {
    return reduce_index(x.device(), x.numel(), ops::MaxReducer<T>{x.data_as<T>()});
  });
}

int64_t argmax(const Tensor& x) {
  COURSE_CHECK(x.numel() > 0, "argmax of an empty tensor");
  COURSE_CHECK(x.memory_format() == MemoryFormat::kContiguous, "argmax of a channels-last tensor");
  return visit_floating(x.dtype(), "argmax", [&]<class T>() {
    return reduce_index(x.device(), x.numel(), ops::ArgMaxReducer<T>{x.data_as<T>()}).index;
  });
}

bool all_finite(const Tensor& x) {
  return visit_floating(x.dtype(), "all_finite", [&]<class T>() {
    return reduce_index(x.device(), x.numel(), ops::NonFiniteCount<T>{x.data_as<T>()}) == 0;
  });
}

void add_correct_(const Tensor& logits, const Tensor& labels, Tensor& count) {
  COURSE_CHECK(logits.dim() == 2 && labels.dtype() == DType::kI64 && labels.dim() == 1 &&
                   labels.size(0) == logits.size(0) && count.numel() == 1 &&
                   count.dtype() == DType::kF32,
               "add_correct_ needs (N, C) logits, (N,) i64 labels and a (1,) f32 count, got ",
               logits.str(), ", ", labels.str(), ", ", count.str());
  const int64_t rows = logits.size(0), cols = logits.size(1);
  Tensor flags = Tensor::empty({rows, 1}, DType::kF32, logits.device());
  visit_floating(logits.dtype(), "add_correct_", [&]<class T>() {
    for_each_index(logits.device(), rows,
                   ops::CorrectRowFlag<T>{logits.data_as<T>(), cols, labels.data_as<int64_t>(),
                                          flags.data_as<float>()},
                   cols);
  });
  Tensor counted = count.view({1});
  add_column_sums_(flags, counted);
}

Tensor argmax_rows(const Tensor& x) {
  COURSE_CHECK(x.dim() == 2 && x.size(1) > 0, "argmax_rows needs an (N, C) tensor with C > 0, got ",
               x.str());
  Tensor out = Tensor::empty({x.size(0)}, DType::kI64, x.device());
  visit_floating(x.dtype(), "argmax_rows", [&]<class T>() {
    for_each_index(x.device(), x.size(0),
                   ops::ArgMaxRows<T>{x.data_as<T>(), x.size(1), out.data_as<int64_t>()},
                   x.size(1));
  });
  return out;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define REDUCTIONS(T)                               \
  COURSE_INSTANTIATE_REDUCE(ops::SumReducer<T>)     \
  COURSE_INSTANTIATE_REDUCE(ops::MaxReducer<T>)     \
  COURSE_INSTANTIATE_REDUCE(ops::ArgMaxReducer<T>)  \
  COURSE_INSTANTIATE_REDUCE(ops::NonFiniteCount<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::ArgMaxRows<T>)   \
  COURSE_INSTANTIATE_FOR_EACH(ops::CorrectRowFlag<T>)
COURSE_FLOAT_TYPES(REDUCTIONS)

}  // namespace course
