// All-reduce time on N ranks, the communicator's (MPI's; on 2 ranks the ring from 1 MiB up,
// communicator.h) against the ring of TP2.4 (its reference copy,
// common/parallel/comm/ring_allreduce.h), from 1 KiB to 64 MiB of f32, with the bus bandwidth of
// each: size x 2(n-1)/n / time, the figure NCCL's tests print (what each link carries, comparable
// across rank counts).
//   bazel build //bench:allreduce_bench
//   mpirun --oversubscribe -np 4 bazel-bin/bench/allreduce_bench
// Google Benchmark is not used: its adaptive iteration counts differ between ranks, and a
// collective needs every rank to run the same number of times.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "common/core/format.h"
#include "common/kernels/elementwise.h"
#include "common/parallel/comm/communicator.h"
#include "common/parallel/comm/rank_setup.h"
#include "common/parallel/comm/ring_allreduce.h"

namespace {

using namespace course;

// Seconds per call, the slowest rank's average over `iterations` after two warm-up calls.
double time_collective(parallel::Communicator& comm, int iterations,
                       const std::function<void()>& run) {
  for (int i = 0; i < 2; ++i) run();
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) run();
  const double mine =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations;
  Tensor slowest = Tensor::from_vector<float>({static_cast<float>(mine)}, {1});
  comm.allreduce(slowest, parallel::ReduceOp::kMax)->wait();
  return slowest.to_vector<float>()[0];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {  // --help, or anything else: it takes no arguments
    std::printf(
        "usage: mpirun -np N allreduce_bench\n"
        "  times the communicator's all-reduce against the ring of TP2.4 from 1 KiB to 64 MiB\n");
    return std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ? 0 : 2;
  }
  const auto comm = parallel::Communicator::world();
  parallel::share_cores(*comm);  // OpenMP threads: this node's cores over its ranks
  const int n = comm->size();
  if (comm->rank() == 0) {
    std::printf("all-reduce (sum, f32) on %d ranks; bus bandwidth = bytes x 2(n-1)/n / time\n", n);
    std::printf("%10s %12s %12s %10s %16s %16s\n", "size", "MPI us", "ring us", "ring/MPI",
                "MPI busbw GB/s", "ring busbw GB/s");
  }
  for (int64_t bytes = 1 << 10; bytes <= (64 << 20); bytes *= 4) {
    const int64_t count = bytes / 4;
    Tensor data = zeros({count});
    fill_(data, 1.0);
    const int iterations = static_cast<int>(std::clamp<int64_t>((256 << 20) / bytes, 5, 500));
    const double mpi = time_collective(*comm, iterations, [&] { comm->allreduce(data)->wait(); });
    const double ring =
        time_collective(*comm, iterations, [&] { parallel::ring_allreduce_sum(data, *comm); });
    const double factor = 2.0 * (n - 1) / n;
    if (comm->rank() == 0) {
      std::printf("%10s %12.1f %12.1f %10.2f %16.2f %16.2f\n", format_bytes(bytes).c_str(),
                  1e6 * mpi, 1e6 * ring, ring / mpi, factor * bytes / mpi / 1e9,
                  factor * bytes / ring / 1e9);
    }
  }
  return 0;
}
