// The CPU weight gradient of a convolution with a small output plane, as one matrix product.
//
// dw (O, C K K) += dy (N OH OW, O)^T cols (N OH OW, C K K), where row (n, oh, ow) of `cols`
// holds the C K K input values under that output's window (zero in the padding). oneDNN 2.6's
// direct kernel spreads its work over the output plane and the batch, which leaves little for
// two threads when the plane is 2 x 2 (ResNet-18's last stage at 64 px, batch 32: 9.0 ms for
// 512 -> 512 channels, 67 GFLOP/s), where this one sgemm of K = N OH OW takes 2.7 ms. It also
// adds into the plain (O, C, K, K) gradient at once, where oneDNN's blocked result is reordered
// and added in two more passes. At 4 x 4 and larger oneDNN is faster
// (//bench:conv_weight_gradient_bench).
#include "common/kernels/conv2d.h"
#include "common/kernels/gemm.h"
#include "common/tensor/capture.h"

namespace course::detail {

bool gemm_weight_gradient_pays(const Shape& dy, Conv2dShape conv) {
  return conv.groups == 1 && dy[2] * dy[3] <= 4;
}

namespace {

// (N OH OW, C K K): each output position's window of the input, zero outside it.
Tensor window_rows(const Tensor& x, const Shape& dy, int64_t kernel, Conv2dShape conv) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t oh = dy[2], ow = dy[3], k = kernel;
  Tensor rows = Tensor::empty({n * oh * ow, c * k * k}, DType::kF32, x.device());
  const bool nhwc = is_channels_last(x);
  // Host work: replayed, not run at capture, when a CPU graph records the step.
  run_host_work([=, in = x.data_as<float>(), out = rows.data_as<float>()] {
#pragma omp parallel for
    for (int64_t r = 0; r < n * oh * ow; ++r) {
      const int64_t b = r / (oh * ow), i = r / ow % oh, j = r % ow;
      float* row = out + r * c * k * k;
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t ki = 0; ki < k; ++ki) {
          const int64_t y = i * conv.stride - conv.padding + ki;
          for (int64_t kj = 0; kj < k; ++kj) {
            const int64_t xx = j * conv.stride - conv.padding + kj;
            const bool inside = y >= 0 && y < h && xx >= 0 && xx < w;
            const int64_t at =
                nhwc ? ((b * h + y) * w + xx) * c + ch : ((b * c + ch) * h + y) * w + xx;
            row[(ch * k + ki) * k + kj] = inside ? in[at] : 0.0f;
          }
        }
      }
    }
  });
  return rows;
}

// dy as (N OH OW, O) rows: itself when channels-last, a transposed copy of each image's
// (O, OH OW) block when NCHW.
Tensor output_rows(const Tensor& dy) {
  const int64_t n = dy.size(0), o = dy.size(1), plane = dy.size(2) * dy.size(3);
  if (is_channels_last(dy)) return dy.view({n * plane, o}, MemoryFormat::kContiguous);
  Tensor rows = Tensor::empty({n * plane, o}, DType::kF32, dy.device());
  run_host_work([=, in = dy.data_as<float>(), out = rows.data_as<float>()] {
#pragma omp parallel for
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < o; ++ch) {
        for (int64_t p = 0; p < plane; ++p)
          out[(b * plane + p) * o + ch] = in[(b * o + ch) * plane + p];
      }
    }
  });
  return rows;
}

}  // namespace

void gemm_conv2d_backward_weights_add(const Tensor& dy, const Tensor& x, Tensor& dw,
                                      Conv2dShape conv) {
  const int64_t o = dw.size(0), kernel = dw.size(2);
  Tensor dw_rows = dw.view({o, dw.numel() / o});
  gemm(output_rows(dy), true, window_rows(x, dy.shape(), kernel, conv), false, dw_rows, 1.0f, 1.0f);
}

}  // namespace course::detail
