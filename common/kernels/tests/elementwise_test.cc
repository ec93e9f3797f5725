// Elementwise kernels against naive float references, over odd sizes, dtypes and devices; their
// 16-byte packets against the element maps, and which of the two a GPU launch takes.
#include "common/kernels/elementwise.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "common/kernels/elementwise_ops.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_plan.h"
#include "common/kernels/linear.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

using testing::all_close;
using testing::random_tensor;
using testing::to_floats;

// Rounds float reference results to the dtype, as the kernel's store does.
std::vector<float> rounded(std::vector<float> values, DType dtype) {
  return to_floats(cast(Tensor::from_vector(values, {static_cast<int64_t>(values.size())}), dtype));
}

class ElementwiseTest : public testing::DeviceCaseTest<DType, int64_t> {
 protected:
  DType dtype() const { return value<0>(); }
  int64_t n() const { return value<1>(); }
};

TEST_P(ElementwiseTest, AddMulAxpyScaleMatchReference) {
  auto a = random_tensor({n()}, dtype(), device(), 1);
  auto b = random_tensor({n()}, dtype(), device(), 2);
  std::vector<float> sum(n()), product(n()), axpy(n()), scaled(n());
  for (int64_t i = 0; i < n(); ++i) {
    sum[i] = a.values[i] + b.values[i];
    product[i] = a.values[i] * b.values[i];
    axpy[i] = b.values[i] + 0.5f * a.values[i];
    scaled[i] = -3.0f * a.values[i];
  }
  EXPECT_TRUE(all_close(to_floats(add(a.tensor, b.tensor)), rounded(sum, dtype()), dtype()));
  EXPECT_TRUE(all_close(to_floats(mul(a.tensor, b.tensor)), rounded(product, dtype()), dtype()));
  Tensor y = b.tensor.clone();
  axpy_(0.5f, a.tensor, y);
  EXPECT_TRUE(all_close(to_floats(y), rounded(axpy, dtype()), dtype()));
  Tensor x = a.tensor.clone();
  scale_(x, -3.0f);
  EXPECT_TRUE(all_close(to_floats(x), rounded(scaled, dtype()), dtype()));
}

TEST_P(ElementwiseTest, ReluForwardAndBackward) {
  auto x = random_tensor({n()}, dtype(), device(), 3);
  auto dy = random_tensor({n()}, dtype(), device(), 4);
  std::vector<float> y(n()), dx(n());
  for (int64_t i = 0; i < n(); ++i) {
    y[i] = x.values[i] > 0 ? x.values[i] : 0.0f;
    dx[i] = x.values[i] > 0 ? dy.values[i] : 0.0f;
  }
  EXPECT_TRUE(all_close(to_floats(relu_forward(x.tensor)), y, dtype()));
  EXPECT_TRUE(all_close(to_floats(relu_backward(dy.tensor, x.tensor)), dx, dtype()));
}

// relu(a + b) in one pass equals the two passes bit for bit, with sums of both signs, zeros of
// both signs, infinities of both signs meeting and NaN among the inputs.
TEST_P(ElementwiseTest, AddReluIsReluOfTheSumBitForBit) {
  auto a = random_tensor({n()}, dtype(), device(), 5, -2.0f, 2.0f);
  std::vector<float> b_values = to_floats(random_tensor({n()}, dtype(), device(), 6).tensor);
  const std::vector<float> edges = {-0.0f, INFINITY, -INFINITY, NAN, 0.0f, -1e-30f};
  for (size_t i = 0; i < edges.size() && i < b_values.size(); ++i) b_values[i] = edges[i];
  const Tensor b = cast(Tensor::from_vector(b_values, {n()}), dtype()).to(device());
  Tensor a_edges = a.tensor;
  if (n() > 2) {  // +inf meets -inf: NaN, which ReLU maps to 0
    std::vector<float> av = to_floats(a.tensor);
    av[2] = INFINITY;
    a_edges = cast(Tensor::from_vector(av, {n()}), dtype()).to(device());
  }
  EXPECT_EQ(to_floats(add_relu(a_edges, b)), to_floats(relu_forward(add(a_edges, b))));
}

// GELU's tanh form against its formula in double, over x in [-9, 9) (tanh saturating both
// ways), and its derivative.
TEST_P(ElementwiseTest, GeluMatchesTheTanhFormulaAndItsDerivative) {
  auto x = random_tensor({n()}, dtype(), device(), 5, -9.0f, 9.0f);
  auto dy = random_tensor({n()}, dtype(), device(), 6);
  std::vector<double> y(n()), dx(n());
  const double scale = std::sqrt(2.0 / M_PI), cubic = 0.044715;
  for (int64_t i = 0; i < n(); ++i) {
    const double v = x.values[i], t = std::tanh(scale * (v + cubic * v * v * v));
    y[i] = 0.5 * v * (1.0 + t);
    dx[i] = dy.values[i] *
            (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * scale * (1.0 + 3.0 * cubic * v * v));
  }
  EXPECT_TRUE(all_close(to_floats(gelu_forward(x.tensor)), testing::rounded(y, dtype()), dtype()));
  EXPECT_TRUE(all_close(to_floats(gelu_backward(dy.tensor, x.tensor)),
                        testing::rounded(dx, dtype()), dtype()));
}

// SiLU, the sigmoid and tanh against their formulas in double over x in [-30, 30) (each
// saturating both ways), forward and backward.
TEST_P(ElementwiseTest, SmoothActivationsMatchTheirFormulasAndDerivatives) {
  auto x = random_tensor({n()}, dtype(), device(), 7, -30.0f, 30.0f);
  auto dy = random_tensor({n()}, dtype(), device(), 8);
  struct Case {
    const char* name;
    Tensor (*forward)(const Tensor&);
    Tensor (*backward)(const Tensor&, const Tensor&);
    double (*value)(double), (*derivative)(double);
  };
  const auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  const Case cases[] = {
      {"silu", silu_forward, silu_backward, [](double v) { return v / (1.0 + std::exp(-v)); },
       [](double v) {
         const double s = 1.0 / (1.0 + std::exp(-v));
         return s * (1.0 + v * (1.0 - s));
       }},
      {"sigmoid", sigmoid_forward, sigmoid_backward, sigmoid,
       [](double v) { return std::exp(-v) / ((1.0 + std::exp(-v)) * (1.0 + std::exp(-v))); }},
      {"tanh", tanh_forward, tanh_backward, [](double v) { return std::tanh(v); },
       [](double v) { return 1.0 - std::tanh(v) * std::tanh(v); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<double> y(n()), dx(n());
    for (int64_t i = 0; i < n(); ++i) {
      y[i] = c.value(x.values[i]);
      dx[i] = dy.values[i] * c.derivative(x.values[i]);
    }
    EXPECT_TRUE(all_close(to_floats(c.forward(x.tensor)), testing::rounded(y, dtype()), dtype()));
    EXPECT_TRUE(all_close(to_floats(c.backward(dy.tensor, x.tensor)), testing::rounded(dx, dtype()),
                          dtype()));
  }
}

// A signed f32 bias added to each of n rows of 13 columns.
TEST_P(ElementwiseTest, AddRowBiasAddsTheBiasToEveryRow) {
  const int64_t cols = 13;
  auto y = random_tensor({n(), cols}, dtype(), device(), 7);
  auto bias = random_tensor({cols}, DType::kF32, device(), 8, -4.0f, 4.0f);
  std::vector<double> expected(n() * cols);
  for (int64_t i = 0; i < n() * cols; ++i) expected[i] = y.values[i] + bias.values[i % cols];
  Tensor out = y.tensor.clone();
  add_row_bias_(out, bias.tensor);
  EXPECT_TRUE(all_close(to_floats(out), testing::rounded(expected, dtype()), dtype()));
}

TEST_P(ElementwiseTest, FillAndZeros) {
  Tensor t = Tensor::empty({n()}, dtype(), device());
  fill_(t, 2.5);
  EXPECT_EQ(to_floats(t), std::vector<float>(n(), 2.5f));
  EXPECT_EQ(to_floats(zeros({n()}, dtype(), device())), std::vector<float>(n(), 0.0f));
}

COURSE_INSTANTIATE_DEVICE_CASES(ElementwiseTest,
                                ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                                ::testing::Values<int64_t>(1, 7, 1023, 4097, 100003));

// One packet per index, the last one element by element, gives every element the map's value
// bit for bit, at counts on each side of a packet's (8 16-bit or 4 f32 elements), for maps of
// one and two inputs and one that writes over an input; run here on the CPU, as a GPU runs it.
template <class Map>
void expect_packets_map_each_element(const Map& map, DType dtype) {
  for (int64_t n : {1, 3, 4, 5, 7, 8, 9, 16, 17, 1023}) {
    SCOPED_TRACE(std::to_string(n) + " elements");
    const Tensor a = random_tensor({n}, dtype, Device::cpu(), 70, -3.0f, 3.0f).tensor;
    const Tensor b = random_tensor({n}, dtype, Device::cpu(), 71, -3.0f, 3.0f).tensor;
    visit_floating(dtype, "packets", [&]<class T>() {
      Tensor by_element = Tensor::empty({n}, dtype), by_packet = b.clone();
      for_each_index(
          Device::cpu(), n,
          ops::MapElements<T, Map>{a.data_as<T>(), b.data_as<T>(), by_element.data_as<T>(), map});
      const ops::MapPackets<T, Map> packets{a.data_as<T>(), by_packet.data_as<T>(),
                                            by_packet.data_as<T>(), n, map};
      for_each_index(Device::cpu(), packets.packets(), packets);
      EXPECT_EQ(to_floats(by_packet), to_floats(by_element));
    });
  }
}

TEST(MapPackets, EveryElementAsTheElementMapBitForBit) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    expect_packets_map_each_element(ops::AddReluMap{}, dtype);
    expect_packets_map_each_element(ops::ReluGradMap{}, dtype);
    expect_packets_map_each_element(ops::AxpyMap{-0.5f}, dtype);
    expect_packets_map_each_element(ops::ActivationGradMap<ops::GeluTanh>{}, dtype);
  }
}

// Casts between the floating types by packets of the input, the same bits as element by element.
TEST(MapPackets, CastsEveryElementAsTheElementCastBitForBit) {
  for (int64_t n : {1, 3, 4, 5, 8, 9, 17, 1023}) {
    SCOPED_TRACE(std::to_string(n) + " elements");
    for (DType from : {DType::kF32, DType::kBF16, DType::kF16}) {
      const Tensor x = random_tensor({n}, from, Device::cpu(), 72, -300.0f, 300.0f).tensor;
      for (DType to : {DType::kF32, DType::kBF16, DType::kF16}) {
        visit_floating(from, "from", [&]<class From>() {
          visit_floating(to, "to", [&]<class To>() {
            Tensor by_element = Tensor::empty({n}, to), by_packet = Tensor::empty({n}, to);
            for_each_index(Device::cpu(), n,
                           ops::Cast<To, From>{x.data_as<From>(), by_element.data_as<To>()});
            const ops::CastPackets<To, From> packets{x.data_as<From>(), by_packet.data_as<To>(), n};
            for_each_index(Device::cpu(), packets.packets(), packets);
            EXPECT_EQ(to_floats(by_packet), to_floats(by_element))
                << dtype_name(from) << " to " << dtype_name(to);
          });
        });
      }
    }
  }
}

// A GPU's launch (planned here under a LaunchLog) takes packets when every operand is aligned
// to them, and an element per index for a view that starts inside a packet.
TEST(MapPackets, AGpuTakesPacketsOfAlignedOperandsOnly) {
  const Tensor a = zeros({1001}, DType::kBF16), b = zeros({1001}, DType::kBF16);
  {
    LaunchLog log;
    add(a, b);
    ASSERT_EQ(log.launches().size(), 1u);
    EXPECT_NE(log.launches()[0].kernel.find("MapPackets"), std::string::npos);
    EXPECT_EQ(log.launches()[0].n, (1001 + 7) / 8);
  }
  {
    LaunchLog log;
    cast(a, DType::kF32);
    ASSERT_EQ(log.launches().size(), 1u);
    EXPECT_NE(log.launches()[0].kernel.find("CastPackets"), std::string::npos);
  }
  const Tensor a_view = a.slice(1, 1001), b_view = b.slice(1, 1001);
  LaunchLog log;
  add(a_view, b_view);
  cast(a_view, DType::kF32);
  ASSERT_EQ(log.launches().size(), 2u);
  EXPECT_NE(log.launches()[0].kernel.find("MapElements"), std::string::npos);
  EXPECT_EQ(log.launches()[0].n, 1000);
  EXPECT_NE(log.launches()[1].kernel.find("Cast"), std::string::npos);
  EXPECT_EQ(log.launches()[1].kernel.find("CastPackets"), std::string::npos);
}

using CastTest = testing::DeviceTest;

TEST_P(CastTest, ConvertsBetweenEveryPairOfDtypes) {
  const std::vector<float> values = {0.0f, 1.0f, 2.0f, 3.0f, 100.0f, 7.0f, 255.0f};
  const DType all[] = {DType::kF32, DType::kF16, DType::kBF16,
                       DType::kI32, DType::kI64, DType::kU8};
  for (DType from : all) {
    Tensor source = cast(Tensor::from_vector(values, {7}), from).to(device());
    for (DType to : all) {
      Tensor out = cast(source, to);
      EXPECT_EQ(out.dtype(), to);
      EXPECT_EQ(to_floats(cast(out, DType::kF32)), values)
          << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
}

TEST_P(CastTest, RoundsToNearestEvenIntoHalfTypes) {
  // 1 + 2^-11 is halfway between two f16 values: it rounds to the even one, 1.0.
  Tensor x = Tensor::from_vector<float>({1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048}, {2}).to(device());
  Tensor h = cast(x, DType::kF16).to(Device::cpu());
  EXPECT_EQ(h.data_as<Half>()[0].bits, 0x3c00);
  EXPECT_EQ(h.data_as<Half>()[1].bits, 0x3c02);
}

TEST_P(CastTest, MismatchesAndUnsupportedDtypesAreErrors) {
  Tensor a = zeros({3}, DType::kF32, device());
  EXPECT_THROW(add(a, zeros({4}, DType::kF32, device())), Error);
  EXPECT_THROW(add(a, zeros({3}, DType::kF16, device())), Error);
  try {
    relu_forward(zeros({3}, DType::kI32, device()));
    FAIL() << "relu on integers was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr("relu_forward needs a floating-point tensor, got i32"));
  }
  Tensor y = zeros({3}, DType::kF32, device());
  EXPECT_THROW(copy_(y, zeros({3}, DType::kF16, device())), Error);
}

COURSE_INSTANTIATE_DEVICE_TESTS(CastTest);

}  // namespace
}  // namespace course
