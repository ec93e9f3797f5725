// Reductions over whole tensors (results on the host) and per row.
#pragma once

#include <cstdint>
#include <vector>

#include "common/tensor/tensor.h"

namespace course {

float sum(const Tensor& x);  // accumulated in f32, in a thread-count-independent order
float mean(const Tensor& x);
float max(const Tensor& x);           // NaN if any element is NaN
int64_t argmax(const Tensor& x);      // flat index of the first largest element (contiguous x)
Tensor argmax_rows(const Tensor& x);  // (N, C) -> (N,) i64 on x's device
// count (1,) f32 += the rows of (N, C) logits whose largest value is at their (N,) i64 label,
// on the device (no host wait: read the count when it is reported).
void add_correct_(const Tensor& logits, const Tensor& labels, Tensor& count);
bool all_finite(const Tensor& x);  // no NaN and no infinity

}  // namespace course
