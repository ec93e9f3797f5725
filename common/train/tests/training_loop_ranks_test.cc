// The shared training loop on 2 and 4 ranks: a stop signal seen by one rank stops every rank
// after the same step, with one whole checkpoint; resumed, the run ends where the straight run
// does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>

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

}  // namespace
}  // namespace course::train
