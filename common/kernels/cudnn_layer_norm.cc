// LayerNorm through cuDNN's graph API (cudnn_layer_norm.h): a (rows, C, 1, 1) input with
// (1, C, 1, 1) f32 weight and bias, (rows, 1, 1, 1) f32 statistics; in a build without CUDA or
// the frontend's headers it never runs.
#include "common/kernels/cudnn_layer_norm.h"

#include <atomic>

#if COURSE_WITH_CUDA && COURSE_WITH_CUDNN_FRONTEND
#include "common/kernels/cudnn_graph.h"
#endif

namespace course {

namespace {

std::atomic<bool> cudnn_layer_norm_on{true};
}  // namespace

void set_cudnn_layer_norm(bool enabled) { cudnn_layer_norm_on = enabled; }
bool cudnn_layer_norm_enabled() { return cudnn_layer_norm_on; }

#if COURSE_WITH_CUDA && COURSE_WITH_CUDNN_FRONTEND
namespace {

namespace fe = cudnn_frontend;
using cudnn_graph::TensorAttributes;

bool takes(const Tensor& x) {
  return cudnn_layer_norm_on && x.device().is_cuda() && x.dim() >= 1 && x.numel() > 0 &&
         x.memory_format() == MemoryFormat::kContiguous;
}

enum NormUid : int64_t { kX = 1, kScale, kBias, kY, kMean, kRstd, kDy, kDx, kDScale, kDBias };

struct NormKey {
  int device;
  int64_t rows, cols;
  DType dtype;
  float eps;  // the forward's
  bool backward;
  auto operator<=>(const NormKey&) const = default;

  std::string str() const {
    return detail::concat(backward ? "backward" : "forward", " of ", rows, " rows of ", cols, ", ",
                          dtype_name(dtype));
  }
};

cudnn_graph::GraphPtr describe_layer_norm(const NormKey& key) {
  const int64_t c = key.cols;
  cudnn_graph::GraphPtr graph = cudnn_graph::new_graph(key.dtype);
  const auto tensor = [&](const char* name, NormUid uid, std::vector<int64_t> dims,
                          std::vector<int64_t> strides, fe::DataType_t type) {
    return graph->tensor(fe::graph::Tensor_attributes()
                             .set_name(name)
                             .set_uid(uid)
                             .set_dim(std::move(dims))
                             .set_stride(std::move(strides))
                             .set_data_type(type));
  };
  const fe::DataType_t io = cudnn_graph::data_type(key.dtype), f32 = fe::DataType_t::FLOAT;
  const std::vector<int64_t> rows_dims{key.rows, c, 1, 1}, rows_strides{c, 1, c, c};
  const std::vector<int64_t> channel_dims{1, c, 1, 1}, channel_strides{c, 1, c, c};
  const std::vector<int64_t> stat_dims{key.rows, 1, 1, 1}, stat_strides{1, 1, 1, 1};
  const TensorAttributes x = tensor("x", kX, rows_dims, rows_strides, io);
  const TensorAttributes scale = tensor("scale", kScale, channel_dims, channel_strides, f32);
  const auto output = [](const TensorAttributes& t, NormUid uid, fe::DataType_t type) {
    t->set_output(true).set_uid(uid).set_data_type(type);
  };
  if (!key.backward) {
    const TensorAttributes bias = tensor("bias", kBias, channel_dims, channel_strides, f32);
    const auto [y, mean, rstd] =
        graph->layernorm(x, scale, bias,
                         fe::graph::Layernorm_attributes()
                             .set_name("layer_norm")
                             .set_forward_phase(fe::NormFwdPhase_t::TRAINING)
                             .set_epsilon(key.eps));
    output(y, kY, io);
    output(mean, kMean, f32);
    output(rstd, kRstd, f32);
  } else {
    const TensorAttributes dy = tensor("dy", kDy, rows_dims, rows_strides, io);
    const TensorAttributes mean = tensor("mean", kMean, stat_dims, stat_strides, f32);
    const TensorAttributes rstd = tensor("rstd", kRstd, stat_dims, stat_strides, f32);
    const auto [dx, dscale, dbias] =
        graph->layernorm_backward(dy, x, scale,
                                  fe::graph::Layernorm_backward_attributes()
                                      .set_name("layer_norm_backward")
                                      .set_saved_mean_and_inv_variance(mean, rstd));
    output(dx, kDx, io);
    output(dscale, kDScale, f32);
    output(dbias, kDBias, f32);
  }
  return graph;
}

NormKey norm_key(const Tensor& x, float eps, bool backward) {
  const int64_t cols = x.size(-1);
  return {x.device().index, x.numel() / cols, cols, x.dtype(), eps, backward};
}

}  // namespace

bool cudnn_layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                              Tensor& y, Tensor& mean, Tensor& rstd) {
  if (!takes(x)) return false;
  const NormKey key = norm_key(x, eps, false);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor means = Tensor::empty({key.rows}, DType::kF32, x.device());
  Tensor rstds = Tensor::empty({key.rows}, DType::kF32, x.device());
  if (!cudnn_graph::run(key, x.device(), "layer normalisation", describe_layer_norm,
                        {{kX, x.data()},
                         {kScale, weight.data()},
                         {kBias, bias.data()},
                         {kY, out.data()},
                         {kMean, means.data()},
                         {kRstd, rstds.data()}})) {
    return false;
  }
  y = out;
  mean = means;
  rstd = rstds;
  return true;
}

bool cudnn_layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                               const Tensor& mean, const Tensor& rstd, Tensor& dx, Tensor& dweight,
                               Tensor& dbias) {
  if (!takes(x)) return false;
  // The backward's graph does not depend on eps: the statistics already hold it.
  const NormKey key = norm_key(x, 0.0f, true);
  Tensor grad = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor dscale = Tensor::empty({key.cols}, DType::kF32, x.device());
  Tensor dshift = Tensor::empty({key.cols}, DType::kF32, x.device());
  if (!cudnn_graph::run(key, x.device(), "layer normalisation", describe_layer_norm,
                        {{kX, x.data()},
                         {kScale, weight.data()},
                         {kDy, dy.data()},
                         {kMean, mean.data()},
                         {kRstd, rstd.data()},
                         {kDx, grad.data()},
                         {kDScale, dscale.data()},
                         {kDBias, dshift.data()}})) {
    return false;
  }
  dx = grad;
  dweight = dscale;
  dbias = dshift;
  return true;
}

#else

bool cudnn_layer_norm_forward(const Tensor&, const Tensor&, const Tensor&, float, Tensor&, Tensor&,
                              Tensor&) {
  return false;
}

bool cudnn_layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                               const Tensor&, Tensor&, Tensor&, Tensor&) {
  return false;
}

#endif

}  // namespace course
