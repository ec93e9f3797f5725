// Two ranks that send each other a message and receive the other's, as neighbouring pipeline
// stages do in 1F1B's steady state: `--grouped` posts each rank's send and receive in one
// exchange(); `--ungrouped` posts the send alone, then the receive. Run by
// exchange_grouping_test.sh, which expects the ungrouped order to deadlock past MPI's eager
// limit (and end with the timeout's message, as it would on NCCL at any size past its buffers)
// and to pass below it, and the grouped order to pass at every size. `--stalled-ring`: rank 0
// all-reduces ELEMENTS floats (the communicator's ring from 1 MiB) while rank 1 stalls, which
// must end with the timeout's message naming the all-reduce.
//   exchange_grouping --grouped|--ungrouped|--stalled-ring ELEMENTS TIMEOUT_SECONDS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/core/error.h"
#include "common/parallel/comm/communicator.h"

using namespace course;
using namespace course::parallel;

int main(int argc, char** argv) {
  const auto world = Communicator::world();
  try {
    COURSE_CHECK(argc == 4,
                 "usage: exchange_grouping --grouped|--ungrouped|--stalled-ring ELEMENTS SECONDS");
    const std::string mode = argv[1];
    const int64_t n = std::atoll(argv[2]);
    world->set_timeout(std::atof(argv[3]));
    COURSE_CHECK(world->size() == 2, "runs on 2 ranks, got ", world->size());
    const int peer = 1 - world->rank();
    std::vector<float> mine(n);
    for (int64_t i = 0; i < n; ++i) mine[i] = static_cast<float>(world->rank() * 1000 + i % 997);
    const Tensor outgoing = Tensor::from_vector(mine, {n});
    Tensor incoming = Tensor::empty({n});
    if (mode == "--stalled-ring") {
      if (world->rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(60));
      Tensor sum = outgoing.clone();
      world->allreduce(sum)->wait();
      COURSE_FAIL("the all-reduce completed without rank 1");
    }
    if (mode == "--grouped") {
      world->exchange({send_to(outgoing, peer), receive_from(incoming, peer)})->wait();
    } else {
      COURSE_CHECK(mode == "--ungrouped", "unknown mode ", mode);
      const WorkPtr sent = world->send(outgoing, peer);
      world->recv(incoming, peer)->wait();
      sent->wait();
    }
    const std::vector<float> got = incoming.to_vector<float>();
    for (int64_t i = 0; i < n; ++i) {
      COURSE_CHECK(got[i] == static_cast<float>(peer * 1000 + i % 997), "element ", i,
                   " received wrong");
    }
    std::printf("rank %d received %lld elements\n", world->rank(), static_cast<long long>(n));
    return finish_job(0);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return finish_job(1);
  }
}
