// Polling, the timeout, the tag check and the host twins of the MPI engine's requests.
#include "common/parallel/comm/mpi_work.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "common/core/error.h"
#include "common/core/mpi_check.h"

namespace course::parallel {

std::atomic<bool> mpi_timed_out{false};

MpiWork::MpiWork(const char* op, int rank, double timeout, std::vector<Tensor> keep,
                 bool stage_device_tensors)
    : op_(op),
      rank_(rank),
      timeout_(timeout),
      stage_(stage_device_tensors),
      keep_(std::move(keep)) {}

MpiWork::~MpiWork() {
  if (mpi_timed_out) return;
  for (MPI_Request& r : requests_) {
    if (r != MPI_REQUEST_NULL) MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
}

MPI_Request* MpiWork::tagged_request(int peer, int tag) {
  expected_.push_back({requests_.size(), peer, tag});
  return request();
}

Tensor MpiWork::staged(const Tensor& t, bool read, bool written) {
  if (!stage_ || !t.device().is_accelerator()) return t;
  Tensor twin = read ? pinned_copy(t) : Tensor::empty_pinned(t.shape(), t.dtype());
  if (written) copy_back_.emplace_back(t, twin);
  keep_.push_back(twin);
  return twin;
}

bool MpiWork::test() {
  if (done_) return true;
  int done = 0;
  std::vector<MPI_Status> statuses(requests_.size());
  MPI_CHECK(
      MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, statuses.data()));
  if (!done) return false;
  done_ = true;
  for (auto& [tensor, twin] : std::exchange(copy_back_, {})) {
    copy_bytes(tensor.data(), tensor.device(), twin.data(), Device::cpu(), tensor.nbytes());
  }
  keep_.clear();
  const std::vector<Expected> expected = std::exchange(expected_, {});
  for (const Expected& e : expected) {
    COURSE_CHECK(statuses[e.index].MPI_TAG == e.tag, op_, " on rank ", rank_,
                 ": the message from rank ", e.peer, " has tag ", statuses[e.index].MPI_TAG,
                 " where tag ", e.tag,
                 " was expected: point-to-point messages match in posting order (as NCCL's "
                 "do), and the two ranks posted theirs in different orders");
  }
  return true;
}

void MpiWork::wait() {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_);
  const auto yielding_until = Clock::now() + std::chrono::milliseconds(5);
  while (!test()) {
    const auto now = Clock::now();
    if (now > deadline) {
      mpi_timed_out = true;
      COURSE_FAIL(op_, " did not complete within ", timeout_, " s on rank ", rank_,
                  ": another rank died or stalled, or its sends and receives are not grouped "
                  "with their peer's");
    }
    // A message due within a pass (a pipeline's neighbour) arrives while this rank spins,
    // giving its core to any rank that shares it; a longer wait sleeps between polls.
    if (now < yielding_until) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

}  // namespace course::parallel
