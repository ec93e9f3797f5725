// LayerNorm and RMSNorm over the last dimension of a contiguous (rows, cols) tensor: the bodies
// (one for the CPU and the GPU), their dispatch (LayerNorm on a GPU through cuDNN's graph where
// it has an engine, cudnn_norms.h) and their GPU instantiations. Statistics in f32 whatever the
// activations' dtype, weight and bias f32. RMSNorm (Llama's) is LayerNorm without the centring:
// no mean subtracted, no bias, so one template serves both (kCentered). The forward and the
// input gradient are row kernels (row_lanes.h); the parameter gradients are column sums
// (column_sums_ops.h).
#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/column_sums.h"
#include "common/kernels/column_sums_ops.h"
#include "common/kernels/cudnn_norms.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/layer_norm.h"
#include "common/kernels/row_lanes.h"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/type_lists.cuh"

namespace course::ops {

// Row i: mean (LayerNorm) and r = 1/sqrt(var + eps), the variance about the mean (LayerNorm)
// or about 0 (RMSNorm: the mean square); then y = (x - mean) r w (+ b). RMSNorm leaves `mean`
// and `bias` null.
template <class T, bool kCentered>
struct NormForward {
  const T* x;
  const float* weight;
  const float* bias;
  T* y;
  float* mean;
  float* rstd;
  int64_t cols;
  float eps;
  template <class Lanes>
  COURSE_HD void operator()(int64_t i, const Lanes& lanes) const {
    const T* row = x + i * cols;
    const auto value = [row](int64_t j) { return static_cast<float>(row[j]); };
    float m = 0.0f;
    if constexpr (kCentered) m = lanes.sum(cols, value) / static_cast<float>(cols);
    const float squares = lanes.sum(cols, [&](int64_t j) {
      const float d = value(j) - m;
      return d * d;
    });
    const float r = 1.0f / sqrtf(squares / static_cast<float>(cols) + eps);
    lanes.for_each(cols, [&](int64_t j) {
      const float scaled = (value(j) - m) * r * weight[j];
      if constexpr (kCentered) {
        y[i * cols + j] = T(scaled + bias[j]);
      } else {
        y[i * cols + j] = T(scaled);
      }
    });
    if (lanes.first()) {
      if constexpr (kCentered) mean[i] = m;
      rstd[i] = r;
    }
  }
};

// Row i: with g = dy w and xhat = (x - mean) r, dx = r (g - mean_j(g) - xhat mean_j(g xhat));
// RMSNorm has no mean, and no mean_j(g) term.
template <class T, bool kCentered>
struct NormBackwardInput {
  const T* dy;
  const T* x;
  const float* weight;
  const float* mean;
  const float* rstd;
  T* dx;
  int64_t cols;
  template <class Lanes>
  COURSE_HD void operator()(int64_t i, const Lanes& lanes) const {
    const float m = kCentered ? mean[i] : 0.0f, r = rstd[i];
    const auto g = [&](int64_t j) { return static_cast<float>(dy[i * cols + j]) * weight[j]; };
    const auto xhat = [&](int64_t j) { return (static_cast<float>(x[i * cols + j]) - m) * r; };
    const FloatPair sums = lanes.sum_pair(cols, [&](int64_t j) {
      return FloatPair{kCentered ? g(j) : 0.0f, g(j) * xhat(j)};
    });
    const float g_mean = sums.first / static_cast<float>(cols);
    const float gx_mean = sums.second / static_cast<float>(cols);
    lanes.for_each(
        cols, [&](int64_t j) { dx[i * cols + j] = T(r * (g(j) - g_mean - xhat(j) * gx_mean)); });
  }
};

// The summands of the parameter gradients per column j (column_sums_ops.h adds them up):
// dweight[j] += dy[i, j] xhat[i, j], and LayerNorm's dbias[j] += dy[i, j].
template <class T, bool kCentered>
struct NormParamTerms {
  static constexpr int kSums = kCentered ? 2 : 1;
  const T* dy;
  const T* x;
  const float* mean;
  const float* rstd;
  int64_t cols;
  COURSE_HD void add(int64_t i, int64_t j, float* acc) const {
    const float d = static_cast<float>(dy[i * cols + j]);
    const float m = kCentered ? mean[i] : 0.0f;
    acc[0] += d * (static_cast<float>(x[i * cols + j]) - m) * rstd[i];
    if constexpr (kCentered) acc[1] += d;
  }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

// The parameters (weight, and LayerNorm's bias) or their gradients.
void check_parameters(const Tensor& x, std::initializer_list<const Tensor*> parameters) {
  COURSE_CHECK(x.dim() >= 1 && x.memory_format() == MemoryFormat::kContiguous,
               "normalisation needs a contiguous (..., C) input, got ", x.str());
  const int64_t c = x.size(-1);
  for (const Tensor* p : parameters) {
    COURSE_CHECK(
        p->dtype() == DType::kF32 && p->dim() == 1 && p->size(0) == c && p->device() == x.device(),
        "normalisation parameters must be (", c, ",) f32 on ", x.device().str(), ", got ",
        p->str());
  }
}

template <bool kCentered>
Tensor normalise_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                         LayerNormSaved& saved) {
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (kCentered) saved.mean = Tensor::empty({rows}, DType::kF32, x.device());
  saved.rstd = Tensor::empty({rows}, DType::kF32, x.device());
  visit_floating(x.dtype(), "normalisation forward", [&]<class T>() {
    for_each_row(x.device(), rows, cols,
                 ops::NormForward<T, kCentered>{x.data_as<T>(), weight.data_as<float>(),
                                                bias.data_or_null<float>(), y.data_as<T>(),
                                                saved.mean.data_or_null<float>(),
                                                saved.rstd.data_as<float>(), cols, eps});
  });
  return y;
}

template <bool kCentered>
Tensor normalise_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                          const LayerNormSaved& saved, Tensor& weight_grad, Tensor* bias_grad) {
  check_same(dy, x, "normalisation backward");
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  const float* mean = saved.mean.data_or_null<float>();
  visit_floating(x.dtype(), "normalisation backward", [&]<class T>() {
    for_each_row(x.device(), rows, cols,
                 ops::NormBackwardInput<T, kCentered>{
                     dy.data_as<T>(), x.data_as<T>(), weight.data_as<float>(), mean,
                     saved.rstd.data_as<float>(), dx.data_as<T>(), cols});
    const ops::NormParamTerms<T, kCentered> terms{dy.data_as<T>(), x.data_as<T>(), mean,
                                                  saved.rstd.data_as<float>(), cols};
    if constexpr (kCentered) {
      add_column_sums(x.device(), terms, rows, cols,
                      {weight_grad.data_as<float>(), bias_grad->data_as<float>()});
    } else {
      add_column_sums(x.device(), terms, rows, cols, {weight_grad.data_as<float>()});
    }
  });
  return dx;
}

}  // namespace

Tensor layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                          LayerNormSaved& saved) {
  check_parameters(x, {&weight, &bias});
  Tensor y;
  if (cudnn_layer_norm_forward(x, weight, bias, eps, y, saved.mean, saved.rstd)) return y;
  return normalise_forward<true>(x, weight, bias, eps, saved);
}

Tensor layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                           const LayerNormSaved& saved, Tensor& weight_grad, Tensor& bias_grad) {
  check_parameters(x, {&weight_grad, &bias_grad});
  check_same(dy, x, "normalisation backward");
  Tensor dx, dweight, dbias;
  if (cudnn_layer_norm_backward(dy, x, weight, saved.mean, saved.rstd, dx, dweight, dbias)) {
    axpy_(1.0f, dweight, weight_grad);
    axpy_(1.0f, dbias, bias_grad);
    return dx;
  }
  return normalise_backward<true>(dy, x, weight, saved, weight_grad, &bias_grad);
}

Tensor rms_norm_forward(const Tensor& x, const Tensor& weight, float eps, LayerNormSaved& saved) {
  check_parameters(x, {&weight});
  return normalise_forward<false>(x, weight, Tensor(), eps, saved);
}

Tensor rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                         const LayerNormSaved& saved, Tensor& weight_grad) {
  check_parameters(x, {&weight_grad});
  return normalise_backward<false>(dy, x, weight, saved, weight_grad, nullptr);
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define NORMALISATION(T, CENTERED)                                     \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::NormForward<T, CENTERED>)       \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::NormBackwardInput<T, CENTERED>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::ChunkColumnSums<ops::NormParamTerms<T, CENTERED>>)
#define LAYER_NORM(T) NORMALISATION(T, true)
#define RMS_NORM(T) NORMALISATION(T, false)
COURSE_FLOAT_TYPES(LAYER_NORM)
COURSE_FLOAT_TYPES(RMS_NORM)

}  // namespace course
