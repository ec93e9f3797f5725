// Batch normalisation (and its fused ReLU): the single-source kernels of batch_norm_ops.h
// dispatched, or on a GPU cuDNN's graph where it has an engine (cudnn_norms.h; not for synchronised
// batch norm, whose sums cross the ranks between the passes), and the kernels' GPU instantiations.
#include <array>
#include <cstdint>
#include <type_traits>

#include "common/kernels/batch_norm.h"
#include "common/kernels/batch_norm_ops.h"
#include "common/kernels/channel_map_ops.h"
#include "common/kernels/column_sums.h"
#include "common/kernels/column_sums_ops.h"
#include "common/kernels/cudnn_norms.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/index4.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/type_lists.cuh"

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

ops::ChannelLoop channel_loop(const Tensor& x, const Tensor& gamma) {
  const Dims4 d = dims4(x, "batch norm");
  COURSE_CHECK(
      gamma.dtype() == DType::kF32 && gamma.shape() == Shape{d.c} && gamma.device() == x.device(),
      "batch norm of ", x.str(), " needs f32 (", d.c, ",) parameters on ", x.device().str(),
      ", got ", gamma.str());
  COURSE_CHECK(d.n * d.h * d.w > 0, "batch norm over an empty batch");
  return {d.n, d.c, d.h * d.w, x.memory_format() == MemoryFormat::kChannelsLast};
}

Tensor channel_vector(const Tensor& x) {
  return Tensor::empty({x.size(1)}, DType::kF32, x.device());
}

// totals[s][ch] = the sum of Terms' s-th summand over channel ch's values of x. NCHW: one
// partial sum per (sample, channel) plane, then per channel over the samples, in sample order.
// NHWC: the column sums of the (N*H*W pixels, C channels) matrix, in chunks of pixels (a chunk
// per sample would leave N*C threads each adding H*W values: 8,192 threads for ResNet-50's
// stem, a few percent of a GPU).
template <class Terms>
void channel_sums(const Tensor& x, const ops::ChannelLoop& loop, const Terms& terms,
                  const std::array<Tensor*, Terms::kSums>& totals) {
  const Device device = x.device();
  // The finishing pass writes every total (the batch is never empty): no zero fill first.
  std::array<float*, Terms::kSums> outs;
  for (int s = 0; s < Terms::kSums; ++s) {
    Tensor& total = *totals[s];
    total = Tensor::empty({loop.c}, DType::kF32, device);
    outs[s] = total.data_as<float>();
  }
  if (loop.channels_last) {
    add_column_sums(device, ops::PixelColumns<Terms>{terms, loop.c}, loop.n * loop.hw, loop.c, outs,
                    /*accumulate=*/false);
    return;
  }
  Tensor partial = Tensor::empty({loop.n, Terms::kSums, loop.c}, DType::kF32, device);
  float* p = partial.data_as<float>();
  for_each_row(device, loop.n * loop.c, loop.hw, ops::PlaneSums<Terms>{terms, loop.c, loop.hw, p});
  add_chunk_sums<Terms::kSums>(device, p, loop.n, loop.c, outs, /*accumulate=*/false);
}

// out = map(channel, a, b) elementwise, over dense tensors of x's layout: 16-byte packets for
// NCHW on a GPU when every operand is aligned to them, else the row kernel (channel_map_ops.h
// says why).
template <class T, class Map>
void map_channels(const Tensor& a, const Tensor& b, const Tensor& out, const ops::ChannelLoop& loop,
                  const Map& map) {
  const Device device = a.device();
  const T* pa = a.data_as<T>();
  const T* pb = b.data_as<T>();
  T* pout = out.data_as<T>();
  if (runs_on_host(device) || loop.channels_last || !ops::packet_aligned(pa) ||
      !ops::packet_aligned(pb) || !ops::packet_aligned(pout)) {
    for_each_row(device, loop.rows(), loop.row_length(),
                 ops::ChannelRows<T, Map>{pa, pb, pout, loop, map});
    return;
  }
  const ops::ChannelPackets<T, Map> packets{pa, pb, pout, loop, map};
  for_each_index(device, packets.packets(), packets, packets.kSize);
}

Tensor normalise(const Tensor& x, const ops::ChannelLoop& loop, const Tensor& mean,
                 const Tensor& invstd, const Tensor& gamma, const Tensor& beta,
                 BatchNormActivation activation) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device(), x.memory_format());
  const ops::Normalise norm{mean.data_as<float>(), invstd.data_as<float>(), gamma.data_as<float>(),
                            beta.data_as<float>(), activation == BatchNormActivation::kRelu};
  visit_floating(x.dtype(), "batch norm", [&]<class T>() { map_channels<T>(x, x, y, loop, norm); });
  return y;
}

}  // namespace

Tensor batch_norm_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                        Tensor& running_mean, Tensor& running_var, float momentum, float eps,
                        BatchNormSaved& saved, const ChannelSumReducer& reduce,
                        BatchNormActivation activation) {
  const ops::ChannelLoop loop = channel_loop(x, gamma);
  check_same(gamma, beta, "batch norm parameters");
  check_same(gamma, running_mean, "batch norm running mean");
  check_same(gamma, running_var, "batch norm running variance");
  const bool relu = activation == BatchNormActivation::kRelu;
  BatchNormForward cudnn;
  if (!reduce && cudnn_batch_norm_forward(x, gamma, beta, running_mean, running_var, momentum, eps,
                                          relu, cudnn)) {
    for_each_index(
        x.device(), loop.c,
        ops::TakeRunningStats{cudnn.next_running_mean.data_as<float>(),
                              cudnn.next_running_var.data_as<float>(),
                              running_mean.data_as<float>(), running_var.data_as<float>()});
    saved = {cudnn.mean, cudnn.invstd, loop.count(), activation};
    return cudnn.y;
  }
  saved = {Tensor(), channel_vector(x), loop.count(), activation};
  Tensor squares;
  const Device device = x.device();
  visit_floating(x.dtype(), "batch norm", [&]<class T>() {
    channel_sums(x, loop, ops::ChannelValues<T>{x.data_as<T>()}, {&saved.mean});
    if (reduce) saved.count = reduce({&saved.mean}, loop.count());
    for_each_index(device, loop.c,
                   ops::DivideBy{saved.mean.data_as<float>(), static_cast<float>(saved.count)});
    channel_sums(x, loop, ops::ChannelSquares<T>{x.data_as<T>(), saved.mean.data_as<float>()},
                 {&squares});
  });
  if (reduce) reduce({&squares}, loop.count());
  for_each_index(
      device, loop.c,
      ops::FinishBatchStats{saved.mean.data_as<float>(), squares.data_as<float>(), saved.count, eps,
                            momentum, saved.invstd.data_as<float>(), running_mean.data_as<float>(),
                            running_var.data_as<float>()});
  return normalise(x, loop, saved.mean, saved.invstd, gamma, beta, activation);
}

Tensor batch_norm_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                       const Tensor& running_mean, const Tensor& running_var, float eps,
                       BatchNormActivation activation) {
  const ops::ChannelLoop loop = channel_loop(x, gamma);
  check_same(gamma, beta, "batch norm parameters");
  check_same(gamma, running_var, "batch norm running variance");
  Tensor invstd = channel_vector(x);
  for_each_index(
      x.device(), loop.c,
      ops::InvStdFromVariance{running_var.data_as<float>(), eps, invstd.data_as<float>()});
  return normalise(x, loop, running_mean, invstd, gamma, beta, activation);
}

Tensor batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                           const Tensor& beta, const BatchNormSaved& saved, Tensor& dgamma,
                           Tensor& dbeta, const ChannelSumReducer& reduce) {
  const ops::ChannelLoop loop = channel_loop(x, gamma);
  check_same(dy, x, "batch norm backward");
  check_same(gamma, beta, "batch norm parameters");
  check_same(gamma, dgamma, "batch norm gamma gradient");
  check_same(gamma, dbeta, "batch norm beta gradient");
  const bool relu = saved.activation == BatchNormActivation::kRelu;
  Tensor cudnn_dx, cudnn_dgamma, cudnn_dbeta;
  if (!reduce && cudnn_batch_norm_backward(dy, x, gamma, beta, saved.mean, saved.invstd, relu,
                                           cudnn_dx, cudnn_dgamma, cudnn_dbeta)) {
    axpy_(1.0f, cudnn_dgamma, dgamma);
    axpy_(1.0f, cudnn_dbeta, dbeta);
    return cudnn_dx;
  }
  Tensor sum_dy, sum_dy_xhat;
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device(), x.memory_format());
  visit_floating(x.dtype(), "batch norm backward", [&]<class T>() {
    const auto sums = [&](auto masked) {  // std::bool_constant: the terms' compile-time choice
      channel_sums(
          x, loop,
          ops::ChannelGradTerms<T, decltype(masked)::value>{
              x.data_as<T>(), dy.data_as<T>(), saved.mean.data_as<float>(),
              saved.invstd.data_as<float>(), gamma.data_as<float>(), beta.data_as<float>()},
          {&sum_dy, &sum_dy_xhat});
    };
    relu ? sums(std::true_type{}) : sums(std::false_type{});
    for_each_index(x.device(), loop.c,
                   ops::AccumulateParamGrads{sum_dy.data_as<float>(), sum_dy_xhat.data_as<float>(),
                                             dgamma.data_as<float>(), dbeta.data_as<float>()});
    if (reduce) reduce({&sum_dy, &sum_dy_xhat}, loop.count());
    const ops::NormaliseGrad grad{saved.mean.data_as<float>(),     saved.invstd.data_as<float>(),
                                  gamma.data_as<float>(),          beta.data_as<float>(),
                                  sum_dy.data_as<float>(),         sum_dy_xhat.data_as<float>(),
                                  static_cast<float>(saved.count), relu};
    map_channels<T>(x, dy, dx, loop, grad);
  });
  return dx;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

// (A name without a comma, for the macros.)
template <class T>
using ReluMaskedGradTerms = ops::ChannelGradTerms<T, true>;

#define CHANNEL_SUMS(Terms)                              \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::PlaneSums<Terms>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::ChunkColumnSums<ops::PixelColumns<Terms>>)
#define BATCH_NORM(T)                                                      \
  CHANNEL_SUMS(ops::ChannelValues<T>)                                      \
  CHANNEL_SUMS(ops::ChannelSquares<T>)                                     \
  CHANNEL_SUMS(ops::ChannelGradTerms<T>)                                   \
  CHANNEL_SUMS(ReluMaskedGradTerms<T>)                                     \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::ChannelRows<T, ops::Normalise>)     \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::ChannelRows<T, ops::NormaliseGrad>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::ChannelPackets<T, ops::Normalise>)      \
  COURSE_INSTANTIATE_FOR_EACH(ops::ChannelPackets<T, ops::NormaliseGrad>)
COURSE_FLOAT_TYPES(BATCH_NORM)
COURSE_INSTANTIATE_FOR_EACH(ops::DivideBy)
COURSE_INSTANTIATE_FOR_EACH(ops::FinishBatchStats)
COURSE_INSTANTIATE_FOR_EACH(ops::InvStdFromVariance)
COURSE_INSTANTIATE_FOR_EACH(ops::TakeRunningStats)
COURSE_INSTANTIATE_FOR_EACH(ops::AccumulateParamGrads)

}  // namespace course
