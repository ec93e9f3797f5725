// What the communicator's operations take and return, apart from the communicator itself, so its
// engines (MPI in communicator.cc, NCCL in nccl_engine.h) and wrappers (traced_work.h) need
// nothing of it: the reduction operators, the Work handle of an operation in flight, and the
// transfers of a point-to-point group.
#pragma once

#include <memory>

#include "common/tensor/tensor.h"

namespace course::parallel {

enum class ReduceOp { kSum, kMax, kMin };

// An operation in flight. wait() orders what follows after it: on the CPU (MPI) it returns when
// this rank's part is complete; on a GPU (NCCL) the compute stream waits for it, not the host
// (a watchdog ends a collective that outlives the communicator's timeout, and the next call
// reports it). synchronize() waits on the host, under the timeout (a host wait: tests, the end
// of a run). MPI progresses non-blocking collectives only inside MPI calls, so code that
// overlaps work with communication calls test() now and then.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;  // done yet? (never blocks)
  virtual void synchronize() { wait(); }
};
using WorkPtr = std::shared_ptr<Work>;

// A Work that is already done (what a synchronous operation returns).
WorkPtr completed_work();

// One transfer of a point-to-point group: send `tensor` to rank `peer`, or receive into it.
struct PeerTransfer {
  enum class Kind { kSend, kRecv };
  Kind kind;
  Tensor tensor;  // contiguous; written by a receive
  int peer;
  int tag = 0;  // what the receive expects of the message it matches (checked by MPI)
};
inline PeerTransfer send_to(const Tensor& t, int peer, int tag = 0) {
  return {PeerTransfer::Kind::kSend, t, peer, tag};
}
inline PeerTransfer receive_from(const Tensor& t, int peer, int tag = 0) {
  return {PeerTransfer::Kind::kRecv, t, peer, tag};
}

}  // namespace course::parallel
