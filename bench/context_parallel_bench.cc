// Context parallelism's attention memory and time, measured side by side in one run:
//   mpirun -np N bazel-bin/bench/context_parallel_bench [seq ...]
// For each sequence length (default 1024 2048 4096), one causal attention layer (batch 1, 4 heads
// of 32) runs forward and backward first in one process on the whole sequence, then as ring
// attention over the N ranks, each holding 2 chunks of seq / 2N positions. Rank 0 reports the
// peak bytes the pass allocated on top of its inputs (the allocator's peak; the largest rank's
// for the ring), the ring's against one process's and against the ideal 1/N, and the time of a
// forward and backward (the slowest rank's). One process holds (H, T, T) score matrices; the
// ring only (H, T/2N, T/2N) blocks, so its peak falls faster than 1/N.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/kernels/attention.h"
#include "common/nn/context_split.h"
#include "common/parallel/rank_setup.h"
#include "common/parallel/ring_attention.h"
#include "common/tensor/allocator.h"
#include "common/testing/random_tensor.h"
#include "common/train/lab_main.h"

namespace {

using namespace course;

constexpr int64_t kHeads = 4, kHeadDim = 32, kChannels = kHeads * kHeadDim;

struct Pass {
  double peak_bytes = 0, seconds = 0;
};

// Peak allocation above the inputs, and the time, of `run`.
template <class F>
Pass measure(F run) {
  CachingAllocator& allocator = device_allocator(Device::cpu());
  const int64_t before = allocator.stats().allocated;
  allocator.reset_peak();
  const auto start = std::chrono::steady_clock::now();
  run();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return {static_cast<double>(allocator.stats().peak_allocated - before), elapsed.count()};
}

double max_over_ranks(double value, parallel::Communicator& comm) {
  Tensor t = Tensor::from_vector<float>({static_cast<float>(value)}, {1});
  comm.allreduce(t, parallel::ReduceOp::kMax)->wait();
  return t.to_vector<float>()[0];
}

void run(int argc, char** argv) {
  std::vector<int64_t> lengths;
  for (int i = 1; i < argc; ++i) lengths.push_back(std::atoll(argv[i]));
  if (lengths.empty()) lengths = {1024, 2048, 4096};
  const auto cp = parallel::Communicator::world();
  parallel::share_cores(*cp);  // OpenMP threads: this node's cores over its ranks
  const bool lead = cp->rank() == 0;
  const int n = cp->size();
  if (lead) {
    std::printf("causal attention, batch 1, %lld heads of %lld, forward + backward, f32, cp %d\n",
                static_cast<long long>(kHeads), static_cast<long long>(kHeadDim), n);
    std::printf("%6s %14s %13s %8s %8s %14s %13s\n", "seq", "1 process MiB", "ring MiB/rank",
                "ratio", "1/cp", "1 process ms", "ring ms");
  }
  for (const int64_t seq : lengths) {
    COURSE_CHECK(seq > 0 && seq % (2 * n) == 0, "a sequence of ", seq, " does not cut into 2 x ", n,
                 " chunks");
    const Tensor qkv =
        testing::random_tensor({1, seq, 3 * kChannels}, DType::kF32, Device::cpu(), 7).tensor;
    const Tensor dy =
        testing::random_tensor({1, seq, kChannels}, DType::kF32, Device::cpu(), 8).tensor;
    Pass whole;
    if (lead) {
      whole = measure([&] {
        AttentionSaved saved;
        attention_forward(qkv, kHeads, true, saved);
        attention_backward(dy, kHeads, true, saved);
      });
    }
    const Tensor my_qkv = nn::ContextSplit{cp->rank(), n}.rows_of(qkv);
    const Tensor my_dy = nn::ContextSplit{cp->rank(), n}.rows_of(dy);
    cp->barrier();
    Pass ring = measure([&] {
      parallel::RingAttentionSaved saved;
      parallel::ring_attention_forward(my_qkv, kHeads, true, *cp, saved);
      parallel::ring_attention_backward(my_dy, kHeads, true, *cp, saved);
    });
    ring.peak_bytes = max_over_ranks(ring.peak_bytes, *cp);
    ring.seconds = max_over_ranks(ring.seconds, *cp);
    if (lead) {
      std::printf("%6lld %14.1f %13.1f %8.3f %8.3f %14.1f %13.1f\n", static_cast<long long>(seq),
                  whole.peak_bytes / 1048576.0, ring.peak_bytes / 1048576.0,
                  ring.peak_bytes / whole.peak_bytes, 1.0 / n, whole.seconds * 1e3,
                  ring.seconds * 1e3);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  return course::train::lab_main([&] { run(argc, argv); });
}
