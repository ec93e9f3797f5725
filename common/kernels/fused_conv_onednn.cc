// oneDNN back end of FusedConv: a forward_inference convolution per input geometry, its weights
// reordered once into the layout the primitive chose, the bias and the ReLU fused; for int8 the
// s8 x s8 -> s32 convolution is rescaled to f32 by per-output-channel output scales
// (input_scale * weight_scale[o]), or to s8 at an output scale (divided by it). oneDNN 2.x adds
// the bias before those scales, so the int8 primitive gets the bias in the accumulator's units,
// bias[o] / (input_scale * weight_scale[o]).
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <tuple>

#include "common/kernels/fused_conv.h"
#include "common/tensor/capture.h"

namespace course::detail {

namespace {

using dnnl::memory;

class OnednnFusedConv : public FusedConv::Backend {
 public:
  OnednnFusedConv(const FusedConvWeights& w, float input_scale, float output_scale)
      : weights_(w), int8_output_(output_scale > 0), engine_(dnnl::engine::kind::cpu, 0) {
    const int64_t channels = w.weight.size(0);
    const float* bias = w.bias.data_as<float>();
    bias_ = Tensor::empty({channels});
    if (is_int8()) {
      const float* scales = w.scales.data_as<float>();
      for (int64_t o = 0; o < channels; ++o) {
        const float accumulator_scale = input_scale * scales[o];
        bias_.data_as<float>()[o] = bias[o] / accumulator_scale;
        output_scales_.push_back(int8_output_ ? accumulator_scale / output_scale
                                              : accumulator_scale);
      }
    } else {
      bias_ = w.bias.clone();
    }
  }

  Tensor forward(const Tensor& x) override {
    const Prepared& p = prepared(x);
    const Shape y_shape = conv2d_output_shape(x.shape(), weights_.weight.shape(), weights_.shape);
    Tensor y = Tensor::empty(y_shape, int8_output_ ? DType::kI8 : DType::kF32, Device::cpu(),
                             MemoryFormat::kChannelsLast);
    const std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(p.pd.src_desc(), engine_, x.data())},
        {DNNL_ARG_WEIGHTS, p.weights},
        {DNNL_ARG_BIAS, p.bias},
        {DNNL_ARG_DST, memory(p.pd.dst_desc(), engine_, y.data())}};
    run_host_work([primitive = p.primitive, args, engine = engine_] {
      dnnl::stream stream(engine);
      primitive.execute(stream, args);
      stream.wait();
    });
    return y;
  }

 private:
  struct Prepared {
    dnnl::convolution_forward::primitive_desc pd;
    dnnl::convolution_forward primitive;
    memory weights, bias;
  };

  bool is_int8() const { return weights_.weight.dtype() == DType::kI8; }

  // The primitive for x's batch and image size, made on first use.
  const Prepared& prepared(const Tensor& x) {
    std::lock_guard lock(mutex_);
    const auto key = std::make_tuple(x.size(0), x.size(2), x.size(3));
    auto it = by_geometry_.find(key);
    if (it != by_geometry_.end()) return it->second;
    const Tensor& w = weights_.weight;
    const memory::data_type type = is_int8() ? memory::data_type::s8 : memory::data_type::f32;
    const Shape y = conv2d_output_shape(x.shape(), w.shape(), weights_.shape);
    const memory::desc src({x.size(0), x.size(1), x.size(2), x.size(3)}, type,
                           memory::format_tag::nhwc);
    const memory::desc dst({y[0], y[1], y[2], y[3]},
                           int8_output_ ? memory::data_type::s8 : memory::data_type::f32,
                           memory::format_tag::nhwc);
    const memory::dims weight_dims{w.size(0), w.size(1), w.size(2), w.size(3)};
    const memory::desc any_weights(weight_dims, type, memory::format_tag::any);
    const memory::desc bias({w.size(0)}, memory::data_type::f32, memory::format_tag::a);
    const memory::dims strides{weights_.shape.stride, weights_.shape.stride};
    const memory::dims padding{weights_.shape.padding, weights_.shape.padding};

    dnnl::primitive_attr attr;
    if (is_int8()) attr.set_output_scales(1 << 1, output_scales_);  // per output channel
    dnnl::post_ops post_ops;
    if (weights_.relu) post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(post_ops);
    const dnnl::convolution_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, any_weights,
         bias, dst, strides, padding, padding},
        attr, engine_);

    // The weights, reordered once into the primitive's layout (with int8's compensation).
    memory plain(memory::desc(weight_dims, type, memory::format_tag::oihw), engine_, w.data());
    memory reordered(pd.weights_desc(), engine_);
    dnnl::stream stream(engine_);
    dnnl::reorder(plain, reordered).execute(stream, plain, reordered);
    stream.wait();
    memory bias_memory(bias, engine_, bias_.data());
    return by_geometry_
        .emplace(key, Prepared{pd, dnnl::convolution_forward(pd), reordered, bias_memory})
        .first->second;
  }

  FusedConvWeights weights_;
  bool int8_output_;
  Tensor bias_;  // for int8 in the accumulator's units
  std::vector<float> output_scales_;
  dnnl::engine engine_;
  std::mutex mutex_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Prepared> by_geometry_;
};

}  // namespace

std::unique_ptr<FusedConv::Backend> onednn_fused_conv(const FusedConvWeights& weights,
                                                      float input_scale, float output_scale) {
  return std::make_unique<OnednnFusedConv>(weights, input_scale, output_scale);
}

}  // namespace course::detail
