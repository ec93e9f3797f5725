// The shared training loop on 2 and 4 ranks: a stop signal seen by one rank stops every rank
// after the same step, with one whole checkpoint; resumed, the run ends where the straight run
// does; a profiled run writes one trace with every rank's phases and collectives.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/testing/errors_and_files.h"
#include "common/train/stop_signal.h"
#include "common/train/tests/loop_fixture.h"

namespace course::train {
namespace {

using ::testing::HasSubstr;
using testing::TinyRun;

TEST(TrainingLoopOnRanks, OneRanksSignalStopsEveryRankAfterTheSameStep) {
  const auto world = parallel::Communicator::world();
  const int last = world->size() - 1;
  // One path for every rank (TEST_TMPDIR is the test's); only rank 0 writes it.
  const std::string path = course::testing::temp_path("loop-ranks.ckpt");
  install_stop_handlers();
  TinyRun stopped(6);
  stopped.flags.chkpt = path;
  stopped.on_step = [&](int64_t step) {
    if (step == 3 && world->rank() == last) course::train::send_stop_signal(SIGUSR1);
  };
  EXPECT_THAT(course::testing::error_of([&] { stopped.run(world.get()); }),
              HasSubstr("SIGUSR1 after step 3"))
      << "rank " << world->rank();
  install_stop_handlers();
  EXPECT_EQ(stopped.steps_taken, 3) << "rank " << world->rank();
  world->barrier();
  EXPECT_EQ(read_checkpoint_header(path).at("step"), 3);

  TinyRun resumed(6);
  resumed.flags.resume = path;
  resumed.run(world.get());
  TinyRun straight(6);
  straight.run(world.get());
  EXPECT_EQ(resumed.weights(), straight.weights()) << "rank " << world->rank();
}

// Each step ends with an all-reduce; the trace holds, for every rank, its steps and each
// all-reduce in flight (a begin and an end) and waited for (inside the step).
TEST(TrainingLoopOnRanks, ProfileHoldsEveryRanksStepsAndCollectives) {
  const auto world = parallel::Communicator::world();
  const std::string path = course::testing::temp_path("ranks-trace.json");
  TinyRun run(6);
  run.flags.profile = path;
  run.on_step = [&](int64_t) {
    Tensor t = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
    world->allreduce(t)->wait();
  };
  run.run(world.get());
  world->barrier();
  if (world->rank() != 0) return;
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  struct Seen {
    int steps = 0, begins = 0, ends = 0, waits = 0;
    double first_step_us = -1;
  };
  std::map<int, Seen> by_rank;
  for (const auto& e : trace["traceEvents"]) {
    Seen& seen = by_rank[e["pid"].get<int>()];
    const std::string name = e["name"], phase = e["ph"];
    if (name == "step" && phase == "X") {
      if (seen.steps++ == 0) seen.first_step_us = e["ts"];
    }
    if (name == "allreduce 16 B") (phase == "b" ? seen.begins : seen.ends) += 1;
    if (name == "wait allreduce 16 B" && phase == "X") ++seen.waits;
  }
  ASSERT_EQ(static_cast<int>(by_rank.size()), world->size());
  for (const auto& [rank, seen] : by_rank) {
    // Steps 2 to 5 are profiled (the course's schedule skips two).
    EXPECT_EQ(seen.steps, 4) << "rank " << rank;
    EXPECT_EQ(seen.begins, 4) << "rank " << rank;
    EXPECT_EQ(seen.ends, 4) << "rank " << rank;
    EXPECT_EQ(seen.waits, 4) << "rank " << rank;
    // One clock: the ranks' first profiled steps, kept in step by the all-reduces, line up.
    EXPECT_NEAR(seen.first_step_us, by_rank[0].first_step_us, 2e6) << "rank " << rank;
  }
}

}  // namespace
}  // namespace course::train
