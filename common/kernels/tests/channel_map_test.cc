// The GPU's packet form of a per-channel map (channel_map_ops.h), run on the CPU for batch
// norm's two maps (with and without their fused ReLU): every element's channel against its storage
// index computed directly, and the outputs bit for bit against the row kernel the CPU runs. The
// shapes make packets cross planes (7 x 7 = 49 and 2 x 3 = 6 elements a plane) and end in a partial
// packet.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/kernels/batch_norm_ops.h"
#include "common/kernels/channel_map_ops.h"
#include "common/kernels/launch.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

TEST(ChannelCursor, FollowsTheStorageIndexAcrossPlanes) {
  const int64_t n = 2, c = 3, hw = 5;
  for (int64_t start = 0; start < n * c * hw; start += 7) {
    ops::ChannelCursor cursor(c, hw, start);
    for (int64_t at = start; at < n * c * hw; ++at, cursor.next())
      ASSERT_EQ(cursor.channel, (at / hw) % c) << "index " << at;
  }
}

// Random per-channel constants (invstd and the counts positive).
struct Constants {
  testing::TestTensor mean, invstd, gamma, beta, sum_dy, sum_dy_xhat;
  explicit Constants(int64_t c)
      : mean(testing::random_tensor({c}, DType::kF32, Device::cpu(), 11, -2.0f, 2.0f)),
        invstd(testing::random_tensor({c}, DType::kF32, Device::cpu(), 12, 0.1f, 3.0f)),
        gamma(testing::random_tensor({c}, DType::kF32, Device::cpu(), 13, -1.5f, 1.5f)),
        beta(testing::random_tensor({c}, DType::kF32, Device::cpu(), 14, -1.0f, 1.0f)),
        sum_dy(testing::random_tensor({c}, DType::kF32, Device::cpu(), 15, -9.0f, 9.0f)),
        sum_dy_xhat(testing::random_tensor({c}, DType::kF32, Device::cpu(), 16, -9.0f, 9.0f)) {}
  ops::Normalise norm(bool relu) const {
    return {mean.tensor.data_as<float>(), invstd.tensor.data_as<float>(),
            gamma.tensor.data_as<float>(), beta.tensor.data_as<float>(), relu};
  }
  ops::NormaliseGrad grad(float m, bool relu) const {
    return {mean.tensor.data_as<float>(),
            invstd.tensor.data_as<float>(),
            gamma.tensor.data_as<float>(),
            beta.tensor.data_as<float>(),
            sum_dy.tensor.data_as<float>(),
            sum_dy_xhat.tensor.data_as<float>(),
            m,
            relu};
  }
};

// Runs both forms of one map on the CPU; their outputs must agree bit for bit.
template <class T, class Map>
void expect_same_bits(const ops::ChannelRows<T, Map>& rows,
                      const ops::ChannelPackets<T, Map>& packets) {
  const ops::ChannelLoop& loop = rows.loop;
  for_each_row(Device::cpu(), loop.rows(), loop.row_length(), rows);
  for_each_index(Device::cpu(), packets.packets(), packets);
  for (int64_t e = 0; e < loop.numel(); ++e)
    ASSERT_EQ(static_cast<float>(packets.out[e]), static_cast<float>(rows.out[e]))
        << "element " << e;
}

template <class T>
void expect_packets_match_rows(const Shape& shape) {
  const int64_t n = shape[0], c = shape[1], hw = shape[2] * shape[3];
  const ops::ChannelLoop loop{n, c, hw, false};
  const DType dtype = DTypeOf<T>::value;
  const Tensor x = testing::random_tensor(shape, dtype, Device::cpu(), 1, -3.0f, 3.0f).tensor;
  const Tensor dy = testing::random_tensor(shape, dtype, Device::cpu(), 2, -1.0f, 1.0f).tensor;
  const Constants k(c);
  std::vector<T> by_rows(x.numel()), by_packets(x.numel());
  for (const bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "with a fused ReLU" : "without");
    const ops::Normalise norm = k.norm(relu);
    expect_same_bits(ops::ChannelRows<T, ops::Normalise>{x.data_as<T>(), x.data_as<T>(),
                                                         by_rows.data(), loop, norm},
                     ops::ChannelPackets<T, ops::Normalise>{x.data_as<T>(), x.data_as<T>(),
                                                            by_packets.data(), loop, norm});
    const ops::NormaliseGrad grad = k.grad(static_cast<float>(n * hw), relu);
    expect_same_bits(ops::ChannelRows<T, ops::NormaliseGrad>{x.data_as<T>(), dy.data_as<T>(),
                                                             by_rows.data(), loop, grad},
                     ops::ChannelPackets<T, ops::NormaliseGrad>{x.data_as<T>(), dy.data_as<T>(),
                                                                by_packets.data(), loop, grad});
  }
}

TEST(ChannelPackets, BatchNormPassesMatchTheRowKernelsExactly) {
  for (const Shape& shape : {Shape{3, 4, 7, 7}, Shape{3, 5, 2, 3}, Shape{1, 3, 1, 1}}) {
    SCOPED_TRACE(Tensor::empty(shape).str());
    expect_packets_match_rows<float>(shape);
    expect_packets_match_rows<BFloat16>(shape);
  }
}

}  // namespace
}  // namespace course
