// GPU back end of FusedConv. int8: the channels-last input's receptive fields (im2col_nhwc) times
// the weights in one cuBLASLt s8 x s8 -> s32 GEMM, then the epilogue rescales each output
// channel by input_scale * weight_scale[o], adds the bias and applies the ReLU. cuBLASLt's int8
// GEMM wants A transposed ("TN") and leading dimensions that are multiples of 4, so the
// reduction (K K C) and the output channels are padded to multiples of 4 with zeros; an i8
// output is that epilogue's result quantized at the output scale. f32: cuDNN's convolution in
// channels-last, then the same epilogue with unit scales.
#include "common/kernels/fused_conv.h"

#if COURSE_WITH_CUDA
#include <array>
#include <map>
#include <memory>
#include <vector>

#include "common/kernels/cublaslt_matmul.h"
#include "common/kernels/quantize.h"
#include "common/tensor/cuda_check.h"
#endif

namespace course::detail {

#if COURSE_WITH_CUDA
namespace {

int64_t round_up_to_4(int64_t n) { return (n + 3) / 4 * 4; }

// C (rows, P) i32 = A (rows, K) i8 times B (P, K) i8 transposed, all row-major: in cuBLASLt's
// column-major terms C^T (P x rows) = B^T^T (P x K) . A^T (K x rows), i.e. "TN". Planned once
// per thread and shape (cublaslt_matmul.h).
void int8_gemm(const Tensor& a, const Tensor& b, Tensor& c, Device device) {
  const int64_t rows = a.size(0), k = a.size(1), p = b.size(0);
  set_current_device(device);
  cublasLtHandle_t handle = cublaslt_handle(device);
  thread_local std::map<std::array<int64_t, 4>, std::unique_ptr<LtMatmul>> plans;
  std::unique_ptr<LtMatmul>& plan = plans[{device.index, rows, k, p}];
  if (!plan) {
    plan = std::make_unique<LtMatmul>(
        CUBLAS_COMPUTE_32I, CUDA_R_32I, LtMatmul::Layout{CUDA_R_8I, k, p, k},
        LtMatmul::Layout{CUDA_R_8I, k, rows, k}, LtMatmul::Layout{CUDA_R_32I, p, rows, p});
    plan->set(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
    plan->rank(handle);
  }
  LibraryWorkspace workspace(device);
  plan->take_workspace(workspace);
  const int32_t one = 1, zero = 0;
  plan->run(handle, &one, b.data(), a.data(), &zero, c.data(), workspace);
}

class CudaFusedConv : public FusedConv::Backend {
 public:
  CudaFusedConv(const FusedConvWeights& w, float input_scale, float output_scale, Device device)
      : output_scale_(output_scale),
        shape_(w.shape),
        relu_(w.relu),
        device_(device),
        weight_shape_(w.weight.shape()),
        bias_(w.bias.to(device)) {
    const int64_t out = w.weight.size(0), in = w.weight.size(1), k = w.weight.size(2);
    std::vector<float> scales(static_cast<size_t>(out), 1.0f);
    if (w.weight.dtype() == DType::kI8) {
      // (O, C, K, K) into rows of the GEMM's (P, columns): column (kh K + kw) C + c.
      columns_ = round_up_to_4(k * k * in);
      Tensor gemm = Tensor::empty({round_up_to_4(out), columns_}, DType::kI8);
      int8_t* to = gemm.data_as<int8_t>();
      std::fill(to, to + gemm.numel(), int8_t{0});
      const int8_t* from = w.weight.data_as<int8_t>();
      for (int64_t o = 0; o < out; ++o) {
        for (int64_t c = 0; c < in; ++c) {
          for (int64_t kk = 0; kk < k * k; ++kk) {
            to[o * columns_ + kk * in + c] = from[(o * in + c) * k * k + kk];
          }
        }
        scales[static_cast<size_t>(o)] = input_scale * w.scales.data_as<float>()[o];
      }
      weight_ = gemm.to(device);
    } else {
      weight_ = w.weight.to(device);
    }
    scales_ = Tensor::from_vector(scales, Shape{out}, device);
  }

  Tensor forward(const Tensor& x) override {
    const Shape y = conv2d_output_shape(x.shape(), weight_shape_, shape_);
    const int64_t out = weight_shape_[0];
    Tensor acc;
    if (x.dtype() == DType::kI8) {
      const Tensor cols = im2col_nhwc(x, weight_shape_[2], shape_, columns_);
      acc = Tensor::empty({cols.size(0), weight_.size(0)}, DType::kI32, device_);
      int8_gemm(cols, weight_, acc, device_);
    } else {
      acc = conv2d_forward(x, weight_, shape_)
                .view({y[0] * y[2] * y[3], out}, MemoryFormat::kContiguous);
    }
    const Tensor result =
        scale_bias_activation(acc, out, scales_, bias_, relu_).view(y, MemoryFormat::kChannelsLast);
    return output_scale_ > 0 ? quantize_symmetric(result, output_scale_) : result;
  }

 private:
  float output_scale_;
  Conv2dShape shape_;
  bool relu_;
  Device device_;
  Shape weight_shape_;
  Tensor weight_, scales_, bias_;
  int64_t columns_ = 0;
};

}  // namespace

std::unique_ptr<FusedConv::Backend> cuda_fused_conv(const FusedConvWeights& weights,
                                                    float input_scale, float output_scale,
                                                    Device device) {
  return std::make_unique<CudaFusedConv>(weights, input_scale, output_scale, device);
}
#else
std::unique_ptr<FusedConv::Backend> cuda_fused_conv(const FusedConvWeights&, float, float,
                                                    Device device) {
  COURSE_FAIL("FusedConv on ", device.str(), " in a build without CUDA");
}
#endif

}  // namespace course::detail
