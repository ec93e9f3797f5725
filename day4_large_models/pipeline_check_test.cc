// The day-4 check of pipeline and context parallelism, TP4.6-TP4.8 and TP4.18, on 2, 3 and 4 MPI
// ranks: the cut against every cut tried by brute force on irregular costs, the action lists by
// hand and against the pipeline's own schedules for every shape up to 6 stages, the exchange in a
// GPT's pipeline whose activations pass MPI's eager limit (against the pipeline's own exchange:
// losses, parameters and the bytes each stage sends), and the merge against attention over
// both key sets computed in double, with log-sum-exps past exp's range and queries that see no
// key. Wrong versions fail with their message: even cuts, the ends' parts ignored, a warm-up
// off by one, a backward before its forward, sends and receives in separate groups (a deadlock
// that ends in the communicator's 10 s timeout), the last stage sending its logits, a merge by
// averaging or without the maximum subtracted.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "common/kernels/cross_entropy.h"
#include "common/models/gpt/gpt.h"
#include "common/optim/optimizer.h"
#include "common/parallel/pipeline/pipeline_parallel.h"
#include "common/parallel/pipeline/pipeline_rounds.h"
#include "common/testing/world.h"
#include "day4_large_models/pipeline_exercises.h"

namespace day4 {
namespace {

using course::Device;
using course::DType;
using parallel::PipelineAction;
using parallel::PipelineSchedule;
using Kind = PipelineAction::Kind;

using course::testing::world;

// TP4.6 ----------------------------------------------------------------------------------

double costliest_stage(const nn::PartCosts& costs, const std::vector<int64_t>& cut) {
  double worst = 0;
  size_t next = 0;
  for (size_t s = 0; s < cut.size(); ++s) {
    double load = (s == 0 ? costs.first : 0.0) + (s + 1 == cut.size() ? costs.last : 0.0);
    for (int64_t b = 0; b < cut[s]; ++b) load += costs.blocks[next++];
    worst = std::max(worst, load);
  }
  return worst;
}

// The cheapest costliest stage over every cut of blocks [from, end) into `stages` runs.
double best_by_brute_force(const nn::PartCosts& costs, std::vector<int64_t>& cut, int stages,
                           int64_t from) {
  const auto blocks = static_cast<int64_t>(costs.blocks.size());
  if (static_cast<int>(cut.size()) == stages - 1) {
    cut.push_back(blocks - from);
    const double cost = costliest_stage(costs, cut);
    cut.pop_back();
    return cost;
  }
  double best = std::numeric_limits<double>::infinity();
  const int64_t later = stages - 1 - static_cast<int64_t>(cut.size());  // stages still to fill
  for (int64_t n = 1; from + n + later <= blocks; ++n) {
    cut.push_back(n);
    best = std::min(best, best_by_brute_force(costs, cut, stages, from + n));
    cut.pop_back();
  }
  return best;
}

std::string describe_cut(const std::vector<int64_t>& cut) {
  std::ostringstream out;
  for (size_t s = 0; s < cut.size(); ++s) out << (s ? ", " : "{") << cut[s];
  return out.str() + "}";
}

TEST(TP4_6, TheEndsPartsCountByHand) {
  // Four equal blocks; a heavy first part (the embeddings) makes the first stage's run shorter,
  // a heavy last part (the output layer) the last's.
  EXPECT_EQ(balanced_stages({.first = 3, .blocks = {1, 1, 1, 1}, .last = 0}, 2),
            (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(balanced_stages({.first = 0, .blocks = {1, 1, 1, 1}, .last = 3}, 2),
            (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(balanced_stages({.first = 1, .blocks = {5, 1, 1, 1, 1, 5}, .last = 1}, 3),
            (std::vector<int64_t>{1, 4, 1}));
  EXPECT_EQ(balanced_stages({.first = 0, .blocks = {2, 7, 1}, .last = 0}, 3),
            (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(balanced_stages({.first = 4, .blocks = {2, 2, 2}, .last = 4}, 1),
            (std::vector<int64_t>{3}));
}

TEST(TP4_6, TheCostliestStageIsAsCheapAsAnyCut) {
  std::mt19937 rng(418);
  std::uniform_int_distribution<int> block_count(1, 9), cost(0, 40), end_cost(0, 90);
  for (int trial = 0; trial < 400; ++trial) {
    nn::PartCosts costs{.first = static_cast<double>(end_cost(rng))};
    const int blocks = block_count(rng);
    // Multiply-add counts: large, uneven, some blocks free.
    for (int b = 0; b < blocks; ++b) costs.blocks.push_back(1.5e6 * cost(rng));
    costs.first *= 1.5e6;
    costs.last = 1.5e6 * end_cost(rng);
    const int stages = std::uniform_int_distribution<int>(1, blocks)(rng);
    std::vector<int64_t> none;
    const double best = best_by_brute_force(costs, none, stages, 0);
    const std::vector<int64_t> cut = balanced_stages(costs, stages);
    std::ostringstream what;
    what << "costs first " << costs.first << ", blocks [";
    for (double c : costs.blocks) what << " " << c;
    what << " ], last " << costs.last << " into " << stages << " stages: got " << describe_cut(cut);
    ASSERT_EQ(static_cast<int>(cut.size()), stages) << what.str();
    int64_t total = 0;
    for (const int64_t n : cut) {
      ASSERT_GE(n, 1) << what.str() << " (every stage holds a block)";
      total += n;
    }
    ASSERT_EQ(total, blocks) << what.str() << " (every block on one stage)";
    ASSERT_EQ(costliest_stage(costs, cut), best)
        << what.str() << ", whose costliest stage costs more than the best cut's " << best;
  }
}

// TP4.7 ----------------------------------------------------------------------------------

std::string describe_actions(const std::vector<PipelineAction>& actions) {
  std::string out;
  for (const PipelineAction& a : actions) {
    out += (out.empty() ? "" : " ") + std::string(a.kind == Kind::kForward ? "F" : "B") +
           std::to_string(a.micro_batch);
  }
  return out;
}

std::string actions_of(PipelineSchedule schedule, int stage, int stages, int micro_batches) {
  return describe_actions(stage_actions(schedule, stage, stages, micro_batches));
}

TEST(TP4_7, OneForwardOneBackwardByHand) {
  const auto f1b1 = PipelineSchedule::kOneForwardOneBackward;
  EXPECT_EQ(actions_of(f1b1, 0, 4, 6), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  EXPECT_EQ(actions_of(f1b1, 1, 4, 6), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5");
  EXPECT_EQ(actions_of(f1b1, 3, 4, 6), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
  EXPECT_EQ(actions_of(f1b1, 0, 4, 2), "F0 F1 B0 B1") << "fewer micro-batches than the warm-up";
  EXPECT_EQ(actions_of(f1b1, 0, 1, 3), "F0 B0 F1 B1 F2 B2") << "one stage";
}

TEST(TP4_7, GpipeByHand) {
  EXPECT_EQ(actions_of(PipelineSchedule::kGpipe, 0, 3, 3), "F0 F1 F2 B0 B1 B2");
  EXPECT_EQ(actions_of(PipelineSchedule::kGpipe, 2, 3, 5), "F0 F1 F2 F3 F4 B0 B1 B2 B3 B4");
}

// For every shape: the pipeline's own lists, the activations each stage holds at most, and the
// lockstep step of every stage's lists in 2 (m + p - 1) rounds (pipeline_rounds.h), without a
// backward before its forward or a stage waiting forever.
TEST(TP4_7, EveryShapeRunsInTheSchedulesTime) {
  for (const auto schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneForwardOneBackward}) {
    for (int stages = 1; stages <= 6; ++stages) {
      for (int micro_batches = 1; micro_batches <= 9; ++micro_batches) {
        std::vector<std::vector<PipelineAction>> every_stage;
        for (int stage = 0; stage < stages; ++stage) {
          const std::string what = parallel::pipeline_schedule_name(schedule) + ", stage " +
                                   std::to_string(stage) + " of " + std::to_string(stages) + ", " +
                                   std::to_string(micro_batches) + " micro-batches";
          every_stage.push_back(stage_actions(schedule, stage, stages, micro_batches));
          const auto expected = parallel::schedule_actions(schedule, stage, stages, micro_batches);
          ASSERT_EQ(describe_actions(every_stage.back()), describe_actions(expected)) << what;
          const int held = parallel::micro_batches_in_flight(every_stage.back());
          ASSERT_EQ(held, schedule == PipelineSchedule::kGpipe
                              ? micro_batches
                              : std::min(stages - stage, micro_batches))
              << what << ": activations held at once";
        }
        const auto rounds = parallel::pipeline_rounds(every_stage, 1);
        ASSERT_EQ(static_cast<int>(rounds[0].size()), 2 * (micro_batches + stages - 1))
            << parallel::pipeline_schedule_name(schedule) << " on " << stages << " stages, "
            << micro_batches << " micro-batches: lockstep rounds of the step";
      }
    }
  }
}

// TP4.8 (and TP4.6-TP4.7 in the pipeline) ---------------------------------------------

// 4 blocks of width 96 on a 12-token context: a micro-batch of 2 sequences sends 9 KiB
// activations, past MPI's eager limit (4 KiB over shared memory), where a send completes only
// once its receive is posted, as NCCL's always do.
const nn::GptConfig kWideGpt{"gpt-check-pipe", 4, 2, 96, 12, 37};
constexpr int kMicroBatches = 4, kSteps = 2;
constexpr int64_t kBatch = 8;

struct PipelineRun {
  std::vector<float> losses;
  std::vector<std::vector<float>> gathered;  // every parameter at the end
  double bytes_sent = 0;                     // by this stage over the steps
};

PipelineRun train_pipeline(const parallel::PipelineOptions& options) {
  std::mt19937 init(19);
  nn::Gpt gpt(kWideGpt, init, Device::cpu());
  const auto pp = world()->split(0, world()->rank());
  pp->set_timeout(10);  // a deadlocked exchange fails in seconds
  parallel::PipelineParallel pipeline(gpt, pp, options);
  course::optim::Sgd sgd(pipeline.parameters(), {.lr = 0.1f, .momentum = 0.9f});
  std::mt19937 rng(20);
  std::uniform_int_distribution<int32_t> token(0, kWideGpt.vocabulary - 1);
  PipelineRun run;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<int32_t> tokens(kBatch * kWideGpt.context);
    std::vector<int64_t> targets(tokens.size());
    for (auto& t : tokens) t = token(rng);
    for (auto& t : targets) t = token(rng);
    pipeline.zero_grad();
    run.losses.push_back(
        pipeline
            .forward_backward(
                Tensor::from_vector<int32_t>(tokens, {kBatch, kWideGpt.context}),
                Tensor::from_vector<int64_t>(targets, {static_cast<int64_t>(targets.size())}))
            .to_vector<float>()[0]);
    sgd.step();
  }
  run.bytes_sent = pp->traffic().bytes;
  pipeline.gather_model();
  for (const auto& [name, p] : gpt.state().parameters) {
    run.gathered.push_back(p->value.to_vector<float>());
  }
  return run;
}

void expect_same_run(const PipelineRun& got, const PipelineRun& expected, const std::string& what) {
  const int rank = world()->rank();
  EXPECT_EQ(got.bytes_sent, expected.bytes_sent)
      << what << ": stage " << rank << " sent " << got.bytes_sent
      << " bytes, the pipeline's own exchange " << expected.bytes_sent
      << " (each activation goes to the next stage, each gradient to the previous one, nothing "
         "past the ends)";
  EXPECT_EQ(got.losses, expected.losses) << what << ": the losses on stage " << rank;
  EXPECT_EQ(got.gathered, expected.gathered) << what << ": the trained model on stage " << rank;
}

TEST(TP4_8, TheExchangeTrainsAsThePipelinesOwn) {
  for (const auto schedule : {PipelineSchedule::kOneForwardOneBackward, PipelineSchedule::kGpipe}) {
    const parallel::PipelineOptions own{.schedule = schedule, .micro_batches = kMicroBatches};
    parallel::PipelineOptions yours = own;
    yours.hooks.exchange = exchange_with_neighbours;
    expect_same_run(train_pipeline(yours), train_pipeline(own),
                    "your exchange, " + parallel::pipeline_schedule_name(schedule));
  }
}

TEST(TP4_6_8, YourPipelineTrainsAsThePipelinesOwnOnYourCut) {
  parallel::PipelineOptions own{.schedule = PipelineSchedule::kOneForwardOneBackward,
                                .micro_batches = kMicroBatches};
  own.hooks.cut = balanced_stages;  // both on the same cut
  expect_same_run(train_pipeline({.schedule = own.schedule,
                                  .micro_batches = kMicroBatches,
                                  .hooks = pipeline_exercise_hooks()}),
                  train_pipeline(own), "your cut, 1F1B's action lists and exchange");
}

// TP4.18 ----------------------------------------------------------------------------------

constexpr double kNoKey = -std::numeric_limits<double>::infinity();

// Attention of one query over the keys `seen` of its (score, value row) pairs, in double.
struct Attended {
  std::vector<double> out;
  double lse = kNoKey;
};
Attended attend(const std::vector<double>& scores, const std::vector<std::vector<double>>& values,
                const std::vector<bool>& seen) {
  Attended a{std::vector<double>(values[0].size(), 0.0)};
  double top = kNoKey;
  for (size_t k = 0; k < scores.size(); ++k) {
    if (seen[k]) top = std::max(top, scores[k]);
  }
  if (top == kNoKey) return a;
  double total = 0;
  for (size_t k = 0; k < scores.size(); ++k) {
    if (!seen[k]) continue;
    const double w = std::exp(scores[k] - top);
    total += w;
    for (size_t j = 0; j < a.out.size(); ++j) a.out[j] += w * values[k][j];
  }
  for (double& o : a.out) o /= total;
  a.lse = top + std::log(total);
  return a;
}

// Two partial attentions over key sets A and B, and attention over both (the reference): 9
// queries of 5 values over 11 keys, each key in A or B; scores of every size: query 3's near 1000
// (exp overflows f32 and f64), query 4's near -1000, query 5 sees none of A's keys, query 6 none
// of B's, query 7 none at all (a causal chunk wholly in the future).
struct TwoKeySets {
  static constexpr int64_t n = 9, d = 5;
  PartialAttention a, b;
  std::vector<Attended> both;
};

TwoKeySets two_key_sets() {
  constexpr int64_t n = TwoKeySets::n, d = TwoKeySets::d, keys = 11;
  std::mt19937 rng(421);
  std::uniform_real_distribution<double> uniform(-3.0, 3.0);
  std::vector<bool> in_a(keys);
  for (int64_t k = 0; k < keys; ++k) in_a[k] = k % 3 != 1;
  std::vector<std::vector<double>> values(keys, std::vector<double>(d));
  for (auto& row : values) {
    for (double& v : row) v = uniform(rng);
  }
  std::vector<float> out_a(n * d), out_b(n * d), lse_a(n), lse_b(n);
  std::vector<Attended> both(n);
  for (int64_t i = 0; i < n; ++i) {
    const double offset = i == 3 ? 1000.0 : i == 4 ? -1000.0 : 0.0;
    std::vector<double> scores(keys);
    for (double& s : scores) s = offset + 4.0 * uniform(rng);
    std::vector<bool> seen_a(keys), seen_b(keys), seen(keys);
    for (int64_t k = 0; k < keys; ++k) {
      seen[k] = i != 7;
      seen_a[k] = seen[k] && in_a[k] && i != 5;
      seen_b[k] = seen[k] && !in_a[k] && i != 6;
      seen[k] = seen_a[k] || seen_b[k];
    }
    const Attended a = attend(scores, values, seen_a), b = attend(scores, values, seen_b);
    both[i] = attend(scores, values, seen);
    lse_a[i] = static_cast<float>(a.lse);
    lse_b[i] = static_cast<float>(b.lse);
    for (int64_t j = 0; j < d; ++j) {
      out_a[i * d + j] = static_cast<float>(a.out[j]);
      out_b[i * d + j] = static_cast<float>(b.out[j]);
    }
  }
  return {.a = {Tensor::from_vector(out_a, {n, d}), Tensor::from_vector(lse_a, {n})},
          .b = {Tensor::from_vector(out_b, {n, d}), Tensor::from_vector(lse_b, {n})},
          .both = std::move(both)};
}

TEST(TP4_18, MergingTwoKeySetsIsAttentionOverBoth) {
  constexpr int64_t n = TwoKeySets::n, d = TwoKeySets::d;
  const TwoKeySets sets = two_key_sets();
  const PartialAttention &a = sets.a, &b = sets.b;
  const std::vector<Attended>& both = sets.both;
  for (const bool swapped : {false, true}) {
    const PartialAttention merged =
        swapped ? merge_partial_attention(b, a) : merge_partial_attention(a, b);
    const std::vector<float> out = merged.out.to_vector<float>(),
                             lse = merged.lse.to_vector<float>();
    ASSERT_EQ(out.size(), static_cast<size_t>(n * d));
    ASSERT_EQ(lse.size(), static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const std::string what = "query " + std::to_string(i) + (swapped ? " (B merged with A)" : "");
      if (both[i].lse == kNoKey) {
        EXPECT_EQ(lse[i], -std::numeric_limits<float>::infinity())
            << what << " sees no key: its log-sum-exp is -infinity";
      } else {
        EXPECT_NEAR(lse[i], both[i].lse, 1e-5 * (1 + std::fabs(both[i].lse))) << what;
      }
      for (int64_t j = 0; j < d; ++j) {
        // Beyond f32's rounding of the values: the log-sum-exps' (an f32 near 1000 is exact to
        // 2^-14, a relative error of the weights exp(lse_a - lse) of that size).
        const double lse_rounding = std::ldexp(std::fabs(lse[i]), -24) * 3.0;  // |v| <= 3
        EXPECT_NEAR(out[i * d + j], both[i].out[j],
                    2e-6 + 2e-6 * std::fabs(both[i].out[j]) + lse_rounding)
            << what << ", value " << j << (std::isnan(out[i * d + j]) ? " is NaN" : "");
      }
    }
  }
}

}  // namespace
}  // namespace day4
