// cuDNN back end of the GPU convolution. Per shape, once (a plan per thread, as the handle):
// descriptors in the activations' own layout, the filters too (a channels-last convolution
// describes its filters as NHWC/KRSC and passes the weights so, relaid here unless the caller
// passed them relaid, so cuDNN can pick its NHWC tensor-core kernels), the math the data type
// allows (common/kernels/math_mode.h), and the fastest algorithm of cuDNN's ranking that is usable
// and whose workspace can be had (common/kernels/algorithm_choice.h), chosen again if its workspace
// later cannot be. Grouped (depthwise) convolutions set cuDNN's group count on the same
// descriptors. Outputs are alpha * op + beta * output, so the weight gradient accumulates.
#include "common/kernels/conv2d.h"

#if COURSE_WITH_CUDA
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "common/kernels/algorithm_choice.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/kernels/library_handle.h"
#include "common/kernels/library_workspace.h"
#include "common/kernels/math_mode.h"
#include "common/tensor/allocator.h"
#include "common/tensor/capture.h"
#include "common/tensor/cuda_check.h"
#endif

namespace course::detail {

#if COURSE_WITH_CUDA
namespace {

cudnnDataType_t cudnn_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return CUDNN_DATA_FLOAT;
    case DType::kF16:
      return CUDNN_DATA_HALF;
    case DType::kBF16:
      return CUDNN_DATA_BFLOAT16;
    default:
      COURSE_FAIL("no cuDNN type for ", dtype_name(dtype));
  }
}

// f32 never computes in f16 (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION would let it).
cudnnMathType_t cudnn_math(DType dtype) {
  switch (library_math(dtype, tf32_switches().conv)) {
    case LibraryMath::kStrictF32:
      return CUDNN_FMA_MATH;
    case LibraryMath::kTf32:
      return CUDNN_DEFAULT_MATH;
    case LibraryMath::kTensorOp16:
      break;
  }
  return CUDNN_TENSOR_OP_MATH;
}

enum class Pass { kForward, kBackwardData, kBackwardFilter };

// The descriptors of one convolution shape.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  Descriptors(const Tensor& x_t, const Shape& w_shape, const Tensor& y_t, Conv2dShape shape) {
    const cudnnDataType_t type = cudnn_type(x_t.dtype());
    const cudnnTensorFormat_t format =
        is_channels_last(x_t) ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(x, format, type, x_t.size(0), x_t.size(1), x_t.size(2),
                                           x_t.size(3)));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(y, format, type, y_t.size(0), y_t.size(1), y_t.size(2),
                                           y_t.size(3)));
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, type, format, w_shape[0], w_shape[1], w_shape[2],
                                           w_shape[3]));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, shape.padding, shape.padding, shape.stride,
                                                shape.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv, cudnn_math(x_t.dtype())));
    // Filters stay (O, C / G, K, K); cuDNN reads the groups from the convolution.
    CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv, static_cast<int>(shape.groups)));
  }
  ~Descriptors() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

// cuDNN's candidates for one pass, fastest first, with their workspaces.
std::vector<AlgorithmCandidate> ranked_algorithms(cudnnHandle_t h, const Descriptors& d,
                                                  Pass pass) {
  std::vector<AlgorithmCandidate> out;
  int found = 0;
  const auto add = [&](int algorithm, cudnnStatus_t status, size_t bytes) {
    out.push_back({algorithm, status == CUDNN_STATUS_SUCCESS, bytes});
  };
  if (pass == Pass::kForward) {
    std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf;
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, perf.size(),
                                                       &found, perf.data()));
    for (int i = 0; i < found; ++i) add(perf[i].algo, perf[i].status, perf[i].memory);
  } else if (pass == Pass::kBackwardData) {
    std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf;
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, perf.size(),
                                                            &found, perf.data()));
    for (int i = 0; i < found; ++i) add(perf[i].algo, perf[i].status, perf[i].memory);
  } else {
    std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT> perf;
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, perf.size(),
                                                              &found, perf.data()));
    for (int i = 0; i < found; ++i) add(perf[i].algo, perf[i].status, perf[i].memory);
  }
  return out;
}

// What one shape and pass run with.
struct Plan {
  std::unique_ptr<Descriptors> descriptors;
  std::vector<AlgorithmCandidate> ranked;
  size_t chosen = 0;
};

using PlanKey = std::array<int64_t, 16>;

PlanKey plan_key(Pass pass, const Tensor& x, const Shape& w, Conv2dShape conv) {
  return {x.device().index,
          static_cast<int64_t>(pass),
          static_cast<int64_t>(x.dtype()),
          static_cast<int64_t>(x.memory_format()),
          static_cast<int64_t>(cudnn_math(x.dtype())),
          conv.stride,
          conv.padding,
          conv.groups,
          x.size(0),
          x.size(1),
          x.size(2),
          x.size(3),
          w[0],
          w[1],
          w[2],
          w[3]};
}

// The plan of this shape and pass, with a workspace for its algorithm in `workspace`: made on
// the first call, its choice redone when its workspace can no longer be had.
const Plan& plan_for(Pass pass, cudnnHandle_t handle, const Tensor& x, const Shape& w,
                     const Tensor& y, Conv2dShape conv, LibraryWorkspace& workspace) {
  thread_local std::map<PlanKey, Plan> plans;
  const PlanKey key = plan_key(pass, x, w, conv);
  auto it = plans.find(key);
  if (it != plans.end() && workspace.take(it->second.ranked[it->second.chosen].workspace_bytes)) {
    return it->second;
  }
  Plan plan;
  plan.descriptors = std::make_unique<Descriptors>(x, w, y, conv);
  plan.ranked = ranked_algorithms(handle, *plan.descriptors, pass);
  const std::optional<size_t> chosen =
      choose_algorithm(plan.ranked, [&](size_t bytes) { return workspace.take(bytes); });
  COURSE_CHECK(chosen.has_value(),
               "cuDNN has no usable convolution algorithm whose workspace fits "
               "for input ",
               x.str(), " and weights ", shape_str(w), " (", plan.ranked.size(), " candidates)");
  plan.chosen = *chosen;
  return plans[key] = std::move(plan);
}

int algorithm_of(const Plan& plan) { return plan.ranked[plan.chosen].algorithm; }

// The weights in the activations' layout: KRSC for a channels-last convolution (a copy only
// when the caller did not pass them so, as the layers do: conv2d_weight_format).
Tensor filters_like(const Tensor& w, const Tensor& activations) {
  return is_channels_last(activations) ? to_memory_format(w, MemoryFormat::kChannelsLast) : w;
}

}  // namespace

void cudnn_conv2d_forward(const Tensor& x, const Tensor& w, Tensor& y, Conv2dShape conv) {
  set_current_device(x.device());
  cudnnHandle_t handle = cudnn_handle(x.device());
  LibraryWorkspace workspace(x.device());
  const Plan& plan = plan_for(Pass::kForward, handle, x, w.shape(), y, conv, workspace);
  const Descriptors& d = *plan.descriptors;
  const Tensor filters = filters_like(w, x);
  const float alpha = 1.0f, beta = 0.0f;
  CUDNN_CHECK(cudnnConvolutionForward(handle, &alpha, d.x, x.data(), d.w, filters.data(), d.conv,
                                      static_cast<cudnnConvolutionFwdAlgo_t>(algorithm_of(plan)),
                                      workspace.data(), workspace.bytes(), &beta, d.y, y.data()));
}

void cudnn_conv2d_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, Conv2dShape conv) {
  set_current_device(dy.device());
  cudnnHandle_t handle = cudnn_handle(dy.device());
  LibraryWorkspace workspace(dy.device());
  const Plan& plan = plan_for(Pass::kBackwardData, handle, dx, w.shape(), dy, conv, workspace);
  const Descriptors& d = *plan.descriptors;
  const Tensor filters = filters_like(w, dx);
  const float alpha = 1.0f, beta = 0.0f;
  CUDNN_CHECK(
      cudnnConvolutionBackwardData(handle, &alpha, d.w, filters.data(), d.y, dy.data(), d.conv,
                                   static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm_of(plan)),
                                   workspace.data(), workspace.bytes(), &beta, d.x, dx.data()));
}

void cudnn_conv2d_backward_weights_add(const Tensor& dy, const Tensor& x, Tensor& dw,
                                       Conv2dShape conv) {
  set_current_device(x.device());
  cudnnHandle_t handle = cudnn_handle(x.device());
  LibraryWorkspace workspace(x.device());
  const Plan& plan = plan_for(Pass::kBackwardFilter, handle, x, dw.shape(), dy, conv, workspace);
  const Descriptors& d = *plan.descriptors;
  const bool nhwc = is_channels_last(x);
  // A channels-last convolution computes its KRSC gradient apart, and a 16-bit one with an f32
  // dw its gradient in 16 bits: written over (no zero fill), then added back to dw in OIHW.
  const bool apart = nhwc || dw.dtype() != x.dtype();
  Tensor target = apart ? Tensor::empty(dw.shape(), x.dtype(), dw.device(), x.memory_format()) : dw;
  const float alpha = 1.0f, beta = apart ? 0.0f : 1.0f;
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(
      handle, &alpha, d.x, x.data(), d.y, dy.data(), d.conv,
      static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm_of(plan)), workspace.data(),
      workspace.bytes(), &beta, d.w, target.data()));
  if (!apart) return;
  if (dw.dtype() == DType::kF32) {
    accumulate_f32_(dw, target);  // relayout, cast and add in one pass
  } else {
    axpy_(1.0f, to_memory_format(target, MemoryFormat::kContiguous), dw);
  }
}

#else

void cudnn_conv2d_forward(const Tensor& x, const Tensor&, Tensor&, Conv2dShape) {
  COURSE_FAIL("conv2d on ", x.device().str(), " in a build without CUDA");
}
void cudnn_conv2d_backward_data(const Tensor& dy, const Tensor&, Tensor&, Conv2dShape) {
  COURSE_FAIL("conv2d on ", dy.device().str(), " in a build without CUDA");
}
void cudnn_conv2d_backward_weights_add(const Tensor& dy, const Tensor&, Tensor&, Conv2dShape) {
  COURSE_FAIL("conv2d on ", dy.device().str(), " in a build without CUDA");
}

#endif

}  // namespace course::detail
