// Normalisations through cuDNN's graph API (cudnn_norms.h). LayerNorm: a (rows, C, 1, 1) input
// with (1, C, 1, 1) f32 weight and bias and (rows, 1, 1, 1) f32 statistics. Batch norm: the
// (N, C, H, W) input by its own strides (either memory format), (1, C, 1, 1) f32 parameters and
// statistics; the running statistics come out as new tensors, copied back onto the module's (a
// captured step replays onto fixed addresses). A fused ReLU is cuDNN's BN + ReLU forward and its
// batch norm inference -> ReLU backward -> batch norm backward graph (the frontend's own tested
// patterns), which recomputes the ReLU's input rather than saving it or a mask. In a build without
// CUDA or the frontend's headers neither runs.
#include "common/kernels/cudnn_norms.h"

#include <atomic>

#if COURSE_WITH_CUDA && COURSE_WITH_CUDNN_FRONTEND
#include "common/kernels/cudnn_graph.h"
#endif

namespace course {

namespace {

std::atomic<bool> cudnn_norms_on{true};
}  // namespace

void set_cudnn_norms(bool enabled) { cudnn_norms_on = enabled; }
bool cudnn_norms_enabled() { return cudnn_norms_on; }

#if COURSE_WITH_CUDA && COURSE_WITH_CUDNN_FRONTEND
namespace {

namespace fe = cudnn_frontend;
using cudnn_graph::TensorAttributes;

bool takes(const Tensor& x) {
  return cudnn_norms_on && x.device().is_cuda() && x.dim() >= 1 && x.numel() > 0;
}

enum NormUid : int64_t {
  kX = 1,
  kScale,
  kBias,
  kY,
  kMean,
  kRstd,
  kDy,
  kDx,
  kDScale,
  kDBias,
  kRunningMean,
  kRunningVar,
  kNextRunningMean,
  kNextRunningVar
};

struct NormKey {
  int device;
  std::array<int64_t, 4> dims, strides;  // LayerNorm: (rows, C, 1, 1); batch norm: x's
  DType dtype;
  float eps, momentum;  // the forward's (batch norm's momentum)
  bool batch, backward;
  bool relu;  // batch norm's fused ReLU
  auto operator<=>(const NormKey&) const = default;

  std::string str() const {
    return detail::concat(batch ? "batch norm " : "layer norm ", relu ? "+ ReLU " : "",
                          backward ? "backward" : "forward", " of ", dims[0], " x ", dims[1], " x ",
                          dims[2], " x ", dims[3], ", ", dtype_name(dtype));
  }
};

// A normalisation's cuDNN graph, described tensor by tensor from its key.
class NormGraph {
 public:
  explicit NormGraph(const NormKey& key)
      : key_(key),
        graph_(cudnn_graph::new_graph(key.dtype)),
        io_(cudnn_graph::data_type(key.dtype)) {}

  cudnn_graph::GraphPtr describe() {
    if (!key_.backward) {
      key_.batch ? batch_norm_forward() : layer_norm_forward();
    } else {
      backward();
    }
    return graph_;
  }

 private:
  static constexpr fe::DataType_t kF32 = fe::DataType_t::FLOAT;

  // x and dy have the key's layout; batch norm's statistics and every scale and bias are per
  // channel, LayerNorm's statistics per row.
  TensorAttributes tensor(const char* name, NormUid uid) {
    const int64_t c = key_.dims[1];
    fe::graph::Tensor_attributes t;
    t.set_name(name).set_uid(uid).set_data_type(kF32);
    if (uid == kX || uid == kDy) {
      t.set_dim(cudnn_graph::as_vector(key_.dims))
          .set_stride(cudnn_graph::as_vector(key_.strides))
          .set_data_type(io_);
    } else if (key_.batch || uid == kScale || uid == kBias) {
      t.set_dim({1, c, 1, 1}).set_stride({c, 1, c, c});
    } else {
      t.set_dim({key_.dims[0], 1, 1, 1}).set_stride({1, 1, 1, 1});
    }
    return graph_->tensor(t);
  }

  static void output(const TensorAttributes& t, NormUid uid, fe::DataType_t type) {
    t->set_output(true).set_uid(uid).set_data_type(type);
  }

  void batch_norm_forward() {
    TensorAttributes running_mean = tensor("running_mean", kRunningMean);
    TensorAttributes running_var = tensor("running_var", kRunningVar);
    TensorAttributes momentum = std::make_shared<fe::graph::Tensor_attributes>(key_.momentum);
    TensorAttributes epsilon = std::make_shared<fe::graph::Tensor_attributes>(key_.eps);
    const auto [y, mean, invstd, next_mean, next_var] =
        graph_->batchnorm(tensor("x", kX), tensor("scale", kScale), tensor("bias", kBias),
                          fe::graph::Batchnorm_attributes()
                              .set_name("batch_norm")
                              .set_epsilon(epsilon)
                              .set_previous_running_stats(running_mean, running_var, momentum));
    output(key_.relu
               ? graph_->pointwise(y, fe::graph::Pointwise_attributes().set_name("relu").set_mode(
                                          fe::PointwiseMode_t::RELU_FWD))
               : y,
           kY, io_);
    output(mean, kMean, kF32);
    output(invstd, kRstd, kF32);
    output(next_mean, kNextRunningMean, kF32);
    output(next_var, kNextRunningVar, kF32);
  }

  void layer_norm_forward() {
    const auto [y, mean, rstd] =
        graph_->layernorm(tensor("x", kX), tensor("scale", kScale), tensor("bias", kBias),
                          fe::graph::Layernorm_attributes()
                              .set_name("layer_norm")
                              .set_forward_phase(fe::NormFwdPhase_t::TRAINING)
                              .set_epsilon(key_.eps));
    output(y, kY, io_);
    output(mean, kMean, kF32);
    output(rstd, kRstd, kF32);
  }

  void backward() {
    const TensorAttributes x = tensor("x", kX);
    const TensorAttributes scale = tensor("scale", kScale);
    const TensorAttributes dy = tensor("dy", kDy);
    const TensorAttributes mean = tensor("mean", kMean);
    const TensorAttributes rstd = tensor("rstd", kRstd);
    std::array<TensorAttributes, 3> grads;
    if (key_.batch) {
      grads = graph_->batchnorm_backward(relu_masked(dy, x, mean, rstd, scale), x, scale,
                                         fe::graph::Batchnorm_backward_attributes()
                                             .set_name("batch_norm_backward")
                                             .set_saved_mean_and_inv_variance(mean, rstd));
    } else {
      grads = graph_->layernorm_backward(dy, x, scale,
                                         fe::graph::Layernorm_backward_attributes()
                                             .set_name("layer_norm_backward")
                                             .set_saved_mean_and_inv_variance(mean, rstd));
    }
    output(grads[0], kDx, io_);
    output(grads[1], kDScale, kF32);
    output(grads[2], kDBias, kF32);
  }

  // With a fused ReLU: its input recomputed from x and the saved statistics, its mask applied to
  // dy; else dy.
  TensorAttributes relu_masked(const TensorAttributes& dy, const TensorAttributes& x,
                               const TensorAttributes& mean, const TensorAttributes& rstd,
                               const TensorAttributes& scale) {
    if (!key_.relu) return dy;
    const TensorAttributes masked = graph_->pointwise(
        dy,
        graph_->batchnorm_inference(
            x, mean, rstd, scale, tensor("bias", kBias),
            fe::graph::Batchnorm_inference_attributes().set_name("batch_norm_inference")),
        fe::graph::Pointwise_attributes()
            .set_name("relu_backward")
            .set_mode(fe::PointwiseMode_t::RELU_BWD));
    masked->set_data_type(io_);
    return masked;
  }

  const NormKey& key_;
  cudnn_graph::GraphPtr graph_;
  const fe::DataType_t io_;
};

cudnn_graph::GraphPtr describe_norm(const NormKey& key) { return NormGraph(key).describe(); }

// LayerNorm's key: the rows of x (contiguous) as (rows, C, 1, 1).
NormKey layer_norm_key(const Tensor& x, float eps, bool backward) {
  const int64_t c = x.size(-1);
  return {x.device().index,
          {x.numel() / c, c, 1, 1},
          {c, 1, c, c},
          x.dtype(),
          eps,
          0.0f,
          false,
          backward,
          false};
}

NormKey batch_norm_key(const Tensor& x, float eps, float momentum, bool backward, bool relu) {
  const auto& s = x.strides();
  return {x.device().index,
          {x.size(0), x.size(1), x.size(2), x.size(3)},
          {s[0], s[1], s[2], s[3]},
          x.dtype(),
          eps,
          momentum,
          true,
          backward,
          relu};
}

// The forward or backward of `key` on the pointers (its outputs made by the caller).
bool run_norm(const NormKey& key, Device device, std::unordered_map<int64_t, void*> pointers) {
  return cudnn_graph::run(key, device, key.batch ? "batch normalisation" : "layer normalisation",
                          describe_norm, std::move(pointers));
}

// A backward's outputs: dx like x, and the two (C,) f32 parameter gradients.
struct NormGrads {
  Tensor dx, dscale, dshift;
  NormGrads(const Tensor& x, int64_t channels)
      : dx(Tensor::empty(x.shape(), x.dtype(), x.device(), x.memory_format())),
        dscale(Tensor::empty({channels}, DType::kF32, x.device())),
        dshift(Tensor::empty({channels}, DType::kF32, x.device())) {}

  // `shift` is read by a graph with a fused ReLU only.
  bool run(const NormKey& key, const Tensor& dy, const Tensor& x, const Tensor& scale,
           const Tensor& shift, const Tensor& mean, const Tensor& rstd) {
    std::unordered_map<int64_t, void*> pointers{{kX, x.data()},           {kScale, scale.data()},
                                                {kDy, dy.data()},         {kMean, mean.data()},
                                                {kRstd, rstd.data()},     {kDx, dx.data()},
                                                {kDScale, dscale.data()}, {kDBias, dshift.data()}};
    if (key.relu) pointers[kBias] = shift.data();
    return run_norm(key, x.device(), std::move(pointers));
  }
};

}  // namespace

bool cudnn_layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                              Tensor& y, Tensor& mean, Tensor& rstd) {
  if (!takes(x) || x.memory_format() != MemoryFormat::kContiguous) return false;
  const NormKey key = layer_norm_key(x, eps, false);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor means = Tensor::empty({key.dims[0]}, DType::kF32, x.device());
  Tensor rstds = Tensor::empty({key.dims[0]}, DType::kF32, x.device());
  if (!run_norm(key, x.device(),
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
  if (!takes(x) || x.memory_format() != MemoryFormat::kContiguous) return false;
  // The backward's graph does not depend on eps: the statistics already hold it.
  const NormKey key = layer_norm_key(x, 0.0f, true);
  NormGrads grads(x, key.dims[1]);
  if (!grads.run(key, dy, x, weight, Tensor(), mean, rstd)) return false;
  dx = grads.dx;
  dweight = grads.dscale;
  dbias = grads.dshift;
  return true;
}

bool cudnn_batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                              const Tensor& running_mean, const Tensor& running_var, float momentum,
                              float eps, bool relu, BatchNormForward& out) {
  if (!takes(x) || x.dim() != 4) return false;
  const NormKey key = batch_norm_key(x, eps, momentum, false, relu);
  const auto channel_vector = [&] { return Tensor::empty({key.dims[1]}, DType::kF32, x.device()); };
  BatchNormForward made{Tensor::empty(x.shape(), x.dtype(), x.device(), x.memory_format()),
                        channel_vector(), channel_vector(), channel_vector(), channel_vector()};
  if (!run_norm(key, x.device(),
                {{kX, x.data()},
                 {kScale, gamma.data()},
                 {kBias, beta.data()},
                 {kRunningMean, running_mean.data()},
                 {kRunningVar, running_var.data()},
                 {kY, made.y.data()},
                 {kMean, made.mean.data()},
                 {kRstd, made.invstd.data()},
                 {kNextRunningMean, made.next_running_mean.data()},
                 {kNextRunningVar, made.next_running_var.data()}})) {
    return false;
  }
  out = std::move(made);
  return true;
}

bool cudnn_batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, const Tensor& mean, const Tensor& invstd,
                               bool relu, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  if (!takes(x) || x.dim() != 4 || dy.strides() != x.strides()) return false;
  const NormKey key = batch_norm_key(x, 0.0f, 0.0f, true, relu);
  NormGrads grads(x, key.dims[1]);
  if (!grads.run(key, dy, x, gamma, beta, mean, invstd)) return false;
  dx = grads.dx;
  dgamma = grads.dscale;
  dbeta = grads.dshift;
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

bool cudnn_batch_norm_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                              const Tensor&, float, float, bool, BatchNormForward&) {
  return false;
}

bool cudnn_batch_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                               const Tensor&, const Tensor&, bool, Tensor&, Tensor&, Tensor&) {
  return false;
}

#endif

}  // namespace course
