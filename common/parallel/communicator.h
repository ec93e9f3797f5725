// Communicator: the collectives of data, tensor and pipeline parallelism over a group of
// ranks (from mpirun or srun), over two engines: MPI for CPU tensors and NCCL for GPU tensors
// (common/parallel/nccl_engine.h; its communicator is made on the first GPU collective, or by
// use_gpu(), which GPU send/recv need first). Every call returns a Work handle, so
// communication can overlap computation until wait().
//
// A rank that dies or stalls must not hang the others: wait() gives up after the communicator's
// timeout with an error naming the operation, and the job is then aborted at exit (MPI cannot
// recover a collective that one rank never joins).
//
// All collectives work in place or into a caller's tensor of the documented size, on
// contiguous tensors: f32/i32/i64/u8 on the CPU, and f16/bf16 for the operations that only move
// data (MPI cannot add 16-bit floats: reduce those in f32); any dtype on the GPU.
#pragma once

#include <memory>
#include <vector>

#include "common/tensor/tensor.h"

namespace course::parallel {

struct MpiComm;  // wraps an MPI_Comm, so users of this header need no MPI headers
class NcclEngine;

enum class ReduceOp { kSum, kMax, kMin };

// An operation in flight; wait() returns when this rank's part is complete. MPI progresses
// non-blocking collectives only inside MPI calls, so code that overlaps work with
// communication calls test() now and then.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;  // done yet? (never blocks)
};
using WorkPtr = std::shared_ptr<Work>;

// The exit code of a rank's main(): a failure in a job of several ranks aborts the whole job at
// once (the other ranks may be waiting in a collective this one will never join); success and
// preemption, which all ranks reach together, return `code` unchanged.
int finish_job(int code);

// What this rank's collectives moved since the communicator was made or reset_traffic(): the
// bytes each rank sends with a bandwidth-optimal (ring) algorithm, the figure the ZeRO paper
// compares: all-reduce 2 (N-1)/N S, reduce-scatter and all-gather (N-1)/N S of the full
// buffer S, broadcast and send S.
struct Traffic {
  int64_t collectives = 0;
  double bytes = 0;
  double allreduce_bytes = 0, reduce_scatter_bytes = 0, all_gather_bytes = 0, other_bytes = 0;
};

// A Work that is already done (what a synchronous operation returns).
WorkPtr completed_work();

class Communicator {
 public:
  // All the processes of the job (initialises MPI on first use; finalised at exit).
  static std::shared_ptr<Communicator> world();
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // This rank's index among the ranks of its node (its GPU on a multi-GPU node).
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }  // ranks on this rank's node

  // How long wait() and barrier() wait for the other ranks before failing (seconds).
  void set_timeout(double seconds);
  double timeout() const { return timeout_; }

  // Ranks with the same colour form a new communicator, ordered by key then old rank
  // (the rows and columns of a dp x tp x pp process grid); it keeps this one's timeout.
  std::shared_ptr<Communicator> split(int color, int key) const;

  WorkPtr allreduce(Tensor& t, ReduceOp op = ReduceOp::kSum);
  WorkPtr broadcast(Tensor& t, int root);
  // out (n) = the reduction of block `rank` of in (size * n) over the ranks.
  WorkPtr reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op = ReduceOp::kSum);
  // out (size * n) = every rank's in (n), in rank order.
  WorkPtr all_gather(const Tensor& in, Tensor& out);
  WorkPtr send(const Tensor& t, int dst, int tag = 0);
  WorkPtr recv(Tensor& t, int src, int tag = 0);
  void barrier();

  const Traffic& traffic() const { return traffic_; }
  void reset_traffic() { traffic_ = {}; }

  // Creates the NCCL communicator of these ranks on `device` now (all ranks together).
  void use_gpu(Device device);

 private:
  Communicator(std::unique_ptr<MpiComm> comm, bool owned);  // owned: freed with this object
  void check_rank(int r, const char* what) const;
  // The NCCL engine for a GPU tensor (made collectively on first use if `create`).
  NcclEngine& gpu(const Tensor& t, bool create);

  std::unique_ptr<MpiComm> comm_;
  std::unique_ptr<NcclEngine> nccl_;
  bool owned_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  double timeout_ = 300;
  Traffic traffic_;
  void count(double& kind, double bytes);
};

}  // namespace course::parallel
