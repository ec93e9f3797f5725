// The MPI communicator on 2 and 4 CPU ranks (run under mpirun by communicator_test.sh): every
// collective against values each rank can compute on its own, sub-communicators, and misuse.
#include "common/parallel/comm/communicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <thread>

#include "common/kernels/elementwise.h"
#include "common/parallel/comm/rank_setup.h"
#include "common/tensor/host_waits.h"
#include "common/testing/world.h"

namespace course::parallel {
namespace {

using ::testing::HasSubstr;

using testing::world;

// Rank r's vector: element i = 100 * r + i.
std::vector<float> rank_values(int r, int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(100 * r + i);
  return v;
}

TEST(Communicator, AllreduceSumsMaxesAndMinsOverRanks) {
  const int p = world()->size();
  for (int64_t n : {1, 7, 1023}) {
    Tensor t = Tensor::from_vector(rank_values(world()->rank(), n), {n});
    world()->allreduce(t)->wait();
    const std::vector<float> got = t.to_vector<float>();
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i], 100.0f * p * (p - 1) / 2 + p * i) << "element " << i;
    }
  }
  Tensor m = Tensor::from_vector<int64_t>({world()->rank(), -world()->rank()}, {2});
  world()->allreduce(m, ReduceOp::kMax)->wait();
  EXPECT_EQ(m.to_vector<int64_t>(), (std::vector<int64_t>{p - 1, 0}));
  // Fresh per-rank values: max and min of the same inputs differ on every element.
  Tensor low = Tensor::from_vector<int64_t>({world()->rank(), -world()->rank()}, {2});
  world()->allreduce(low, ReduceOp::kMin)->wait();
  EXPECT_EQ(low.to_vector<int64_t>(), (std::vector<int64_t>{0, -(p - 1)}));
}

// Sums of kRingAllreduceBytes and more go around the course's ring on 2 ranks (through MPI on
// 4): just below and at the threshold, and a size the ranks do not divide, against the sums
// each rank computes itself.
TEST(Communicator, LargeSumsTakeTheRingAndStayExact) {
  const int p = world()->size();
  const int64_t threshold = kRingAllreduceBytes / 4;
  for (int64_t n : {threshold - 1, threshold, 3 * threshold + 1}) {
    Tensor t = Tensor::from_vector(rank_values(world()->rank(), n), {n});
    world()->allreduce(t)->wait();
    const std::vector<float> got = t.to_vector<float>();
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i], 100.0f * p * (p - 1) / 2 + p * i) << "element " << i << " of " << n;
    }
  }
}

// Moves `work` on for a while from this rank alone, as overlapping code does with test().
void poll_for_a_while(Work& work) {
  for (int poll = 0; poll < 100 && !work.test(); ++poll) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Two rings in flight (on 2 ranks; MPI's all-reduces on 4) and a tagged exchange on the same
// communicator, with rank 0 alone moving the rings on (test()) while the others only wait at the
// end: rank 0 posts ring steps earlier than its peers, yet no ring's message may match another
// ring's receive or the exchange's.
TEST(Communicator, RingsInFlightKeepApartFromPointToPointTraffic) {
  const int p = world()->size(), r = world()->rank();
  const int64_t n = kRingAllreduceBytes / 4 + 3;
  Tensor a = Tensor::from_vector(rank_values(r, n), {n});
  Tensor b = Tensor::from_vector(rank_values(2 * r + 1, n), {n});
  WorkPtr sum_a = world()->allreduce(a);
  world()->barrier();  // every rank has posted a's first step
  if (r == 0) poll_for_a_while(*sum_a);
  WorkPtr sum_b = world()->allreduce(b);
  if (r == 0) poll_for_a_while(*sum_b);
  Tensor out = Tensor::from_vector(rank_values(r, 10), {10}), in = Tensor::empty({10});
  world()->exchange({send_to(out, (r + 1) % p, 5), receive_from(in, (r + p - 1) % p, 5)})->wait();
  sum_b->wait();
  sum_a->wait();
  EXPECT_EQ(in.to_vector<float>(), rank_values((r + p - 1) % p, 10));
  const std::vector<float> got_a = a.to_vector<float>(), got_b = b.to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(got_a[i], 100.0f * p * (p - 1) / 2 + p * i) << "element " << i << " of a";
    ASSERT_EQ(got_b[i], 100.0f * p * p + p * i) << "element " << i << " of b";
  }
}

TEST(Communicator, BroadcastFromEveryRoot) {
  for (int root = 0; root < world()->size(); ++root) {
    Tensor t = Tensor::from_vector(rank_values(world()->rank(), 5), {5});
    world()->broadcast(t, root)->wait();
    EXPECT_EQ(t.to_vector<float>(), rank_values(root, 5));
  }
}

TEST(Communicator, ReduceScatterAndAllGatherComposeToAllreduce) {
  const int p = world()->size(), r = world()->rank();
  const int64_t block = 3;
  Tensor in = Tensor::from_vector(rank_values(r, block * p), {block * p});
  Tensor mine = Tensor::empty({block});
  world()->reduce_scatter(in, mine)->wait();
  const std::vector<float> got = mine.to_vector<float>();
  for (int64_t i = 0; i < block; ++i) {
    EXPECT_EQ(got[i], 100.0f * p * (p - 1) / 2 + p * (r * block + i));
  }
  Tensor all = Tensor::empty({block * p});
  world()->all_gather(mine, all)->wait();
  Tensor reference = Tensor::from_vector(rank_values(r, block * p), {block * p});
  world()->allreduce(reference)->wait();
  EXPECT_EQ(all.to_vector<float>(), reference.to_vector<float>());
}

// Ranks that share a device (more ranks than GPUs: NCCL needs one per rank) reach each other
// through MPI, the device's tensors staged through pinned host twins: here every rank's own
// simulated sim:0 stands for the GPU they share. Every collective's result lands in the device
// tensors, each staging copy is a host wait; ranks on devices of their own do not stage.
TEST(Communicator, RanksSharingADeviceStageThroughHostTwins) {
  const int p = world()->size(), r = world()->rank();
  const auto own = world()->split(0, r);
  own->use_device(Device::sim(r));
  EXPECT_FALSE(own->stages_device_tensors());
  const auto shared = world()->split(0, r);
  shared->use_device(Device::sim(0));
  ASSERT_TRUE(shared->stages_device_tensors());
  const Device sim = Device::sim(0);
  const HostWaits before = host_waits();

  Tensor sum = Tensor::from_vector(rank_values(r, 1023), {1023}).to(sim);
  shared->allreduce(sum)->wait();
  const std::vector<float> got = sum.to(Device::cpu()).to_vector<float>();
  for (int64_t i = 0; i < 1023; ++i) {
    ASSERT_EQ(got[i], 100.0f * p * (p - 1) / 2 + p * i) << "element " << i;
  }
  Tensor from_last = Tensor::from_vector(rank_values(r, 5), {5}).to(sim);
  shared->broadcast(from_last, p - 1)->wait();
  EXPECT_EQ(from_last.to(Device::cpu()).to_vector<float>(), rank_values(p - 1, 5));

  const int64_t block = 3;
  Tensor in = Tensor::from_vector(rank_values(r, block * p), {block * p}).to(sim);
  Tensor mine = Tensor::empty({block}, DType::kF32, sim);
  shared->reduce_scatter(in, mine)->wait();
  const std::vector<float> scattered = mine.to(Device::cpu()).to_vector<float>();
  for (int64_t i = 0; i < block; ++i) {
    EXPECT_EQ(scattered[i], 100.0f * p * (p - 1) / 2 + p * (r * block + i));
  }
  Tensor all = Tensor::empty({block * p}, DType::kF32, sim);
  shared->all_gather(mine, all)->wait();
  Tensor reference = Tensor::from_vector(rank_values(r, block * p), {block * p});
  world()->allreduce(reference)->wait();
  EXPECT_EQ(all.to(Device::cpu()).to_vector<float>(), reference.to_vector<float>());

  Tensor out = cast(Tensor::from_vector(rank_values(r, 100), {100}), DType::kBF16).to(sim);
  Tensor received = Tensor::empty({100}, DType::kBF16, sim);
  shared->exchange({send_to(out, (r + 1) % p, 3), receive_from(received, (r + p - 1) % p, 3)})
      ->wait();
  EXPECT_EQ(cast(received, DType::kF32).to(Device::cpu()).to_vector<float>(),
            cast(cast(Tensor::from_vector(rank_values((r + p - 1) % p, 100), {100}), DType::kBF16),
                 DType::kF32)
                .to_vector<float>());
  // The staging copies: to the host before each operation, back after each result.
  EXPECT_GE((host_waits() - before).total(), 10);
}

// What a ring moves per rank, by hand: reduce-scatter and all-gather (p-1)/p of the full
// buffer each, all-reduce twice that; so the pair moves exactly what one all-reduce does.
TEST(Communicator, TrafficCountsRingBytesPerRank) {
  const auto comm = world()->split(0, world()->rank());  // fresh counters
  const int p = comm->size();
  const int64_t block = 250;
  Tensor full = Tensor::empty({block * p});
  fill_(full, 1.0);
  Tensor mine = Tensor::empty({block});
  comm->reduce_scatter(full, mine)->wait();
  comm->all_gather(mine, full)->wait();
  const double full_bytes = 4.0 * block * p;
  EXPECT_DOUBLE_EQ(comm->traffic().reduce_scatter_bytes, full_bytes * (p - 1) / p);
  EXPECT_DOUBLE_EQ(comm->traffic().all_gather_bytes, full_bytes * (p - 1) / p);
  const double pair = comm->traffic().bytes;
  comm->reset_traffic();
  comm->allreduce(full)->wait();
  EXPECT_DOUBLE_EQ(comm->traffic().bytes, pair);
  EXPECT_EQ(comm->traffic().collectives, 1);
}

// One group per rank: every rank sends right and receives from the left, 40 KiB each (past
// MPI's eager limit: posted apart, the ring would deadlock).
TEST(Communicator, ExchangeAroundARing) {
  const int p = world()->size(), r = world()->rank();
  const int64_t n = 10000;
  Tensor out = Tensor::from_vector(rank_values(r, n), {n});
  Tensor in = Tensor::empty({n});
  world()->exchange({send_to(out, (r + 1) % p, 7), receive_from(in, (r + p - 1) % p, 7)})->wait();
  EXPECT_EQ(in.to_vector<float>(), rank_values((r + p - 1) % p, n));
  EXPECT_EQ(world()->exchange({})->test(), true);
}

// Receives match their peer's sends in posting order, as NCCL's do: a receive that expects
// another message than the one sent first fails with the tags, on the CPU as on the GPU (where
// it would silently take the wrong tensor).
TEST(Communicator, ReceivesMatchInPostingOrderAndCheckTags) {
  const auto pair = world()->split(world()->rank() < 2 ? 0 : 1, world()->rank());
  if (world()->rank() >= 2) return;
  Tensor first = Tensor::from_vector<float>({1, 2}, {2});
  Tensor second = Tensor::from_vector<float>({3, 4}, {2});
  if (pair->rank() == 0) {
    pair->exchange({send_to(first, 1, 1), send_to(second, 1, 2)})->wait();
  } else {
    Tensor in = Tensor::empty({2});
    try {
      pair->recv(in, 0, 2)->wait();
      ADD_FAILURE() << "a receive expecting tag 2 took the message of tag 1 silently";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("has tag 1 where tag 2 was expected"));
    }
    EXPECT_EQ(in.to_vector<float>(), (std::vector<float>{1, 2}));  // the first one sent
    pair->recv(in, 0, 2)->wait();
    EXPECT_EQ(in.to_vector<float>(), (std::vector<float>{3, 4}));
  }
  pair->barrier();
}

TEST(Communicator, SplitMakesRowsOfAGrid) {
  const int r = world()->rank();
  auto row = world()->split(r % 2, r);  // even ranks and odd ranks
  EXPECT_EQ(row->size(), (world()->size() + 1 - r % 2) / 2);
  EXPECT_EQ(row->rank(), r / 2);
  Tensor t = Tensor::from_vector<int32_t>({r}, {1});
  row->allreduce(t)->wait();
  int expected = 0;
  for (int q = r % 2; q < world()->size(); q += 2) expected += q;
  EXPECT_EQ(t.to_vector<int32_t>()[0], expected);
}

// 16-bit floats move as 16-bit words (FSDP gathers its bf16 compute parameters so): every
// rank's values arrive bit for bit.
TEST(Communicator, AllGatherMovesSixteenBitFloats) {
  const auto values_of = [](int rank) {
    return cast(Tensor::from_vector<float>({1.0f + rank, -0.0078125f * rank, 3e-3f}, {3}),
                DType::kBF16);
  };
  const int p = world()->size();
  Tensor all = Tensor::empty({3 * p}, DType::kBF16);
  world()->all_gather(values_of(world()->rank()), all)->wait();
  const std::vector<float> got = cast(all, DType::kF32).to_vector<float>();
  for (int q = 0; q < p; ++q) {
    const std::vector<float> expected = cast(values_of(q), DType::kF32).to_vector<float>();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(got[3 * q + i], expected[i]) << "rank " << q;
  }
}

TEST(Communicator, MisuseIsAClearError) {
  const int p = world()->size();
  Tensor t = Tensor::empty({4});
  EXPECT_THAT([&] { world()->broadcast(t, p); },
              ::testing::ThrowsMessage<Error>(HasSubstr("broadcast root rank")));
  Tensor wrong = Tensor::empty({5});
  EXPECT_THAT([&] { world()->all_gather(t, wrong); },
              ::testing::ThrowsMessage<Error>(HasSubstr("all_gather")));
  Tensor half = Tensor::empty({4}, DType::kF16);
  EXPECT_THAT([&] { world()->allreduce(half); },
              ::testing::ThrowsMessage<Error>(HasSubstr("MPI cannot reduce f16")));
  world()->barrier();
}

// Each rank of a node on its own GPU, "cuda" included (not every rank on cuda:0).
TEST(RankDevice, EachLocalRankGetsItsOwnGpu) {
  for (int local = 0; local < 6; ++local) {
    EXPECT_EQ(choose_rank_device(parse_device_request(""), local, 4), Device::cuda(local % 4))
        << local;
    EXPECT_EQ(choose_rank_device(parse_device_request("cuda"), local, 4), Device::cuda(local % 4))
        << local;
    EXPECT_EQ(choose_rank_device(parse_device_request("cuda:1"), local, 4), Device::cuda(1))
        << local;
    EXPECT_EQ(choose_rank_device(parse_device_request("cpu"), local, 4), Device::cpu()) << local;
  }
  EXPECT_EQ(choose_rank_device(parse_device_request(""), 3, 0), Device::cpu());
  EXPECT_THAT([] { choose_rank_device(parse_device_request("cuda"), 0, 0); },
              ::testing::ThrowsMessage<Error>(HasSubstr("--device cuda requested")));
  EXPECT_THROW(parse_device_request("tpu"), Error);
  EXPECT_EQ(choose_rank_device(parse_device_request("sim"), 5, 0), Device::sim(5));
  EXPECT_EQ(choose_rank_device(parse_device_request("sim:2"), 5, 0), Device::sim(2));
}

// A lab's rank setup: the timeout, the node's cores shared among its ranks, then the device.
TEST(RankSetup, SetsTheTimeoutTheCoresAndTheDevice) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is visible (the GPU self-test covers it)";
  const double saved = world()->timeout();
  EXPECT_EQ(set_up_rank(*world(), 42.5, {.named = Device::cpu()}), Device::cpu());
  EXPECT_EQ(world()->timeout(), 42.5);
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    EXPECT_EQ(omp_get_max_threads(), std::max(1, cores / world()->local_size()));
  }
  world()->set_timeout(saved);
}

// On the CPU a rank trains on the CPU, and that is the process's device for every thread.
TEST(RankDevice, TheRanksDeviceIsTheProcesss) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is visible (the GPU self-test covers it)";
  EXPECT_EQ(rank_device({}, *world()), Device::cpu());
  EXPECT_EQ(process_device(), Device::cpu());
  EXPECT_FALSE(world()->has_nccl());
  EXPECT_EQ(world()->device(), Device::cpu());
  EXPECT_THAT([] { rank_device(parse_device_request("cuda:0"), *world()); },
              ::testing::ThrowsMessage<Error>(HasSubstr("requested")));
}

TEST(Communicator, TheGpuEngineNeedsAVisibleGpu) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is visible";
  EXPECT_THROW(world()->use_device(Device::cuda(0)), Error);
}

}  // namespace
}  // namespace course::parallel
