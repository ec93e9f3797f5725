// The MPI engine's work handle (communicator.cc): non-blocking MPI requests (one, or a
// point-to-point group) that keep the tensors they read or write alive until done, check that
// each receive of a group matched a message of the tag it expects, and give up after the
// communicator's timeout.
//
// Device tensors MPI cannot read (a GPU's, when the ranks of a communicator share a GPU and
// NCCL, which needs a GPU per rank, cannot serve them; or the simulated accelerator's in the
// same situation) travel through pinned host twins: staged() copies a tensor's bytes to its
// twin before the request is posted (after the device work queued before it), and the twins
// of outputs are copied back to their tensors when the request completes. Each copy is a host
// wait: that engine is the correctness path of a node with fewer GPUs than ranks, not a fast one.
#pragma once

#include <mpi.h>

#include <atomic>
#include <utility>
#include <vector>

#include "common/parallel/comm/work.h"
#include "common/tensor/tensor.h"

namespace course::parallel {

// Set when a wait timed out: the job cannot finish cleanly (MPI_Finalize would wait for the
// missing rank), so it is aborted at exit instead.
extern std::atomic<bool> mpi_timed_out;

class MpiWork : public Work {
 public:
  // `stage_device_tensors`: staged() gives device tensors host twins (else it returns them).
  MpiWork(const char* op, int rank, double timeout, std::vector<Tensor> keep,
          bool stage_device_tensors = false);
  ~MpiWork() override;

  MPI_Request* request() { return &requests_.emplace_back(MPI_REQUEST_NULL); }
  // A receive whose message must carry `tag` (posted with MPI_ANY_TAG: matched in order).
  MPI_Request* tagged_request(int peer, int tag);

  // The memory MPI reads or writes for `t`: `t` itself in host memory, else (staging) a pinned
  // twin holding `t`'s bytes when `read`, copied back into `t` at completion when `written`.
  Tensor staged(const Tensor& t, bool read, bool written);

  bool test() override;
  void wait() override;

 private:
  struct Expected {
    size_t index;
    int peer, tag;
  };
  const char* op_;
  int rank_;
  double timeout_;
  bool stage_;
  std::vector<MPI_Request> requests_;
  std::vector<Expected> expected_;
  bool done_ = false;
  std::vector<Tensor> keep_;
  std::vector<std::pair<Tensor, Tensor>> copy_back_;  // (tensor, its twin)
};

}  // namespace course::parallel
