// cuDNN back end of the GPU convolution: descriptors in the tensors' own layout (NCHW or
// NHWC), the heuristically best algorithm for each pass, and workspaces from the caching
// allocator. Outputs are alpha * op + beta * output, so the weight gradient accumulates (beta 1).
#include "common/kernels/conv2d.h"

#if COURSE_WITH_CUDA
#include "common/kernels/library_handle.h"
#include "common/tensor/allocator.h"
#include "common/tensor/capture.h"
#include "common/tensor/cuda_check.h"
#endif

namespace course::detail {

#if COURSE_WITH_CUDA
namespace {

// This thread's handle, issuing its work on the thread's current stream.
cudnnHandle_t cudnn_handle(Device device) {
  check_capture_device(device);
  cudnnHandle_t handle =
      thread_handle<cudnnHandle_t>(device, [](cudnnHandle_t* h) { CUDNN_CHECK(cudnnCreate(h)); });
  CUDNN_CHECK(cudnnSetStream(handle, static_cast<cudaStream_t>(current_cuda_stream())));
  return handle;
}

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

// RAII descriptors for one call.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  Descriptors(const Tensor& x_t, const Tensor& w_t, const Tensor& y_t, Conv2dShape shape) {
    const cudnnDataType_t type = cudnn_type(x_t.dtype());
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    set_activation(x, x_t, type);
    set_activation(y, y_t, type);
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, type, CUDNN_TENSOR_NCHW, w_t.size(0), w_t.size(1),
                                           w_t.size(2), w_t.size(3)));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, shape.padding, shape.padding, shape.stride,
                                                shape.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION));
  }
  ~Descriptors() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }

  static void set_activation(cudnnTensorDescriptor_t desc, const Tensor& t, cudnnDataType_t type) {
    const cudnnTensorFormat_t format =
        t.memory_format() == MemoryFormat::kChannelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(desc, format, type, t.size(0), t.size(1), t.size(2), t.size(3)));
  }
};

// A workspace from the device's caching allocator, returned when the call is done.
struct Workspace {
  CachingAllocator& allocator;
  void* data;
  Workspace(Device device, size_t bytes)
      : allocator(device_allocator(device)), data(allocator.allocate(bytes)) {}
  ~Workspace() { allocator.deallocate(data); }
};

}  // namespace

void cudnn_conv2d_forward(const Tensor& x, const Tensor& w, Tensor& y, Conv2dShape conv) {
  set_current_device(x.device());
  cudnnHandle_t handle = cudnn_handle(x.device());
  Descriptors d(x, w, y, conv);
  cudnnConvolutionFwdAlgoPerf_t perf;
  int found = 0;
  CUDNN_CHECK(
      cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.conv, d.y, 1, &found, &perf));
  size_t bytes = 0;
  CUDNN_CHECK(
      cudnnGetConvolutionForwardWorkspaceSize(handle, d.x, d.w, d.conv, d.y, perf.algo, &bytes));
  Workspace workspace(x.device(), bytes);
  const float alpha = 1.0f, beta = 0.0f;
  CUDNN_CHECK(cudnnConvolutionForward(handle, &alpha, d.x, x.data(), d.w, w.data(), d.conv,
                                      perf.algo, workspace.data, bytes, &beta, d.y, y.data()));
}

void cudnn_conv2d_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, Conv2dShape conv) {
  set_current_device(dy.device());
  cudnnHandle_t handle = cudnn_handle(dy.device());
  Descriptors d(dx, w, dy, conv);
  cudnnConvolutionBwdDataAlgoPerf_t perf;
  int found = 0;
  CUDNN_CHECK(
      cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d.w, d.y, d.conv, d.x, 1, &found, &perf));
  size_t bytes = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, d.w, d.y, d.conv, d.x, perf.algo,
                                                           &bytes));
  Workspace workspace(dy.device(), bytes);
  const float alpha = 1.0f, beta = 0.0f;
  CUDNN_CHECK(cudnnConvolutionBackwardData(handle, &alpha, d.w, w.data(), d.y, dy.data(), d.conv,
                                           perf.algo, workspace.data, bytes, &beta, d.x,
                                           dx.data()));
}

void cudnn_conv2d_backward_weights_add(const Tensor& dy, const Tensor& x, Tensor& dw,
                                       Conv2dShape conv) {
  set_current_device(x.device());
  cudnnHandle_t handle = cudnn_handle(x.device());
  Descriptors d(x, dw, dy, conv);
  cudnnConvolutionBwdFilterAlgoPerf_t perf;
  int found = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, d.x, d.y, d.conv, d.w, 1,
                                                            &found, &perf));
  size_t bytes = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, d.x, d.y, d.conv, d.w,
                                                             perf.algo, &bytes));
  Workspace workspace(x.device(), bytes);
  const float alpha = 1.0f, beta = 1.0f;
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, &alpha, d.x, x.data(), d.y, dy.data(), d.conv,
                                             perf.algo, workspace.data, bytes, &beta, d.w,
                                             dw.data()));
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
