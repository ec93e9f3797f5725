// Per-element bodies of the elementwise kernels, shared by the CPU and the GPU.
//
// Each functor holds raw pointers and is called as kernel(i) by for_each_index. Floating
// types are loaded to float, computed in float and stored with round-to-nearest-even, so the
// f16/bf16 arithmetic is the same on both devices.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/core/host_device.h"
#include "common/kernels/exp_poly.h"
#include "common/kernels/packet.h"
#include "common/tensor/half.h"

namespace course::ops {

template <class T>
inline constexpr bool is_half_like = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Converts between element types: through float for f16/bf16, else a plain C++ conversion.
template <class To, class From>
COURSE_HD inline To convert(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (is_half_like<From>) {
    return convert<To>(static_cast<float>(value));
  } else if constexpr (is_half_like<To>) {
    return To(static_cast<float>(value));
  } else {
    return static_cast<To>(value);
  }
}

template <class T>
struct Fill {
  T* out;
  T value;
  COURSE_HD void operator()(int64_t i) const { out[i] = value; }
};

template <class To, class From>
struct Cast {
  const From* in;
  To* out;
  COURSE_HD void operator()(int64_t i) const { out[i] = convert<To>(in[i]); }
};

// Cast a 16-byte packet of the input per index (the last one element by element), written as one
// store of the packet's outputs: 8, 16 or 32 bytes (elementwise.cu takes it on a GPU between
// floating types when both ends are aligned to their packets).
template <class To, class From>
struct CastPackets {
  static constexpr int kSize = Packet<From>::kSize;
  static constexpr int kOutBytes = kSize * static_cast<int>(sizeof(To));
  struct alignas(kOutBytes < kPacketBytes ? kOutBytes : kPacketBytes) Out {
    To v[kSize];
  };
  const From* in;
  To* out;
  int64_t n;
  COURSE_HD int64_t packets() const { return (n + kSize - 1) / kSize; }
  COURSE_HD void operator()(int64_t packet) const {
    const int64_t first = packet * kSize;
    if (first + kSize <= n) {
      const Packet<From> p = *reinterpret_cast<const Packet<From>*>(in + first);
      Out result;
      for (int j = 0; j < kSize; ++j) result.v[j] = convert<To>(p.v[j]);
      *reinterpret_cast<Out*>(out + first) = result;
      return;
    }
    for (int64_t e = first; e < n; ++e) out[e] = convert<To>(in[e]);
  }
};

// The elementwise maps: out = map(a, b) per element, computed in float (a unary map ignores b,
// which is a again). MapElements applies one to an element per index, MapPackets to a 16-byte
// packet per index (elementwise.cu takes it on a GPU when every operand is aligned to packets).

struct AddMap {
  COURSE_HD float operator()(float a, float b) const { return a + b; }
};

struct MulMap {
  COURSE_HD float operator()(float a, float b) const { return a * b; }
};

// y + alpha x, with a = x and b = y.
struct AxpyMap {
  float alpha;
  COURSE_HD float operator()(float x, float y) const { return y + alpha * x; }
};

struct ScaleMap {
  float alpha;
  COURSE_HD float operator()(float x, float) const { return alpha * x; }
};

struct ReluMap {
  COURSE_HD float operator()(float x, float) const { return x > 0.0f ? x : 0.0f; }
};

// relu(a + b) in one pass, the end of a residual block; the same value, bit for bit, as
// ReluMap of AddMap's rounded sum (a positive sum rounds alike once or twice).
struct AddReluMap {
  COURSE_HD float operator()(float a, float b) const {
    const float v = a + b;
    return v > 0.0f ? v : 0.0f;
  }
};

// dx = dy where the forward input (or output) was positive, else 0; a = dy, b = x.
struct ReluGradMap {
  COURSE_HD float operator()(float dy, float x) const { return x > 0.0f ? dy : 0.0f; }
};

template <class T, class Map>
struct MapElements {
  const T* a;
  const T* b;
  T* out;
  Map map;
  COURSE_HD void operator()(int64_t i) const {
    out[i] = T(map(static_cast<float>(a[i]), static_cast<float>(b[i])));
  }
};

template <class T, class Map>
struct MapPackets {
  const T* a;
  const T* b;
  T* out;
  int64_t n;
  Map map;
  static constexpr int kSize = Packet<T>::kSize;
  COURSE_HD int64_t packets() const { return (n + kSize - 1) / kSize; }
  COURSE_HD void operator()(int64_t packet) const {
    const int64_t first = packet * kSize;
    if (first + kSize <= n) {
      const Packet<T> pa = *reinterpret_cast<const Packet<T>*>(a + first);
      const Packet<T> pb = *reinterpret_cast<const Packet<T>*>(b + first);
      Packet<T> result;
      for (int j = 0; j < kSize; ++j) {
        result.v[j] = T(map(static_cast<float>(pa.v[j]), static_cast<float>(pb.v[j])));
      }
      *reinterpret_cast<Packet<T>*>(out + first) = result;
      return;
    }
    const MapElements<T, Map> element{a, b, out, map};
    for (int64_t e = first; e < n; ++e) element(e);
  }
};

// GELU in its tanh form (GPT-2's): y = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
// computed as x s with s = (1 + tanh(u))/2 = sigmoid(2u): one exponential and one division,
// where tanh_poly's form adds a subtraction and two products around them (the forward was the
// GPT's costliest pass outside the products on the CPU).
struct GeluTanh {
  static constexpr float kScale = 0.7978845608028654f;  // sqrt(2 / pi)
  static constexpr float kCubic = 0.044715f;
  COURSE_HD static float half_plus_half_tanh(float x) {  // sigmoid(2u)
    return sigmoid_poly(2.0f * kScale * (x + kCubic * x * x * x));
  }
  COURSE_HD static float value(float x) { return x * half_plus_half_tanh(x); }
  // dy/dx = s + x 2 s (1 - s) du/dx (as 1 - tanh^2 = 4 s (1 - s)), du/dx = sqrt(2/pi) (1 + 3
  // 0.044715 x^2)
  COURSE_HD static float derivative(float x) {
    const float s = half_plus_half_tanh(x);
    return s + 2.0f * x * s * (1.0f - s) * kScale * (1.0f + 3.0f * kCubic * x * x);
  }
};

// SiLU, x sigmoid(x): the gate of Llama's SwiGLU feed-forward and of the squeeze-excitation.
struct Silu {
  COURSE_HD static float sigmoid(float x) { return sigmoid_poly(x); }
  COURSE_HD static float value(float x) { return x * sigmoid(x); }
  // d/dx = s (1 + x (1 - s)), s = sigmoid(x)
  COURSE_HD static float derivative(float x) {
    const float s = sigmoid(x);
    return s * (1.0f + x * (1.0f - s));
  }
};

// The squeeze-excitation's gate.
struct Sigmoid {
  COURSE_HD static float value(float x) { return Silu::sigmoid(x); }
  COURSE_HD static float derivative(float x) {
    const float s = Silu::sigmoid(x);
    return s * (1.0f - s);
  }
};

// The pre-logits activation of CoAtNet's head.
struct Tanh {
  COURSE_HD static float value(float x) { return tanh_poly(x); }
  COURSE_HD static float derivative(float x) {
    const float t = tanh_poly(x);
    return 1.0f - t * t;
  }
};

// y = F(x) and dx = dy F'(x) of a smooth activation F (GeluTanh, Silu, Sigmoid, Tanh), as maps:
// the forward's a = x, the backward's a = dy and b = x.
template <class F>
struct ActivationMap {
  COURSE_HD float operator()(float x, float) const { return F::value(x); }
};

template <class F>
struct ActivationGradMap {
  COURSE_HD float operator()(float dy, float x) const { return dy * F::derivative(x); }
};

// SwiGLU on a packed (rows, 2F) gate | up input: element i of the (rows, F) output is
// silu(gate) up.
template <class T>
struct SwigluForward {
  const T* x;
  T* y;
  int64_t width;  // F
  COURSE_HD void operator()(int64_t i) const {
    const T* row = x + (i / width) * 2 * width;
    const int64_t j = i % width;
    y[i] = T(Silu::value(static_cast<float>(row[j])) * static_cast<float>(row[width + j]));
  }
};

// For output element i: the gate's gradient dy up silu'(gate) and the up's dy silu(gate).
template <class T>
struct SwigluBackward {
  const T* dy;
  const T* x;
  T* dx;
  int64_t width;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t first = (i / width) * 2 * width, j = i % width;
    const float d = static_cast<float>(dy[i]), gate = static_cast<float>(x[first + j]),
                up = static_cast<float>(x[first + width + j]);
    dx[first + j] = T(d * up * Silu::derivative(gate));
    dx[first + width + j] = T(d * Silu::value(gate));
  }
};

}  // namespace course::ops
