// The main() of every test binary that runs on several MPI ranks. A failed assertion on one
// rank aborts the whole job at once, after its message is printed: the other ranks may be
// waiting in a collective that the failing rank will never join, and would otherwise hang
// until the test's timeout. The communicators' waits are also capped (--comm-timeout of the
// tests: 20 s), so a deadlock (say, every rank sending before any receives) fails with the
// operation's name instead of hanging.
#include <gtest/gtest.h>

#include <cstdio>

#include "common/parallel/communicator.h"

namespace {

class AbortJobOnFailure : public ::testing::EmptyTestEventListener {
 public:
  explicit AbortJobOnFailure(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::fprintf(stderr, "rank %d failed %s.%s: aborting every rank of the job\n", rank_,
                 test ? test->test_suite_name() : "?", test ? test->name() : "?");
    course::parallel::finish_job(1);
  }

 private:
  int rank_;
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
