// Reductions against double-precision references, over odd sizes, dtypes and devices.
#include "common/kernels/reduce.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <tuple>

#include "common/kernels/elementwise.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

using testing::random_tensor;

class ReduceTest : public testing::DeviceCaseTest<DType, int64_t> {
 protected:
  DType dtype() const { return value<0>(); }
  int64_t n() const { return value<1>(); }
};

TEST_P(ReduceTest, SumMeanMaxArgmaxMatchReference) {
  auto x = random_tensor({n()}, dtype(), device(), 11, -2.0f, 3.0f);
  double total = 0, largest = -INFINITY;
  int64_t where = -1;
  for (int64_t i = 0; i < n(); ++i) {
    total += x.values[i];
    if (x.values[i] > largest) largest = x.values[i], where = i;  // first largest on ties
  }
  // f32 accumulation of n values in [-2, 3): error bound grows like n * eps * max|x|.
  const double sum_tolerance = 1e-6 * 3.0 * static_cast<double>(n()) + 1e-5;
  EXPECT_NEAR(sum(x.tensor), total, sum_tolerance);
  EXPECT_NEAR(mean(x.tensor), total / n(), sum_tolerance / n());
  EXPECT_EQ(max(x.tensor), static_cast<float>(largest));
  EXPECT_EQ(argmax(x.tensor), where);
}

TEST_P(ReduceTest, ArgmaxRowsPicksTheFirstLargestPerRow) {
  const int64_t cols = 1 + n() % 13;
  auto x = random_tensor({n(), cols}, dtype(), device(), 12);
  const std::vector<int64_t> got = argmax_rows(x.tensor).to_vector<int64_t>();
  for (int64_t r = 0; r < n(); ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < cols; ++c) {
      if (x.values[r * cols + c] > x.values[r * cols + best]) best = c;
    }
    ASSERT_EQ(got[r], best) << "row " << r;
  }
}

// The count of correct rows adds on the device to what it held: the reference is argmax_rows.
TEST_P(ReduceTest, AddCorrectCountsRowsWhoseFirstLargestIsTheLabel) {
  const int64_t cols = 1 + n() % 13;
  auto x = random_tensor({n(), cols}, dtype(), device(), 13);
  std::vector<int64_t> labels(n());
  for (int64_t r = 0; r < n(); ++r) labels[r] = (r * 7 + 3) % cols;
  const std::vector<int64_t> best = argmax_rows(x.tensor).to_vector<int64_t>();
  int64_t correct = 0;
  for (int64_t r = 0; r < n(); ++r) correct += best[r] == labels[r];
  Tensor count = Tensor::from_vector<float>({2.0f}, {1}).to(device());
  add_correct_(x.tensor, Tensor::from_vector<int64_t>(labels, {n()}).to(device()), count);
  EXPECT_EQ(count.to_vector<float>()[0], 2.0f + static_cast<float>(correct));
}

COURSE_INSTANTIATE_DEVICE_CASES(ReduceTest,
                                ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                                ::testing::Values<int64_t>(1, 7, 1023, 4096, 4097, 100003));

using ReduceEdgeTest = testing::DeviceTest;

TEST_P(ReduceEdgeTest, TiesNaNsAndEmptyInputs) {
  Tensor ties = Tensor::from_vector<float>({1, 5, 2, 5, 5}, {5}).to(device());
  EXPECT_EQ(argmax(ties), 1);
  EXPECT_EQ(argmax_rows(ties.view({1, 5})).to_vector<int64_t>(), std::vector<int64_t>{1});
  Tensor count = zeros({1}, DType::kF32, device());
  for (int64_t label : {1, 3}) {  // a tie: only the first largest counts
    add_correct_(ties.view({1, 5}), Tensor::from_vector<int64_t>({label}, {1}).to(device()), count);
  }
  EXPECT_EQ(count.to_vector<float>(), std::vector<float>{1.0f});
  Tensor with_nan = Tensor::from_vector<float>({1, NAN, 2}, {3}).to(device());
  EXPECT_TRUE(std::isnan(max(with_nan)));
  EXPECT_FALSE(all_finite(with_nan));
  EXPECT_FALSE(all_finite(Tensor::from_vector<float>({1, -INFINITY}, {2}).to(device())));
  EXPECT_TRUE(all_finite(Tensor::from_vector<float>({1, 3e38f, -2}, {3}).to(device())));
  EXPECT_EQ(sum(zeros({0}, DType::kF32, device())), 0.0f);
  EXPECT_THROW(mean(zeros({0}, DType::kF32, device())), Error);
  EXPECT_THROW(sum(zeros({3}, DType::kI64, device())), Error);
}

TEST(Reduce, CpuResultDoesNotDependOnTheThreadCount) {
  auto x = random_tensor({300001}, DType::kF32, Device::cpu(), 5);
  const float reference = sum(x.tensor);
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    EXPECT_EQ(sum(x.tensor), reference) << threads << " threads";
  }
}

COURSE_INSTANTIATE_DEVICE_TESTS(ReduceEdgeTest);

}  // namespace
}  // namespace course
