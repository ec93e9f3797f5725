// The NCCL engine on every visible GPU, one rank each (the GPU self-test runs it; without a GPU
// every case skips with the reason): each rank on its own GPU, every collective in f32, f16 and
// bf16 against values each rank computes on the CPU, a ring exchange of 1 MiB per rank (past
// NCCL's buffers: grouped, it cannot deadlock), the rows of a split communicator, and a
// collective that one rank never joins (the others stop at the timeout and abort, no hang).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/kernels/elementwise.h"
#include "common/parallel/comm/communicator.h"
#include "common/parallel/comm/rank_setup.h"

namespace course::parallel {
namespace {

class Nccl : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible: " << cuda_status();
    comm_ = Communicator::world();
    device_ = rank_device(parse_device_request("cuda"), *comm_);
  }
  // Small integers (exact in every dtype, sums included): rank r's element i = r + i % 7 - 3.
  Tensor values(int rank, int64_t n) const {
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(rank + i % 7 - 3);
    return cast(Tensor::from_vector(v, {n}), GetParam()).to(device_);
  }
  static std::vector<float> host(const Tensor& t) {
    return cast(t, DType::kF32).to(Device::cpu()).to_vector<float>();
  }
  // The sum over ranks of values(rank, n), computed on the CPU.
  std::vector<float> world_sum(int64_t n) const {
    std::vector<float> want(n, 0.0f);
    for (int q = 0; q < comm_->size(); ++q) {
      const std::vector<float> v = host(values(q, n));
      for (int64_t i = 0; i < n; ++i) want[i] += v[i];
    }
    return want;
  }
  std::shared_ptr<Communicator> comm_;
  Device device_;
};

TEST_P(Nccl, EachRankHasItsOwnGpu) {
  EXPECT_EQ(device_, Device::cuda(comm_->local_rank() % cuda_device_count()));
  EXPECT_EQ(process_device(), device_);
  EXPECT_TRUE(comm_->has_nccl());
}

TEST_P(Nccl, CollectivesMatchTheCpu) {
  const int p = comm_->size(), r = comm_->rank();
  const int64_t n = 1000;
  Tensor sum = values(r, n);
  comm_->allreduce(sum)->wait();
  EXPECT_EQ(host(sum), world_sum(n));

  Tensor root = values(r, n);
  comm_->broadcast(root, p - 1)->wait();
  EXPECT_EQ(host(root), host(values(p - 1, n)));

  Tensor mine = Tensor::empty({n / 10}, GetParam(), device_);
  comm_->reduce_scatter(values(r, n / 10 * p), mine)->wait();
  Tensor all = Tensor::empty({n / 10 * p}, GetParam(), device_);
  comm_->all_gather(mine, all)->wait();
  Tensor reference = values(r, n / 10 * p);
  comm_->allreduce(reference)->wait();
  EXPECT_EQ(host(all), host(reference));
}

TEST_P(Nccl, GroupedRingExchangeOfAMebibyte) {
  const int p = comm_->size(), r = comm_->rank();
  const int64_t n = (1 << 20) / 2;
  Tensor out = values(r, n), in = Tensor::empty({n}, GetParam(), device_);
  comm_->exchange({send_to(out, (r + 1) % p), receive_from(in, (r + p - 1) % p)})->wait();
  EXPECT_EQ(host(in), host(values((r + p - 1) % p, n)));
}

TEST_P(Nccl, SplitCommunicatorsAreGpuCommunicators) {
  const int r = comm_->rank();
  const auto row = comm_->split(r % 2, r);
  EXPECT_TRUE(row->has_nccl());
  Tensor t = values(r, 16);
  row->allreduce(t)->wait();
  std::vector<float> want(16, 0.0f);
  for (int q = r % 2; q < comm_->size(); q += 2) {
    const std::vector<float> v = host(values(q, 16));
    for (int i = 0; i < 16; ++i) want[i] += v[i];
  }
  EXPECT_EQ(host(t), want);
}

// Rank 0 never joins an all-reduce on a copy of the world with a 2 s timeout: every other rank
// ends with the timeout's error, its communicator aborted (which ends NCCL's kernel on its
// GPU), and the world's communicator still works for all of them afterwards.
TEST_P(Nccl, ACollectiveOneRankNeverJoinsEndsAtTheTimeout) {
  if (GetParam() != DType::kF32) GTEST_SKIP() << "one dtype is enough";
  const int r = comm_->rank();
  {
    const auto copy = comm_->split(0, r);
    copy->set_timeout(2);
    if (r != 0) {
      Tensor t = values(r, 1 << 16);
      EXPECT_THAT([&] { copy->allreduce(t)->synchronize(); },
                  ::testing::ThrowsMessage<Error>(::testing::HasSubstr("did not complete within")));
    }
  }
  Tensor after = values(r, 64);
  comm_->allreduce(after)->wait();
  EXPECT_EQ(host(after), world_sum(64));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Nccl, ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace course::parallel
