// Context parallelism's attention memory and time, measured side by side in one run:
//   mpirun -np N bazel-bin/bench/context_parallel_bench [seq ...]
// For each sequence length (default 1024 2048 4096), one causal attention layer (batch 1, 4 heads
// of 32) runs forward and backward as ring attention three ways: in one process on the whole
// sequence (a ring of one rank: the same blocks, merges and buffers), over the N ranks, each
// holding 2 chunks of seq / 2N positions, and, for reference, as the course's fused one-process
// attention (common/kernels/attention.h). Rank 0 reports the peak bytes each pass requested on
// top of its inputs (the allocator's peak before rounding blocks to its granularity; the largest
// rank's for the ring over N), the ring's per rank against one process's and against the ideal 1/N,
// and the time of a forward and backward (the slowest rank's). No side holds a whole (H, T, T)
// score matrix, so every buffer is proportional to the rows a rank holds and the peak per rank
// falls as 1/N.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/kernels/attention.h"
#include "common/nn/context_split.h"
#include "common/parallel/comm/rank_setup.h"
#include "common/parallel/context_parallel/ring_attention.h"
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
  const int64_t before = allocator.stats().requested;
  allocator.reset_peak();
  const auto start = std::chrono::steady_clock::now();
  run();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return {static_cast<double>(allocator.stats().peak_requested - before), elapsed.count()};
}

double max_over_ranks(double value, parallel::Communicator& comm) {
  Tensor t = Tensor::from_vector<float>({static_cast<float>(value)}, {1});
  comm.allreduce(t, parallel::ReduceOp::kMax)->wait();
  return t.to_vector<float>()[0];
}

// Ring attention forward and backward of this rank's rows of qkv and dy over `cp`.
Pass ring_pass(const Tensor& qkv, const Tensor& dy, parallel::Communicator& cp) {
  const nn::ContextSplit mine{cp.rank(), cp.size()};
  const Tensor my_qkv = mine.rows_of(qkv), my_dy = mine.rows_of(dy);
  cp.barrier();
  return measure([&] {
    parallel::RingAttentionSaved saved;
    parallel::ring_attention_forward(my_qkv, kHeads, true, cp, saved);
    parallel::ring_attention_backward(my_dy, kHeads, true, cp, saved);
  });
}

void run(int argc, char** argv) {
  std::vector<int64_t> lengths;
  for (int i = 1; i < argc; ++i) lengths.push_back(std::atoll(argv[i]));
  if (lengths.empty()) lengths = {1024, 2048, 4096};
  const auto cp = parallel::Communicator::world();
  parallel::share_cores(*cp);  // OpenMP threads: this node's cores over its ranks
  const auto alone = cp->split(cp->rank(), 0);
  const bool lead = cp->rank() == 0;
  const int n = cp->size();
  if (lead) {
    std::printf("causal attention, batch 1, %lld heads of %lld, forward + backward, f32, cp %d\n",
                static_cast<long long>(kHeads), static_cast<long long>(kHeadDim), n);
    std::printf("%6s %16s %14s %7s %6s %10s %12s %10s %9s\n", "seq", "ring 1 proc MiB",
                "ring MiB/rank", "ratio", "1/cp", "fused MiB", "ring 1 ms", "ring ms", "fused ms");
  }
  for (const int64_t seq : lengths) {
    COURSE_CHECK(seq > 0 && seq % (2 * n) == 0, "a sequence of ", seq, " does not cut into 2 x ", n,
                 " chunks");
    const Tensor qkv =
        testing::random_tensor({1, seq, 3 * kChannels}, DType::kF32, Device::cpu(), 7).tensor;
    const Tensor dy =
        testing::random_tensor({1, seq, kChannels}, DType::kF32, Device::cpu(), 8).tensor;
    Pass one_process, fused;
    if (lead) {
      one_process = ring_pass(qkv, dy, *alone);
      fused = measure([&] {
        AttentionSaved saved;
        attention_forward(qkv, kHeads, true, saved);
        attention_backward(dy, kHeads, true, saved);
      });
    }
    Pass ring = ring_pass(qkv, dy, *cp);
    ring.peak_bytes = max_over_ranks(ring.peak_bytes, *cp);
    ring.seconds = max_over_ranks(ring.seconds, *cp);
    if (lead) {
      std::printf("%6lld %16.1f %14.1f %7.3f %6.3f %10.1f %12.1f %10.1f %9.1f\n",
                  static_cast<long long>(seq), one_process.peak_bytes / 1048576.0,
                  ring.peak_bytes / 1048576.0, ring.peak_bytes / one_process.peak_bytes, 1.0 / n,
                  fused.peak_bytes / 1048576.0, one_process.seconds * 1e3, ring.seconds * 1e3,
                  fused.seconds * 1e3);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  return course::train::lab_main([&] { run(argc, argv); });
}
