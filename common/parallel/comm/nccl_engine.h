// The NCCL engine of the communicator, for GPU tensors: one NCCL communicator per
// Communicator and device, created collectively at setup (rank 0 makes the unique id, MPI
// broadcasts it) in NCCL's non-blocking mode, so its initialisation too is bounded by the
// communicator's timeout. Collectives run on a dedicated stream that first waits for the work
// already queued on the compute stream (so gradients are complete), and each returns a Work
// whose wait() makes the compute stream wait for the collective's end event: the host never
// waits for a collective inside a step. A watchdog thread per communicator retires the events
// and aborts the communicator (ncclCommAbort) when one outlives the timeout, so no rank hangs;
// the next call on it throws the timeout's message. Work::synchronize() waits on the host.
// Point-to-point transfers go in one NCCL group per exchange. The communicator is destroyed
// before MPI is finalised (communicator.cc), never after an abort. Built without CUDA, creating
// one is an error.
#pragma once

#include <functional>
#include <memory>

#include "common/parallel/comm/work.h"

namespace course::parallel {

class NcclEngine {
 public:
  // `broadcast_id` sends rank 0's bytes to every rank (over MPI).
  NcclEngine(int rank, int size, Device device, double timeout_seconds,
             const std::function<void(void* bytes, int count)>& broadcast_id);
  ~NcclEngine();
  NcclEngine(const NcclEngine&) = delete;
  NcclEngine& operator=(const NcclEngine&) = delete;

  Device device() const { return device_; }
  WorkPtr allreduce(Tensor& t, ReduceOp op);
  WorkPtr broadcast(Tensor& t, int root);
  WorkPtr reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op);
  WorkPtr all_gather(const Tensor& in, Tensor& out);
  // One ncclGroupStart/End around the sends and receives (NCCL has no tags: they match in order).
  WorkPtr exchange(const std::vector<PeerTransfer>& transfers);

  struct State;  // the NCCL communicator and stream (nccl_engine.cc)

 private:
  std::shared_ptr<State> state_;  // shared with the Works in flight
  Device device_;
};

}  // namespace course::parallel
