// ZeRO and FSDP measured against their formulas, side by side in one run:
//   mpirun -np N bazel-bin/bench/sharding_bench [batch]
// For DDP and each sharding strategy, a GPT (gpt-mini's blocks on a 64-token context) trains 4
// AdamW steps on every rank; after a warm-up step rank 0 reports the model states it holds
// between steps (parameters, gradients, optimizer states: the allocator's bytes in use), the
// same in f32 by formula (the allocator rounds blocks of 1 MiB and more up to 2 MiB multiples,
// which the formula does not), the peak during a step against the memory estimate, the bytes its
// collectives moved per step (ring algorithm, common/parallel/comm/communicator.h) against DDP's,
// and the time per step. The ZeRO stages then run again with FSDP's mixed precision: bf16
// parameters gathered for bf16 autocast compute, f32 masters, gradients and reductions.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "common/kernels/cross_entropy.h"
#include "common/models/gpt/gpt.h"
#include "common/nn/autocast.h"
#include "common/optim/optimizer.h"
#include "common/parallel/comm/rank_setup.h"
#include "common/parallel/data_parallel/data_parallel_model.h"
#include "common/parallel/planning/memory_estimate.h"
#include "common/train/lab_main.h"

namespace {

using namespace course;

constexpr int kSteps = 4;  // the first is a warm-up
const nn::GptConfig kModel{"gpt-mini-64", 6, 6, 384, 64, 256};

struct Row {
  double states = 0, peak = 0, bytes_per_step = 0, seconds_per_step = 0;
};

// A mode, and the dtype of the parameters it gathers for compute (bf16: under bf16 autocast).
struct Mode {
  std::string name;
  DType param_dtype = DType::kF32;
  std::string label() const {
    const std::string shown = name == "none" ? "DDP" : name;
    return param_dtype == DType::kF32 ? shown : shown + " bf16 params";
  }
};

Row measure(const Mode& mode, int64_t batch,
            const std::shared_ptr<parallel::Communicator>& shared) {
  parallel::Communicator& comm = *shared;
  CachingAllocator& allocator = device_allocator(Device::cpu());
  const int64_t before = allocator.stats().allocated;
  std::mt19937 rng(5);
  nn::Gpt model(kModel, rng, Device::cpu());
  parallel::DataParallelModel data_parallel(
      model, model.blocks(), shared,
      {.sharding = parallel::parse_data_parallel_mode(mode.name), .param_dtype = mode.param_dtype});
  const bool mixed = mode.param_dtype != DType::kF32;
  optim::AdamW adamw(data_parallel.optimized(), {.lr = 1e-4f});
  std::vector<int32_t> tokens(batch * kModel.context);
  std::vector<int64_t> targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int32_t>((i * 7 + comm.rank()) % 256);
    targets[i] = static_cast<int64_t>((i * 3) % 256);
  }
  const Tensor inputs = Tensor::from_vector<int32_t>(tokens, {batch, kModel.context});
  const Tensor labels =
      Tensor::from_vector<int64_t>(targets, {static_cast<int64_t>(targets.size())});
  Row row;
  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < kSteps; ++step) {
    if (step == 1) {
      comm.barrier();
      allocator.reset_peak();
      comm.reset_traffic();
      start = std::chrono::steady_clock::now();
    }
    nn::Module& net = data_parallel.net();
    net.zero_grad();
    nn::Autocast autocast(mode.param_dtype, mixed);
    const Tensor logits = net.forward(inputs);
    const Tensor rows = logits.view({labels.numel(), kModel.vocabulary});
    const CrossEntropyOutput loss = softmax_cross_entropy(rows, labels);
    net.backward(
        softmax_cross_entropy_backward(loss, labels, 0.0f, DType::kF32).view(logits.shape()));
    data_parallel.finish_backward();
    adamw.step();
    data_parallel.after_step();
  }
  comm.barrier();
  row.seconds_per_step =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
      (kSteps - 1);
  row.bytes_per_step = comm.traffic().bytes / (kSteps - 1);
  row.peak = static_cast<double>(allocator.stats().peak_allocated - before);
  row.states = static_cast<double>(allocator.stats().allocated - before);
  return row;
}

// Model states between steps, by formula: parameters 4 (2 when gathered in bf16), gradients 4,
// AdamW's moments 8 bytes per parameter; a shard adds its f32 master copy (4) and gradient (4);
// DDP's buckets hold a copy of every gradient (4).
double states_formula(const Mode& mode, double psi, int n) {
  const double values = static_cast<double>(dtype_size(mode.param_dtype));
  if (mode.name == "none") return (n > 1 ? 20 : 16) * psi;
  if (mode.name == "zero1") return (values + 4) * psi + 16 * psi / n;
  if (mode.name == "zero2") return values * psi + 16 * psi / n;
  return 16 * psi / n;  // zero3 and shard-grad-op keep only shards between steps
}

void run(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 1;
  COURSE_CHECK(batch >= 1, "batch must be at least 1");
  const auto comm = parallel::Communicator::world();
  parallel::share_cores(*comm);  // OpenMP threads: this node's cores over its ranks
  const bool lead = comm->rank() == 0;
  const double psi = static_cast<double>(nn::gpt_parameter_count(kModel));
  const int n = comm->size();
  if (lead) {
    std::printf("%s, %.2fM parameters, batch %lld x %lld tokens per rank, %d rank(s)\n",
                kModel.name.c_str(), psi / 1e6, static_cast<long long>(batch),
                static_cast<long long>(kModel.context), n);
    std::printf("%-20s %10s %10s %7s %10s %10s %7s %12s %6s %9s\n", "mode", "states MiB", "formula",
                "ratio", "peak MiB", "estimate", "ratio", "MiB per step", "x DDP", "ms/step");
  }
  measure({"none"}, batch, comm);  // warm-up: first-touch page faults, oneDNN's kernels
  double ddp_bytes = 0;
  const std::vector<Mode> modes = {{"none"},
                                   {"zero1"},
                                   {"zero2"},
                                   {"shard-grad-op"},
                                   {"zero3"},
                                   {"zero1", DType::kBF16},
                                   {"zero2", DType::kBF16},
                                   {"zero3", DType::kBF16}};
  for (const Mode& mode : modes) {
    const Row row = measure(mode, batch, comm);
    if (mode.name == "none") ddp_bytes = row.bytes_per_step;
    const double formula = states_formula(mode, psi, n);
    const double estimate = static_cast<double>(
        parallel::estimate_memory(
            {.model = kModel,
             .batch = batch,
             .compute = mode.param_dtype,
             .state = {.sharding = parallel::parse_data_parallel_mode(mode.name),
                       .ranks = n,
                       .param_dtype = mode.param_dtype}})
            .total());
    if (lead) {
      std::printf("%-20s %10.1f %10.1f %7.3f %10.1f %10.1f %7.3f %12.2f %6.2f %9.1f\n",
                  mode.label().c_str(), row.states / 1048576.0, formula / 1048576.0,
                  row.states / formula, row.peak / 1048576.0, estimate / 1048576.0,
                  estimate / row.peak, row.bytes_per_step / 1048576.0,
                  ddp_bytes > 0 ? row.bytes_per_step / ddp_bytes : 0.0, row.seconds_per_step * 1e3);
    }
  }
  if (lead) {
    std::printf("ZeRO paper (mixed-precision Adam) for the same %.2fM parameters on %d ranks:",
                psi / 1e6, n);
    for (int stage = 0; stage <= 3; ++stage) {
      std::printf(" stage %d %.1f MiB%s", stage,
                  parallel::zero_paper_bytes(static_cast<int64_t>(psi), stage, n) / 1048576.0,
                  stage < 3 ? "," : "\n");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  return course::train::lab_main([&] { run(argc, argv); });
}
