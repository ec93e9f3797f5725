// The main() of every test binary that runs on several MPI ranks. A failed assertion on one
// rank aborts the whole job at once, after its message is printed: the other ranks may be
// waiting in a collective that the failing rank will never join, and would otherwise hang
// until the test's timeout. The communicators' waits are also capped (--comm-timeout of the
// tests: 20 s), so a deadlock (say, every rank sending before any receives) fails with the
// operation's name instead of hanging.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/parallel/comm/communicator.h"

namespace {

class AbortJobOnFailure : public ::testing::EmptyTestEventListener {
 public:
  explicit AbortJobOnFailure(int rank) : rank_(rank) {}
  void OnTestStart(const ::testing::TestInfo& test) override {
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  // gtest holds its own lock here: only this listener's state may be read.
  // The failure's first line goes with the abort, and gtest's own report (printed to stdout just
  // before, by the default printer) is flushed first, since the abort discards buffers.
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fflush(stdout);
    const std::string message = result.message();
    std::fprintf(stderr, "rank %d failed %s at %s:%d: %s; aborting every rank of the job\n", rank_,
                 test_.c_str(), result.file_name() ? result.file_name() : "?", result.line_number(),
                 message.substr(0, message.find('\n')).c_str());
    course::parallel::finish_job(1);
  }

 private:
  int rank_;
  std::string test_;
};

constexpr double kTestCommTimeoutSeconds = 20;

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const auto world = course::parallel::Communicator::world();
  world->set_timeout(kTestCommTimeoutSeconds);
  ::testing::UnitTest::GetInstance()->listeners().Append(new AbortJobOnFailure(world->rank()));
  return course::parallel::finish_job(RUN_ALL_TESTS());
}
