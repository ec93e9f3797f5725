// The lockstep timetable of pipeline steps (pipeline_rounds.h), for every schedule over 1 to 4
// stages, 1 to 8 micro-batches and 2 or 3 chunks: each stage runs exactly its schedule's actions
// in order (weight passes after their backward, in no round of their own); each round's sends are
// received in the same round by their stage and nothing else is; an action runs only after its
// input arrived in an earlier round; one message at most per round between two stages (so a group's
// order is unambiguous). Schedules a trainee might write wrong are errors naming the stage, never a
// hang. The timetable's own bubble for given pass lengths equals each schedule's formula when the
// passes take as long, and a hand-computed replay otherwise, with messages and shared cores too.
#include "common/parallel/pipeline/pipeline_rounds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "common/core/error.h"

namespace course::parallel {
namespace {

using ::testing::HasSubstr;
using Kind = PipelineAction::Kind;

void expect_lockstep(PipelineSchedule schedule, int p, int m, int v) {
  const std::string what = pipeline_schedule_name(schedule) + " p=" + std::to_string(p) +
                           " m=" + std::to_string(m) + " v=" + std::to_string(v);
  std::vector<std::vector<PipelineAction>> actions(p);
  for (int s = 0; s < p; ++s) actions[s] = schedule_actions(schedule, s, p, m, v);
  const auto rounds = pipeline_rounds(actions, v);
  ASSERT_EQ(rounds.size(), static_cast<size_t>(p)) << what;
  const size_t length = rounds[0].size();
  std::vector<std::set<StageMessage>> arrived(p);
  for (size_t t = 0; t < length; ++t) {
    std::map<int, std::multiset<StageMessage>> sent_to;  // stage -> messages sent this round
    for (int s = 0; s < p; ++s) {
      ASSERT_EQ(rounds[s].size(), length) << what << ": every stage takes part in every round";
      const PipelineRound& r = rounds[s][t];
      if (r.action) {
        const auto input = action_input(*r.action, s, p, v);
        if (input) {
          EXPECT_EQ(arrived[s].count(*input), 1u)
              << what << ": stage " << s << " round " << t << " runs before its input arrived";
        }
        const auto output = action_output(*r.action, s, p, v);
        EXPECT_EQ(r.sends.size(), output ? 1u : 0u) << what;
        if (output && !r.sends.empty()) {
          EXPECT_EQ(r.sends[0], *output) << what;
        }
      } else {
        EXPECT_TRUE(r.sends.empty()) << what << ": an idle stage sends nothing";
      }
      for (const StageMessage& out : r.sends) sent_to[out.to % p].insert(out);
    }
    for (int s = 0; s < p; ++s) {
      const std::vector<StageMessage>& in = rounds[s][t].receives;
      EXPECT_EQ(std::multiset<StageMessage>(in.begin(), in.end()), sent_to[s])
          << what << ": stage " << s << " round " << t << " receives what was sent to it";
      std::set<int> senders;
      for (const StageMessage& message : in) {
        const int from = (message.gradient ? message.to + 1 : message.to - 1) % p;
        EXPECT_TRUE(senders.insert(from).second)
            << what << ": two messages from stage " << from << " in one round";
        arrived[s].insert(message);
      }
    }
  }
  for (int s = 0; s < p; ++s) {
    std::vector<PipelineAction> ran;
    std::set<std::pair<int, int>> backed_up;  // so far, this round's action included
    for (const PipelineRound& r : rounds[s]) {
      if (r.action) ran.push_back(*r.action);
      if (r.action && r.action->kind == Kind::kBackward) {
        backed_up.insert({r.action->chunk, r.action->micro_batch});
      }
      for (const PipelineAction& w : r.weight_passes) {  // after the action, while messages travel
        EXPECT_EQ(w.kind, Kind::kWeight) << what;
        EXPECT_EQ(backed_up.count({w.chunk, w.micro_batch}), 1u)
            << what << ": stage " << s << " runs " << action_name(w) << " before its backward";
        ran.push_back(w);
      }
    }
    EXPECT_EQ(ran, actions[s]) << what << ": stage " << s;
  }
}

TEST(PipelineRounds, EveryScheduleRunsInMatchedLockstepRounds) {
  for (int p = 1; p <= 4; ++p) {
    for (int m = 1; m <= 8; ++m) {
      for (auto schedule :
           {PipelineSchedule::kNaive, PipelineSchedule::kGpipe,
            PipelineSchedule::kOneForwardOneBackward, PipelineSchedule::kZeroBubbleH1}) {
        expect_lockstep(schedule, p, m, 1);
      }
      for (int v : {2, 3}) {
        if (m % p == 0) expect_lockstep(PipelineSchedule::kInterleaved, p, m, v);
      }
    }
  }
}

// Weight passes take no round of their own: ZB-H1 sends and receives exactly 1F1B's messages in
// 1F1B's rounds, its weight passes riding on them.
TEST(PipelineRounds, ZeroBubbleH1ExchangesInOneForwardOneBackwardsRounds) {
  for (int p = 1; p <= 4; ++p) {
    for (int m = 1; m <= 8; ++m) {
      std::vector<std::vector<PipelineAction>> f1b1(p), zb(p);
      for (int s = 0; s < p; ++s) {
        f1b1[s] = schedule_actions(PipelineSchedule::kOneForwardOneBackward, s, p, m);
        zb[s] = schedule_actions(PipelineSchedule::kZeroBubbleH1, s, p, m);
      }
      const auto f1b1_rounds = pipeline_rounds(f1b1, 1), zb_rounds = pipeline_rounds(zb, 1);
      for (int s = 0; s < p; ++s) {
        ASSERT_EQ(zb_rounds[s].size(), f1b1_rounds[s].size()) << "p " << p << " m " << m;
        for (size_t t = 0; t < zb_rounds[s].size(); ++t) {
          EXPECT_EQ(zb_rounds[s][t].action, f1b1_rounds[s][t].action);
          EXPECT_EQ(zb_rounds[s][t].sends, f1b1_rounds[s][t].sends);
          EXPECT_EQ(zb_rounds[s][t].receives, f1b1_rounds[s][t].receives);
        }
      }
    }
  }
}

// Trainees' plausible mistakes in an action list: a backward before its forward, a forward
// whose activation no stage produces (stage 0 forgot micro-batch 1).
TEST(PipelineRounds, ActionsThatCannotRunAreErrorsNamingTheStage) {
  const PipelineAction f0{Kind::kForward, 0}, f1{Kind::kForward, 1};
  const PipelineAction b0{Kind::kBackward, 0}, b1{Kind::kBackward, 1};
  EXPECT_THAT(
      [&] {
        pipeline_rounds({{f0, b0, f1, b1}, {b0, f0, f1, b1}}, 1);
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("stage 1 runs B0 before its forward")));
  EXPECT_THAT(
      [&] {
        pipeline_rounds({{f0, b0}, {f0, b0, f1, b1}}, 1);
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("stage 1 waits to run F1")));
  EXPECT_THAT(
      [&] {
        pipeline_rounds({{f0, {Kind::kWeight, 0}, b0}}, 1);
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("stage 0 runs W0 before its backward")));
}

std::vector<std::vector<PipelineRound>> rounds_of(PipelineSchedule schedule, int p, int m, int v) {
  std::vector<std::vector<PipelineAction>> actions(p);
  for (int s = 0; s < p; ++s) actions[s] = schedule_actions(schedule, s, p, m, v);
  return pipeline_rounds(actions, v);
}

TEST(TimetableBubble, EqualPassesGiveEachSchedulesFormula) {
  const std::vector<PassCosts> any_length = {{1, 1, 0}, {1, 1, 0}, {1, 1, 0}, {1, 1, 0}};
  for (int p : {2, 3, 4}) {
    const std::vector<PassCosts> costs(any_length.begin(), any_length.begin() + p);
    for (int m : {1, 2, 3, 4, 8}) {
      for (auto schedule : {PipelineSchedule::kNaive, PipelineSchedule::kGpipe,
                            PipelineSchedule::kOneForwardOneBackward}) {
        EXPECT_NEAR(timetable_bubble(rounds_of(schedule, p, m, 1), costs),
                    bubble_fraction(schedule, p, m, 1), 1e-12)
            << pipeline_schedule_name(schedule) << " p=" << p << " m=" << m;
      }
      // ZB-H1's weight passes run while each round's messages travel: with F = B = W its
      // timetable is the paper's (p - 1) / (3 m + p - 1), a third of 1F1B's as m grows.
      const std::vector<PassCosts> three_equal(p, PassCosts{1, 1, 1});
      EXPECT_NEAR(
          timetable_bubble(rounds_of(PipelineSchedule::kZeroBubbleH1, p, m, 1), three_equal),
          bubble_fraction(PipelineSchedule::kZeroBubbleH1, p, m, 1), 1e-12)
          << "zb-h1 p=" << p << " m=" << m;
      if (m % p == 0) {
        EXPECT_NEAR(timetable_bubble(rounds_of(PipelineSchedule::kInterleaved, p, m, 2), costs),
                    bubble_fraction(PipelineSchedule::kInterleaved, p, m, 2), 1e-12)
            << "interleaved p=" << p << " m=" << m;
      }
    }
  }
}

TEST(TimetableBubble, AStageWaitsForItsSlowerNeighbour) {
  // Naive, 2 stages, 1 micro-batch, the second stage twice as slow: stage 0 forwards over [0, 1],
  // stage 1 over [1, 3] and backwards over [3, 7], stage 0 backwards over [7, 9]; the stages
  // compute 3 and 6 of the 9.
  const auto rounds = rounds_of(PipelineSchedule::kNaive, 2, 1, 1);
  EXPECT_NEAR(timetable_bubble(rounds, {{1, 2, 0}, {2, 4, 0}}), (6.0 / 9 + 3.0 / 9) / 2, 1e-12);
  EXPECT_THAT(
      [&] {
        timetable_bubble(rounds, {{1, 2, 0}});
      },
      testing::ThrowsMessage<Error>(HasSubstr("1 stages' pass costs for a timetable of 2")));
}

TEST(TimetableBubble, MessagesAndSharedCores) {
  const auto naive = rounds_of(PipelineSchedule::kNaive, 2, 1, 1);
  const std::vector<PassCosts> uneven = {{1, 2, 0}, {2, 4, 0}};
  // Messages of 0.5: the activation lands at 1.5, stage 1 forwards over [1.5, 3.5] and backwards
  // over [3.5, 7.5], its gradient lands at 8, stage 0 backwards over [8, 10].
  EXPECT_NEAR(timetable_bubble(naive, uneven, {.message_seconds = 0.5}), (7.0 / 10 + 4.0 / 10) / 2,
              1e-12);
  // The same on 2 stages sharing one core and free messages: the core is never idle, so
  // the step is the 8 units of both stages' work and each stage idles half of it (4 units of
  // the 6 a device per stage gives would be the formula's 1/3).
  const std::vector<PassCosts> unit = {{1, 1, 0}, {1, 1, 0}};
  const auto gpipe = rounds_of(PipelineSchedule::kGpipe, 2, 2, 1);
  // GPipe, 2 stages, 2 micro-batches of unit passes: the formula's 6 units plus the 4 exchanges
  // on the way (F0's activation, F1's with F0 running, B0's gradient, B1's with B0 running), the
  // sender leaving an exchange when the receiver has it too: 4 units of compute in 8.
  EXPECT_NEAR(timetable_bubble(gpipe, unit, {.message_seconds = 0.5}), 0.5, 1e-12);
  EXPECT_NEAR(timetable_bubble(gpipe, unit, {.cores = 1}), 0.5, 1e-12);
  for (int p : {2, 3, 4}) {
    for (int m : {1, 4, 8}) {
      for (auto schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneForwardOneBackward,
                            PipelineSchedule::kZeroBubbleH1}) {
        const auto rounds = rounds_of(schedule, p, m, 1);
        const std::vector<PassCosts> costs(p, PassCosts{1, 1, 1});
        const std::string what = pipeline_schedule_name(schedule) + " p=" + std::to_string(p) +
                                 " m=" + std::to_string(m);
        // As many cores as stages (or more) change nothing; one core for all idles (p - 1) / p.
        EXPECT_NEAR(timetable_bubble(rounds, costs, {.cores = p}), timetable_bubble(rounds, costs),
                    1e-12)
            << what;
        EXPECT_NEAR(timetable_bubble(rounds, costs, {.cores = 1}), (p - 1.0) / p, 1e-12) << what;
        // Fewer cores than stages never shorten the step; messages lengthen it.
        EXPECT_GE(timetable_bubble(rounds, costs, {.cores = p - 1}) + 1e-12,
                  timetable_bubble(rounds, costs))
            << what;
        EXPECT_GT(timetable_bubble(rounds, costs, {.message_seconds = 0.1}),
                  timetable_bubble(rounds, costs))
            << what;
      }
    }
  }
  EXPECT_THAT([&] { timetable_bubble(naive, uneven, {.message_seconds = -1}); },
              testing::ThrowsMessage<Error>(HasSubstr("0 seconds or more")));
}

TEST(TimetableBubble, InterleavingPaysForABackwardLongerThanAForward) {
  // Backwards twice as long as forwards: GPipe's and 1F1B's rounds pair like passes, so their
  // bubbles stay the formula's; interleaved 1F1B's steady rounds pair one rank's forward with
  // its neighbour's backward, so the forward's rank waits a forward's length every other round.
  const std::vector<PassCosts> costs = {{1, 2, 0}, {1, 2, 0}};
  for (auto schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneForwardOneBackward}) {
    EXPECT_NEAR(timetable_bubble(rounds_of(schedule, 2, 8, 1), costs),
                bubble_fraction(schedule, 2, 8, 1), 1e-12);
  }
  EXPECT_GT(timetable_bubble(rounds_of(PipelineSchedule::kInterleaved, 2, 8, 2), costs),
            3 * bubble_fraction(PipelineSchedule::kInterleaved, 2, 8, 2));
}

}  // namespace
}  // namespace course::parallel
