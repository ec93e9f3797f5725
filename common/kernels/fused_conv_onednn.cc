// oneDNN back end of FusedConv: a forward_inference convolution per input geometry, its weights
// reordered once into the layout the primitive chose, the bias and the ReLU fused; for int8 the
// integer convolution into s32 is rescaled to f32 by per-output-channel output scales
// (input_scale * weight_scale[o]), or to s8 at an output scale (divided by it). oneDNN 2.x adds
// the bias before those scales, so the int8 primitive gets the bias in the accumulator's units,
// bias[o] / (input_scale * weight_scale[o]).
//
// Int8 inputs go in as u8 with values in [0, 128], so the result is the exact integer
// convolution on every x86 CPU. Without VNNI, oneDNN multiplies bytes with vpmaddubsw, whose
// 16-bit sums of two products saturate: it halves s8 x s8 weights to stay clear of that
// (rounding the odd ones), and a u8 input above 128 can overflow; 2 x 128 x 127 cannot. An input
// with no negative value (after a ReLU: every layer but the first) is read as u8 as it is, with
// everything fused; a signed one is split, x = x+ - x-, into two u8 convolutions into s32 whose
// difference the single-source epilogue (common/kernels/quantize.h) rescales.
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <tuple>

#include "common/kernels/fused_conv.h"
#include "common/kernels/quantize.h"
#include "common/tensor/capture.h"

namespace course::detail {

namespace {

using dnnl::memory;

bool any_negative(const Tensor& x) {
  check_not_capturing("the sign of an int8 convolution's input");
  const int8_t* q = x.data_as<int8_t>();
  int8_t lowest = 0;
#pragma omp parallel for reduction(min : lowest)
  for (int64_t i = 0; i < x.numel(); ++i) lowest = q[i] < lowest ? q[i] : lowest;
  return lowest < 0;
}

class OnednnFusedConv : public FusedConv::Backend {
 public:
  OnednnFusedConv(const FusedConvWeights& w, float input_scale, float output_scale)
      : weights_(w), output_scale_(output_scale), engine_(dnnl::engine::kind::cpu, 0) {
    const int64_t channels = w.weight.size(0);
    const float* bias = w.bias.data_as<float>();
    bias_ = Tensor::empty({channels});
    if (is_int8()) {
      const float* scales = w.scales.data_as<float>();
      accumulator_scales_ = Tensor::empty({channels});
      for (int64_t o = 0; o < channels; ++o) {
        const float accumulator_scale = input_scale * scales[o];
        accumulator_scales_.data_as<float>()[o] = accumulator_scale;
        bias_.data_as<float>()[o] = bias[o] / accumulator_scale;
        output_scales_.push_back(int8_output() ? accumulator_scale / output_scale
                                               : accumulator_scale);
      }
    } else {
      bias_ = w.bias.clone();
    }
  }

  Tensor forward(const Tensor& x) override {
    if (is_int8() && any_negative(x)) return forward_signed(x);
    Tensor y = Tensor::empty(output_shape(x), int8_output() ? DType::kI8 : DType::kF32,
                             Device::cpu(), MemoryFormat::kChannelsLast);
    run(prepared(x, Stage::kFused), x, y);
    return y;
  }

 private:
  // kFused: the whole layer (scales, bias, ReLU, output type); kAccumulate: the integer
  // convolution alone, into s32.
  enum class Stage { kFused, kAccumulate };

  struct Prepared {
    dnnl::convolution_forward::primitive_desc pd;
    dnnl::convolution_forward primitive;
    memory weights, bias;
  };

  bool is_int8() const { return weights_.weight.dtype() == DType::kI8; }
  bool int8_output() const { return output_scale_ > 0; }

  Shape output_shape(const Tensor& x) const {
    return conv2d_output_shape(x.shape(), weights_.weight.shape(), weights_.shape);
  }

  // x+ and x- through the integer convolution, then (acc+ - acc-) rescaled, biased, ReLU'd.
  Tensor forward_signed(const Tensor& x) {
    const SignedSplit split = split_signed(x);
    const Shape shape = output_shape(x);
    const int64_t channels = shape[1];
    const Shape acc_shape{shape[0] * shape[2] * shape[3], channels};  // channels-last rows
    const Prepared& p = prepared(x, Stage::kAccumulate);
    const Tensor plus = Tensor::empty(acc_shape, DType::kI32);
    const Tensor minus = Tensor::empty(acc_shape, DType::kI32);
    run(p, split.positive, plus);
    run(p, split.negative, minus);
    const Tensor y = scale_bias_activation(plus, channels, accumulator_scales_, weights_.bias,
                                           weights_.relu, minus)
                         .view(shape, MemoryFormat::kChannelsLast);
    return int8_output() ? quantize_symmetric(y, output_scale_) : y;
  }

  void run(const Prepared& p, const Tensor& x, const Tensor& y) {
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(p.pd.src_desc(), engine_, x.data())},
        {DNNL_ARG_WEIGHTS, p.weights},
        {DNNL_ARG_DST, memory(p.pd.dst_desc(), engine_, y.data())}};
    if (p.bias) args.emplace(DNNL_ARG_BIAS, p.bias);
    run_host_work([primitive = p.primitive, args, engine = engine_] {
      dnnl::stream stream(engine);
      primitive.execute(stream, args);
      stream.wait();
    });
  }

  // The primitive of `stage` for x's batch and image size, made on first use.
  const Prepared& prepared(const Tensor& x, Stage stage) {
    std::lock_guard lock(mutex_);
    const auto key = std::make_tuple(stage, x.size(0), x.size(2), x.size(3));
    auto it = by_geometry_.find(key);
    if (it != by_geometry_.end()) return it->second;
    const Tensor& w = weights_.weight;
    const bool fused = stage == Stage::kFused;
    const memory::data_type weight_type =
        is_int8() ? memory::data_type::s8 : memory::data_type::f32;
    const memory::data_type dst_type = !is_int8()      ? memory::data_type::f32
                                       : !fused        ? memory::data_type::s32
                                       : int8_output() ? memory::data_type::s8
                                                       : memory::data_type::f32;
    const Shape y = output_shape(x);
    const memory::desc src({x.size(0), x.size(1), x.size(2), x.size(3)},
                           is_int8() ? memory::data_type::u8 : memory::data_type::f32,
                           memory::format_tag::nhwc);
    const memory::desc dst({y[0], y[1], y[2], y[3]}, dst_type, memory::format_tag::nhwc);
    const memory::dims weight_dims{w.size(0), w.size(1), w.size(2), w.size(3)};
    const memory::desc any_weights(weight_dims, weight_type, memory::format_tag::any);
    const memory::desc bias =
        fused ? memory::desc({w.size(0)}, memory::data_type::f32, memory::format_tag::a)
              : memory::desc();  // none
    const memory::dims strides{weights_.shape.stride, weights_.shape.stride};
    const memory::dims padding{weights_.shape.padding, weights_.shape.padding};

    dnnl::primitive_attr attr;
    if (fused) {
      if (is_int8()) attr.set_output_scales(1 << 1, output_scales_);  // per output channel
      dnnl::post_ops post_ops;
      if (weights_.relu) post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(post_ops);
    }
    const dnnl::convolution_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, any_weights,
         bias, dst, strides, padding, padding},
        attr, engine_);

    // The weights, reordered once into the primitive's layout.
    memory plain(memory::desc(weight_dims, weight_type, memory::format_tag::oihw), engine_,
                 w.data());
    memory reordered(pd.weights_desc(), engine_);
    dnnl::stream stream(engine_);
    dnnl::reorder(plain, reordered).execute(stream, plain, reordered);
    stream.wait();
    memory bias_memory = fused ? memory(bias, engine_, bias_.data()) : memory();
    return by_geometry_
        .emplace(key, Prepared{pd, dnnl::convolution_forward(pd), reordered, bias_memory})
        .first->second;
  }

  FusedConvWeights weights_;
  float output_scale_;
  Tensor bias_;                // for int8 in the accumulator's units
  Tensor accumulator_scales_;  // int8: input_scale * weight_scale[o]
  std::vector<float> output_scales_;
  dnnl::engine engine_;
  std::mutex mutex_;
  std::map<std::tuple<Stage, int64_t, int64_t, int64_t>, Prepared> by_geometry_;
};

}  // namespace

std::unique_ptr<FusedConv::Backend> onednn_fused_conv(const FusedConvWeights& weights,
                                                      float input_scale, float output_scale) {
  return std::make_unique<OnednnFusedConv>(weights, input_scale, output_scale);
}

}  // namespace course::detail
