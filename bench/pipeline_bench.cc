// Pipeline schedules measured against their formulas, side by side in one run:
//   mpirun -np P bazel-bin/bench/pipeline_bench [micro-batch sequences]
// gpt-tiny's blocks (4 x 128 channels, 64 tokens) cut into P stages train with the naive
// schedule, GPipe, 1F1B, ZB-H1 and (on 2 ranks: 2 chunks each) interleaved 1F1B for m = 1, 2, 4,
// 8 micro-batches (1F1B and ZB-H1 also 16); after a warm-up step, 3 steps are timed. Each rank's
// bubble is 1 - (its passes' compute) / (the step, until the last rank's end); the table gives
// the ranks' mean beside four references, each adding one thing the one before ignores:
// - the formula for passes of equal length: (p - 1) / p (naive), (p - 1) / (m + p - 1),
//   (p - 1) / (3 m + p - 1) (ZB-H1, m >= p) and (p - 1) / (v m + p - 1) (interleaved);
// - the formula for the measured mean F, B and W (bubble_fraction with PassCosts): ZB-H1 idles
//   (p - 1)(F + B) - (min(m, p) - 1) min(F, B, W), a third of 1F1B's only where the three take
//   as long; the others' formulas do not depend on the lengths;
// - the timetable: the rounds the stages run (pipeline_rounds.h) replayed with each stage's own
//   measured pass lengths (the stages are not equal), messages free, a core per stage;
// - the replay: each timed step's rounds with every pass as long as it took and every exchange
//   as long as it took in the step once both ends had posted it (msg ms); where there are fewer
//   cores than ranks (4 ranks on 2 cores), the stages take turns on the cores and an exchange
//   costs what one took alone.
// Memory: the first stage's peak in the step beside its formula, the micro-batches it holds at
// once (in flight) times what one micro-batch's forward keeps, plus the most one backward needs
// on top (where the backward is split: until its weight pass has run), both measured on one
// micro-batch through the first stage alone (interleaved: of its first chunk).
#include <omp.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

#include "common/kernels/elementwise.h"
#include "common/models/gpt/gpt.h"
#include "common/models/gpt/gpt_stage.h"
#include "common/parallel/comm/rank_setup.h"
#include "common/parallel/data_parallel/ddp.h"
#include "common/parallel/pipeline/pipeline_parallel.h"
#include "common/train/lab_main.h"

namespace {

using namespace course;

constexpr int kTimedSteps = 3;

// A time on this node's monotonic clock (the same in all of its processes), in seconds.
double seconds_since_boot(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// The node's cores where its ranks share them (0: a core per stage), for the replays, and then
// the exchange time they charge: one exchange measured alone, since in a step an exchange also
// waits for its peer to get a core, which the shared cores already charge.
int g_shared_cores = 0;
double g_exchange_alone = 0;

struct Row {
  double bubble = 0, step_seconds = 0, peak = 0;
  std::array<double, 3> pass_seconds{};  // mean forward, backward, weight pass (0: none)
  // The timetable's own from each stage's mean pass lengths (free messages, a core per stage),
  // and the steps replayed with every pass's own length, their exchanges' measured time and the
  // node's cores.
  double timetable_bubble = 0, replayed_bubble = 0;
  double message_seconds = 0;  // an exchange's mean, once both ends had posted it (StepReplay)
  double peak_formula = 0;     // the first stage's, from one micro-batch's (MicroBatchMemory)
};

// The seconds one exchange of a micro-batch's activation (`elements` floats) takes between two
// ranks, each sending and receiving in one group as the rounds do: ranks 2k and 2k + 1 swap 30
// times after 5 unmeasured swaps, all pairs at once; the slowest rank's mean.
double exchange_seconds(int64_t elements, parallel::Communicator& world) {
  const int partner = world.rank() ^ 1;
  Tensor out = zeros({elements}), in = zeros({elements});
  const auto swap = [&] {
    if (partner < world.size()) {
      world.exchange({parallel::send_to(out, partner, 0), parallel::receive_from(in, partner, 0)})
          ->wait();
    }
  };
  for (int i = 0; i < 5; ++i) swap();
  world.barrier();
  constexpr int kSwaps = 30;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kSwaps; ++i) swap();
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  return parallel::allreduce_max({static_cast<float>(took.count() / kSwaps)}, world)[0];
}

// What one micro-batch costs the first stage's memory (bytes): the activations its forward
// keeps for the backward, and the most its backward needs on top of them (the arriving
// gradient, the backward's temporaries), also where the backward is split (until the weight
// pass has run: the weight gradients' inputs are kept that long).
struct MicroBatchMemory {
  double kept = 0, backward = 0, split_backward = 0;
};

MicroBatchMemory micro_batch_memory(nn::Gpt& gpt, const nn::StageBounds& first,
                                    const Tensor& input) {
  nn::GptStages stages(gpt);
  const std::unique_ptr<nn::Module> stage = stages.stage(first);
  CachingAllocator& allocator = device_allocator(Device::cpu());
  const auto allocated = [&] { return static_cast<double>(allocator.stats().allocated); };
  MicroBatchMemory memory;
  for (const bool split : {false, true}) {
    nn::Context context;
    const double before = allocated();
    stage->forward(input, context);  // its output leaves for the next stage
    memory.kept = allocated() - before;
    Tensor dy = zeros(stages.empty_activation(first.end_block, input).shape());
    allocator.reset_peak();
    nn::WeightGradientQueue weight_pass;
    if (split) context.defer_weight_gradients(&weight_pass);
    stage->backward(dy, context);
    context.defer_weight_gradients(nullptr);
    weight_pass.run();
    (split ? memory.split_backward : memory.backward) =
        static_cast<double>(allocator.stats().peak_allocated) - before - memory.kept;
  }
  return memory;
}

// The last step replayed (pipeline_rounds.h's replayed_bubble) with what every stage measured:
// each of its passes' lengths, and the time its exchanges took once both ends had posted them
// (a round's done minus the later posting of the stage and its peers, on the node's clock from
// `step_launched`, when the rank launched the step, in seconds after a base all ranks share; rounds
// where the stage ran weight passes while the messages travelled are left out of that mean), or
// where ranks share cores an exchange's time alone.
struct StepReplay {
  double bubble = 0, message_seconds = 0;
};

StepReplay replay_step(parallel::PipelineParallel& pipeline,
                       const std::vector<std::vector<parallel::PipelineAction>>& actions,
                       const std::vector<std::vector<parallel::PipelineRound>>& rounds,
                       double step_launched, parallel::Communicator& world) {
  const int p = world.size(), me = world.rank();
  const size_t round_count = rounds[0].size();
  // Every stage's actions in one flat list; every stage's (posted, done) per round after them.
  std::vector<size_t> first_action_of(p + 1, 0);
  for (int s = 0; s < p; ++s) first_action_of[s + 1] = first_action_of[s] + actions[s].size();
  const size_t exchanges_at = first_action_of[p];
  const auto exchange_slot = [&](int s, size_t r) {
    return exchanges_at + 2 * (s * round_count + r);
  };
  std::vector<float> mine(exchanges_at + 2 * p * round_count, 0.0f);
  const std::vector<parallel::TimedAction>& timeline = pipeline.timeline();
  for (size_t k = 0; k < timeline.size(); ++k) {
    mine[first_action_of[me] + k] = static_cast<float>(timeline[k].end_s - timeline[k].start_s);
  }
  for (const parallel::TimedExchange& e : pipeline.exchanges()) {
    mine[exchange_slot(me, e.round)] = static_cast<float>(step_launched + e.posted_s);
    mine[exchange_slot(me, e.round) + 1] = static_cast<float>(step_launched + e.done_s);
  }
  const std::vector<float> all = parallel::allreduce_sum(mine, world);
  double message_sum = 0;
  int messages = 0;
  for (int s = 0; s < p; ++s) {
    for (size_t r = 0; r < round_count; ++r) {
      const parallel::PipelineRound& round = rounds[s][r];
      if (!round.weight_passes.empty() || (round.sends.empty() && round.receives.empty())) continue;
      double later = all[exchange_slot(s, r)];
      for (const parallel::StageMessage& m : round.sends) {
        later = std::max<double>(later, all[exchange_slot(m.to % p, r)]);
      }
      for (const parallel::StageMessage& m : round.receives) {
        later = std::max<double>(later, all[exchange_slot(parallel::sender_of(m, p), r)]);
      }
      message_sum += all[exchange_slot(s, r) + 1] - later;
      ++messages;
    }
  }
  StepReplay replay;
  replay.message_seconds = g_shared_cores > 0 ? g_exchange_alone
                           : messages > 0     ? message_sum / messages
                                              : 0.0;
  std::vector<std::vector<double>> action_seconds(p);
  for (int s = 0; s < p; ++s) {
    action_seconds[s].assign(all.begin() + first_action_of[s],
                             all.begin() + first_action_of[s + 1]);
  }
  replay.bubble = parallel::replayed_bubble(
      rounds, action_seconds, {.message_seconds = replay.message_seconds, .cores = g_shared_cores});
  return replay;
}

// A batch of `batch` sequences of made-up tokens and targets.
std::pair<Tensor, Tensor> bench_batch(const nn::GptConfig& config, int64_t batch) {
  std::vector<int32_t> tokens(batch * config.context);
  std::vector<int64_t> targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int32_t>((i * 7) % config.vocabulary);
    targets[i] = static_cast<int64_t>((i * 5) % config.vocabulary);
  }
  return {Tensor::from_vector<int32_t>(tokens, {batch, config.context}),
          Tensor::from_vector<int64_t>(targets, {static_cast<int64_t>(targets.size())})};
}

// The timed steps after a warm-up: the row's peak, pass lengths, replay and message time on this
// rank, and the bubble and step length against the slowest rank's step.
void time_steps(parallel::PipelineParallel& pipeline, const Tensor& inputs, const Tensor& labels,
                const std::vector<std::vector<parallel::PipelineAction>>& actions,
                const std::vector<std::vector<parallel::PipelineRound>>& rounds,
                parallel::Communicator& world, Row& row) {
  // The ranks leave a barrier at different times, so each step's times since its own start are
  // put on the node's clock (the ranks of one node share it) from one base they all agree on.
  const double clock_base = parallel::allreduce_max(
      {static_cast<float>(seconds_since_boot(std::chrono::steady_clock::now()))}, world)[0];
  CachingAllocator& allocator = device_allocator(Device::cpu());
  std::vector<float> compute_seconds, step_seconds;  // each timed step's on this rank
  for (int step = 0; step <= kTimedSteps; ++step) {
    world.barrier();
    const int64_t before = allocator.stats().allocated;
    allocator.reset_peak();
    pipeline.zero_grad();
    pipeline.forward_backward(inputs, labels);
    if (step == 0) continue;  // warm-up
    step_seconds.push_back(static_cast<float>(pipeline.step_seconds()));
    compute_seconds.push_back(
        static_cast<float>((1 - pipeline.measured_bubble()) * pipeline.step_seconds()));
    row.peak = static_cast<double>(allocator.stats().peak_allocated - before);
    const parallel::PassCosts passes = parallel::mean_pass_costs(pipeline.timeline());
    row.pass_seconds[0] += passes.forward / kTimedSteps;
    row.pass_seconds[1] += passes.backward / kTimedSteps;
    row.pass_seconds[2] += passes.weight / kTimedSteps;
    const StepReplay replay =
        replay_step(pipeline, actions, rounds,
                    seconds_since_boot(pipeline.step_launched()) - clock_base, world);
    row.replayed_bubble += replay.bubble / kTimedSteps;
    row.message_seconds += replay.message_seconds / kTimedSteps;
  }
  // A step ends when its last stage's does (the ranks start together after the barrier), so a
  // rank's bubble is 1 - its compute / the slowest rank's step, as the formulas count it.
  const std::vector<float> pipeline_steps = parallel::allreduce_max(step_seconds, world);
  for (int k = 0; k < kTimedSteps; ++k) {
    row.bubble += (1 - compute_seconds[k] / pipeline_steps[k]) / kTimedSteps;
    row.step_seconds += pipeline_steps[k] / kTimedSteps;
  }
}

// The ranks' mean bubble and pass lengths in the row, and each stage's own pass lengths.
std::vector<parallel::PassCosts> average_over_stages(Row& row, parallel::Communicator& world) {
  const int p = world.size();
  std::vector<float> local(1 + 3 * (1 + p), 0.0f);
  local[0] = static_cast<float>(row.bubble);
  for (size_t k = 0; k < 3; ++k) {
    local[1 + k] = local[1 + 3 * (1 + world.rank()) + k] = static_cast<float>(row.pass_seconds[k]);
  }
  const std::vector<float> sums = parallel::allreduce_sum(local, world);
  row.bubble = sums[0] / p;
  for (size_t k = 0; k < row.pass_seconds.size(); ++k) row.pass_seconds[k] = sums[1 + k] / p;
  std::vector<parallel::PassCosts> costs;
  for (int s = 0; s < p; ++s) {
    const float* mine = &sums[1 + 3 * (1 + s)];
    costs.push_back({mine[0], mine[1], mine[2]});
  }
  return costs;
}

Row measure(parallel::PipelineSchedule schedule, int micro_batches, int virtual_stages,
            int64_t sequences, const std::shared_ptr<parallel::Communicator>& world) {
  const nn::GptConfig config = nn::gpt_preset("gpt-tiny");
  std::mt19937 rng(3);
  nn::Gpt gpt(config, rng, Device::cpu());
  parallel::PipelineParallel pipeline(
      gpt, world,
      {.schedule = schedule, .micro_batches = micro_batches, .virtual_stages = virtual_stages});
  const auto [inputs, labels] = bench_batch(config, sequences * micro_batches);
  const int p = world->size();
  std::vector<std::vector<parallel::PipelineAction>> actions;
  for (int s = 0; s < p; ++s) {
    actions.push_back(parallel::schedule_actions(schedule, s, p, micro_batches, virtual_stages));
  }
  const auto rounds = parallel::pipeline_rounds(actions, virtual_stages);
  Row row;
  time_steps(pipeline, inputs, labels, actions, rounds, *world, row);
  row.timetable_bubble = parallel::timetable_bubble(rounds, average_over_stages(row, *world));
  if (world->rank() == 0) {
    const MicroBatchMemory one =
        micro_batch_memory(gpt, pipeline.stage_bounds()[0], inputs.slice(0, sequences));
    row.peak_formula = parallel::micro_batches_in_flight(actions[0]) * one.kept +
                       (parallel::splits_backward(actions[0]) ? one.split_backward : one.backward);
  }
  return row;
}

// The table's head: the model, the exchange's own time, how the replay treats the cores.
void print_header(int p, int64_t sequences, double exchange_alone) {
  std::printf("gpt-tiny in %d stage(s), micro-batches of %lld x 64 tokens, %d steps timed\n", p,
              static_cast<long long>(sequences), kTimedSteps);
  std::printf("an activation's exchange alone: %.3f ms; %s\n", exchange_alone * 1e3,
              g_shared_cores > 0
                  ? (std::to_string(g_shared_cores) + " cores for the " + std::to_string(p) +
                     " stages: replayed so, with exchanges as alone")
                        .c_str()
                  : "a core per stage: replayed with exchanges as in the step (msg ms)");
  std::printf("%-15s %3s %7s %8s %6s %10s %7s %7s %8s %9s %8s %10s %16s\n", "schedule", "m",
              "bubble", "formula", "F/B/W", "timetable", "replay", "msg ms", "step ms", "peak MiB",
              "formula", "in flight", "F / B / W ms");
}

void print_row(parallel::PipelineSchedule schedule, int p, int m, int v, const Row& row) {
  const bool interleaved = schedule == parallel::PipelineSchedule::kInterleaved;
  const std::string name =
      parallel::pipeline_schedule_name(schedule) + (interleaved ? " v=" + std::to_string(v) : "");
  const parallel::PassCosts mean = {row.pass_seconds[0], row.pass_seconds[1], row.pass_seconds[2]};
  std::printf(
      "%-15s %3d %7.3f %8.3f %6.3f %10.3f %7.3f %7.3f %8.1f %9.2f %8.2f %10d "
      "%6.1f/%4.1f/%4.1f\n",
      name.c_str(), m, row.bubble, parallel::bubble_fraction(schedule, p, m, v),
      parallel::bubble_fraction(schedule, p, m, v, mean), row.timetable_bubble, row.replayed_bubble,
      row.message_seconds * 1e3, row.step_seconds * 1e3, row.peak / 1048576.0,
      row.peak_formula / 1048576.0,
      parallel::micro_batches_in_flight(parallel::schedule_actions(schedule, 0, p, m, v)),
      mean.forward * 1e3, mean.backward * 1e3, mean.weight * 1e3);
}

void run(int argc, char** argv) {
  const int64_t sequences = argc > 1 ? std::atoll(argv[1]) : 2;
  COURSE_CHECK(sequences >= 1, "micro-batch sequences must be at least 1");
  const auto world = parallel::Communicator::world();
  parallel::share_cores(*world);  // OpenMP threads: this node's cores over its ranks
  const int p = world->size();
  const bool lead = world->rank() == 0;
  const nn::GptConfig config = nn::gpt_preset("gpt-tiny");
  const double exchange_alone =
      exchange_seconds(sequences * config.context * config.channels, *world);
  // Ranks sharing one node's cores (one thread each): replays where they compute in turns.
  const int cores =
      static_cast<int>(std::thread::hardware_concurrency()) / std::max(1, omp_get_max_threads());
  if (world->local_size() == p && cores < p) {
    g_shared_cores = cores;
    g_exchange_alone = exchange_alone;
  }
  if (lead) print_header(p, sequences, exchange_alone);
  measure(parallel::PipelineSchedule::kGpipe, 2, 1, sequences, world);  // warm-up of the process
  int rows = 0, within = 0;  // rows whose measured bubble is within 15% of the replay's
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
      print_row(schedule, p, m, v, row);
      ++rows;
      if (std::abs(row.bubble / row.replayed_bubble - 1) <= 0.15) ++within;
    }
  }
  if (lead) {
    std::printf("%d of %d rows measured within 15%% of their replay\n", within, rows);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return course::train::lab_main([&] { run(argc, argv); });
}
