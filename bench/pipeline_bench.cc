// Pipeline schedules measured against their formulas, side by side in one run:
//   mpirun -np P bazel-bin/bench/pipeline_bench [micro-batch sequences]
// gpt-tiny's blocks (4 x 128 channels, 64 tokens) cut into P stages train with the naive
// schedule, GPipe, 1F1B, ZB-H1 and (on 2 ranks: 2 chunks each) interleaved 1F1B for m = 1, 2, 4,
// 8 micro-batches (1F1B and ZB-H1 also 16); after a warm-up step, 3 steps are timed. Each rank's
// bubble is 1 - (its passes' compute) / (the step, until the last rank's end); the table gives
// the ranks' mean beside three references:
// - the formula: (p - 1) / p (naive), (p - 1) / (m + p - 1), (p - 1) / (3 m + p - 1) (ZB-H1,
//   m >= p) and (p - 1) / (v m + p - 1) (interleaved), which assume every pass takes as long;
// - the timetable: the rounds the stages run (pipeline_rounds.h) replayed with each stage's
//   measured pass lengths and messages taking no time; what the measured bubble adds to it is
//   the messages' time;
// and the first stage's peak memory in the step with the activations it held at once
// (interleaved: of one chunk each), and the mean length of a forward, a backward and a weight
// pass: ZB-H1's bubble is (p - 1)(F + B - W) against 1F1B's (p - 1)(F + B + W) (its B then
// includes W), a third only where the three take as long.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "common/nn/gpt.h"
#include "common/parallel/ddp.h"
#include "common/parallel/pipeline_parallel.h"
#include "common/parallel/rank_setup.h"
#include "common/train/lab_main.h"

namespace {

using namespace course;

constexpr int kTimedSteps = 3;

struct Row {
  double bubble = 0, step_seconds = 0, peak = 0;
  std::array<double, 3> pass_seconds{};  // mean forward, backward, weight pass (0: none)
  double timetable_bubble = 0;  // the timetable's own, from each stage's measured pass lengths
};

// The mean length of each kind of pass in a step's timeline.
std::array<double, 3> mean_pass_seconds(const std::vector<parallel::TimedAction>& timeline) {
  std::array<double, 3> total{}, count{};
  for (const parallel::TimedAction& a : timeline) {
    const auto kind = static_cast<size_t>(a.action.kind);
    total[kind] += a.end_s - a.start_s;
    ++count[kind];
  }
  for (size_t k = 0; k < total.size(); ++k) total[k] = count[k] > 0 ? total[k] / count[k] : 0.0;
  return total;
}

Row measure(parallel::PipelineSchedule schedule, int micro_batches, int virtual_stages,
            int64_t sequences, const std::shared_ptr<parallel::Communicator>& world) {
  const nn::GptConfig config = nn::gpt_preset("gpt-tiny");
  std::mt19937 rng(3);
  nn::Gpt gpt(config, rng, Device::cpu());
  parallel::PipelineParallel pipeline(
      gpt, world,
      {.schedule = schedule, .micro_batches = micro_batches, .virtual_stages = virtual_stages});
  const int64_t batch = sequences * micro_batches;
  std::vector<int32_t> tokens(batch * config.context);
  std::vector<int64_t> targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int32_t>((i * 7) % config.vocabulary);
    targets[i] = static_cast<int64_t>((i * 5) % config.vocabulary);
  }
  const Tensor inputs = Tensor::from_vector<int32_t>(tokens, {batch, config.context});
  const Tensor labels =
      Tensor::from_vector<int64_t>(targets, {static_cast<int64_t>(targets.size())});
  CachingAllocator& allocator = device_allocator(Device::cpu());
  Row row;
  // Each timed step's compute and length on this rank.
  std::vector<float> compute_seconds, step_seconds;
  for (int step = 0; step <= kTimedSteps; ++step) {
    world->barrier();
    const int64_t before = allocator.stats().allocated;
    allocator.reset_peak();
    pipeline.zero_grad();
    pipeline.forward_backward(inputs, labels);
    if (step == 0) continue;  // warm-up
    step_seconds.push_back(static_cast<float>(pipeline.step_seconds()));
    compute_seconds.push_back(
        static_cast<float>((1 - pipeline.measured_bubble()) * pipeline.step_seconds()));
    row.peak = static_cast<double>(allocator.stats().peak_allocated - before);
    const std::array<double, 3> passes = mean_pass_seconds(pipeline.timeline());
    for (size_t k = 0; k < passes.size(); ++k) row.pass_seconds[k] += passes[k] / kTimedSteps;
  }
  // A step ends when its last stage's does (the ranks start together after the barrier), so a
  // rank's bubble is 1 - its compute / the slowest rank's step, as the formulas count it.
  const std::vector<float> pipeline_steps = parallel::allreduce_max(step_seconds, *world);
  for (int k = 0; k < kTimedSteps; ++k) {
    row.bubble += (1 - compute_seconds[k] / pipeline_steps[k]) / kTimedSteps;
    row.step_seconds += pipeline_steps[k] / kTimedSteps;
  }
  // The ranks' mean bubble and pass lengths, each rank's pass lengths in its own slots too; the
  // first stage's peak.
  const int p = world->size();
  std::vector<float> local(1 + 3 * (1 + p), 0.0f);
  local[0] = static_cast<float>(row.bubble);
  for (size_t k = 0; k < 3; ++k) {
    local[1 + k] = local[1 + 3 * (1 + world->rank()) + k] = static_cast<float>(row.pass_seconds[k]);
  }
  const std::vector<float> sums = parallel::allreduce_sum(local, *world);
  row.bubble = sums[0] / p;
  for (size_t k = 0; k < row.pass_seconds.size(); ++k) row.pass_seconds[k] = sums[1 + k] / p;
  std::vector<parallel::PassCosts> costs;
  std::vector<std::vector<parallel::PipelineAction>> actions;
  for (int s = 0; s < p; ++s) {
    const float* mine = &sums[1 + 3 * (1 + s)];
    costs.push_back({mine[0], mine[1], mine[2]});
    actions.push_back(parallel::schedule_actions(schedule, s, p, micro_batches, virtual_stages));
  }
  row.timetable_bubble =
      parallel::timetable_bubble(parallel::pipeline_rounds(actions, virtual_stages), costs);
  return row;
}

void run(int argc, char** argv) {
  const int64_t sequences = argc > 1 ? std::atoll(argv[1]) : 2;
  COURSE_CHECK(sequences >= 1, "micro-batch sequences must be at least 1");
  const auto world = parallel::Communicator::world();
  parallel::share_cores(*world);  // OpenMP threads: this node's cores over its ranks
  const int p = world->size();
  const bool lead = world->rank() == 0;
  if (lead) {
    std::printf("gpt-tiny in %d stage(s), micro-batches of %lld x 64 tokens, %d steps timed\n", p,
                static_cast<long long>(sequences), kTimedSteps);
    std::printf("%-15s %3s %8s %8s %10s %8s %9s %10s %16s\n", "schedule", "m", "bubble", "formula",
                "timetable", "step ms", "peak MiB", "in flight", "F / B / W ms");
  }
  measure(parallel::PipelineSchedule::kGpipe, 2, 1, sequences, world);  // warm-up of the process
  const int chunks = 4 / p;  // gpt-tiny's 4 blocks: interleaved where a rank gets 2 or more
  for (auto schedule :
       {parallel::PipelineSchedule::kNaive, parallel::PipelineSchedule::kGpipe,
        parallel::PipelineSchedule::kOneForwardOneBackward,
        parallel::PipelineSchedule::kZeroBubbleH1, parallel::PipelineSchedule::kInterleaved}) {
    const bool interleaved = schedule == parallel::PipelineSchedule::kInterleaved;
    if (interleaved && chunks < 2) continue;
    const int v = interleaved ? chunks : 1;
    // 1F1B and ZB-H1, whose bubbles the zero-bubble paper compares, also at 16.
    const bool compared = schedule == parallel::PipelineSchedule::kOneForwardOneBackward ||
                          schedule == parallel::PipelineSchedule::kZeroBubbleH1;
    for (int m : {1, 2, 4, 8, 16}) {
      if (m == 16 && !compared) continue;
      if (interleaved && m % p != 0) continue;
      const Row row = measure(schedule, m, v, sequences, world);
      if (!lead) continue;
      const std::string name = parallel::pipeline_schedule_name(schedule) +
                               (interleaved ? " v=" + std::to_string(v) : "");
      std::printf(
          "%-15s %3d %8.3f %8.3f %10.3f %8.1f %9.2f %10d %6.1f/%4.1f/%4.1f\n", name.c_str(), m,
          row.bubble, parallel::bubble_fraction(schedule, p, m, v), row.timetable_bubble,
          row.step_seconds * 1e3, row.peak / 1048576.0,
          parallel::micro_batches_in_flight(parallel::schedule_actions(schedule, 0, p, m, v)),
          row.pass_seconds[0] * 1e3, row.pass_seconds[1] * 1e3, row.pass_seconds[2] * 1e3);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  return course::train::lab_main([&] { run(argc, argv); });
}
