// Gradient clipping against hand-computed norms and clipped values: the squares summed over
// gradients of every layout, dtype and size (on every device the machine has), the clip by
// min(1, max / (norm + 1e-6)), a loss-scaled gradient clipped as its unscaled one, and a norm
// that is not finite (an overflowed step) leaving the gradients untouched.
#include "common/optim/gradient_clipping.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course::optim {
namespace {

using testing::all_close;
using testing::to_floats;

// A parameter whose gradient holds `values` (f32 unless said).
std::unique_ptr<nn::Parameter> with_grad(Tensor grad) {
  auto p = std::make_unique<nn::Parameter>(zeros(grad.shape(), DType::kF32, grad.device()));
  p->grad = std::move(grad);
  return p;
}

double hand_squares(const std::vector<std::vector<float>>& grads) {
  double squares = 0;
  for (const auto& g : grads) {
    for (float v : g) squares += static_cast<double>(v) * v;
  }
  return squares;
}

class SquaredGradientSum : public testing::DeviceTest {};

TEST_P(SquaredGradientSum, OfGradientsOfEveryLayoutAndDtype) {
  const Device device = this->device();
  {
    // A conv weight in channels-last, an odd-sized bias, a bf16 shard and a large matrix whose
    // squares need more than one chunk of the device's reduction.
    const testing::TestTensor conv = testing::random_tensor({5, 3, 3, 3}, DType::kF32, device, 1);
    const testing::TestTensor bias = testing::random_tensor({7}, DType::kF32, device, 2, -3, 5);
    const testing::TestTensor shard = testing::random_tensor({33}, DType::kBF16, device, 3);
    const testing::TestTensor big = testing::random_tensor({301, 129}, DType::kF32, device, 4);
    std::vector<std::unique_ptr<nn::Parameter>> owned;
    owned.push_back(with_grad(to_memory_format(conv.tensor, MemoryFormat::kChannelsLast)));
    owned.push_back(with_grad(bias.tensor));
    owned.push_back(with_grad(shard.tensor));
    owned.push_back(with_grad(big.tensor));
    std::vector<nn::Parameter*> params;
    for (const auto& p : owned) params.push_back(p.get());
    const double expected = hand_squares({conv.values, bias.values, shard.values, big.values});
    const Tensor sum = squared_gradient_sum(params);
    EXPECT_EQ(sum.device(), device);
    EXPECT_TRUE(
        all_close(to_floats(sum), {static_cast<float>(expected)}, {.atol = 0, .rtol = 1e-5}))
        << device.str();
  }
  EXPECT_EQ(to_floats(squared_gradient_sum({})), std::vector<float>{0.0f});
}

INSTANTIATE_TEST_SUITE_P(Devices, SquaredGradientSum, ::testing::ValuesIn(testing::test_devices()),
                         testing::device_test_name);

// The global factor of a norm given as its square on the device (as a parallel scheme sums it).
TEST_P(SquaredGradientSum, ClipsEveryGradientByTheGlobalFactor) {
  const Device device = this->device();
  auto a = with_grad(Tensor::from_vector<float>({3, -4}, {2}, device));
  auto b = with_grad(Tensor::from_vector<float>({12}, {1}, device));
  // |(3, -4, 12)| = 13: clipped to 6.5, every element halved (up to the 1e-6 guard).
  GradientClipping clipping(6.5f);
  const auto squares = [&](float norm) {
    return [=] { return Tensor::from_vector<float>({norm * norm}, {1}, device); };
  };
  clipping.apply(squares(13.0f), {a.get(), b.get()});
  EXPECT_EQ(clipping.clipped_steps(), 1);
  EXPECT_EQ(*clipping.last_norm(), 13.0f);
  const float factor = 6.5f / (13.0f + 1e-6f);
  EXPECT_TRUE(all_close(to_floats(a->grad), {3 * factor, -4 * factor}, DType::kF32));
  EXPECT_TRUE(all_close(to_floats(b->grad), {12 * factor}, DType::kF32));
  // At or under the limit: untouched.
  clipping.apply(squares(6.5f), {a.get()});
  EXPECT_EQ(clipping.clipped_steps(), 1);
  EXPECT_TRUE(all_close(to_floats(a->grad), {3 * factor, -4 * factor}, DType::kF32));
  EXPECT_NE(clipping.describe().find("last 6.5, largest 13, clipped to 6.5 in 1 of 2 steps"),
            std::string::npos)
      << clipping.describe();
}

TEST(GradientClipping, AnOverflowedStepIsLeftToTheLossScaler) {
  for (const float norm : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
    auto a =
        with_grad(Tensor::from_vector<float>({std::numeric_limits<float>::infinity(), 2}, {2}));
    GradientClipping clipping(1.0f);
    clipping.apply([=] { return Tensor::from_vector<float>({norm}, {1}); }, {a.get()});
    EXPECT_EQ(clipping.clipped_steps(), 0);
    EXPECT_EQ(to_floats(a->grad)[1], 2.0f);
  }
  GradientClipping clipping(1.0f);
  auto a = with_grad(Tensor::from_vector<float>({std::nanf(""), 2}, {2}));
  clipping.apply_to_whole({a.get()});
  EXPECT_EQ(to_floats(a->grad)[1], 2.0f);
  EXPECT_TRUE(std::isnan(*clipping.last_norm()));
  EXPECT_NE(clipping.describe().find("clipped to 1 in 0 of 1 steps"), std::string::npos)
      << clipping.describe();
}

// A gradient multiplied by a loss scale of 2^16 is clipped as its unscaled self: the same values
// once unscaled, and the unscaled norm recorded.
TEST(GradientClipping, AScaledGradientIsClippedAsItsUnscaledOne) {
  const testing::TestTensor g = testing::random_tensor({50}, DType::kF32, Device::cpu(), 5, -2, 2);
  const float scale = 65536.0f;
  auto plain = with_grad(g.tensor.clone());
  auto scaled = with_grad(g.tensor.clone());
  scale_(scaled->grad, scale);
  GradientClipping unscaled_clip(0.5f), scaled_clip(0.5f);
  unscaled_clip.apply_to_whole({plain.get()});
  scaled_clip.apply_to_whole({scaled.get()}, Tensor::from_vector<float>({scale}, {1}));
  scale_(scaled->grad, 1 / scale);
  EXPECT_TRUE(all_close(to_floats(scaled->grad), to_floats(plain->grad), DType::kF32));
  const float hand_norm = static_cast<float>(std::sqrt(hand_squares({g.values})));
  EXPECT_TRUE(all_close({*scaled_clip.last_norm()}, {hand_norm}, DType::kF32));
  EXPECT_TRUE(all_close({*unscaled_clip.last_norm()}, {hand_norm}, DType::kF32));
  EXPECT_GT(hand_norm, 0.5f) << "the test must clip";
}

TEST(GradientClipping, OffWithoutANormAndRefusesOneNotAboveZero) {
  GradientClipping off(std::nullopt);
  EXPECT_FALSE(off.on());
  auto a = with_grad(Tensor::from_vector<float>({30, 40}, {2}));
  off.apply_to_whole({a.get()});
  EXPECT_EQ(to_floats(a->grad)[1], 40.0f);
  EXPECT_FALSE(off.last_norm());
  for (const float bad : {0.0f, -1.0f}) {
    EXPECT_NE(testing::error_of([&] {
                GradientClipping clipping(bad);
              }).find("clipped to a positive norm"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace course::optim
