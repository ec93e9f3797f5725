// Communicator: the collectives of data, tensor and pipeline parallelism over a group of
// ranks (from mpirun or srun), over two engines: MPI for CPU tensors and NCCL for GPU tensors
// (common/parallel/comm/nccl_engine.h; its communicator is made by use_device(), at setup, on every
// rank together). Every call returns a Work handle, so communication can overlap computation
// until wait().
//
// A rank's accelerator (its GPU, or a simulated one, device.h) is the communicator's device:
// tensors on it go to its engine, and every tensor of one operation (a reduce-scatter's input
// and output, a point-to-point group) is on it or on the CPU, never on both or on another
// device, so a receive buffer made on the wrong device fails on CPU ranks in CI as on GPUs.
// The simulated accelerator's engine is MPI on its host memory, under those rules. Ranks of a
// node that share one device (more ranks than GPUs: a one-GPU machine's self-test) cannot use
// NCCL, which needs a device per rank: their device tensors then go to MPI through pinned host
// twins (mpi_work.h), on a GPU and on a shared simulated accelerator alike.
//
// Point-to-point transfers go in groups (exchange()), as NCCL runs them: the sends and receives
// of one group are posted together, so two ranks that send to each other in one group cannot
// deadlock, and the groups of a communicator complete in the order this rank posts them (one
// NCCL stream). The MPI engine keeps that order too (a group starts once the one before it is
// done), so a pattern that deadlocks on GPUs (a send posted alone before the receive its peer
// waits for, above the eager limit) deadlocks on CPU ranks as well, and ends with the timeout's
// message. Receives match the sends of their peer in posting order, as in NCCL; the MPI engine
// checks each message's tag against the expected one, so an order that only tags made right
// fails on the CPU as it would go wrong on the GPU.
//
// Collectives may be captured in a graph (common/tensor/graph.h: a training step replayed as
// one): NCCL's are captured on their stream like kernels, and a watch over each replay's
// collectives ends a replay that outlives the timeout as it ends a collective; the MPI engine's
// become tasks of a CPU graph, run at their place in every replay.
//
// A rank that dies or stalls must not hang the others: wait() gives up after the communicator's
// timeout with an error naming the operation, and the job is then aborted at exit (MPI cannot
// recover a collective that one rank never joins).
//
// On two ranks the MPI engine sums f32 tensors of kRingAllreduceBytes and more with the course's
// ring (ring_allreduce.h) instead of MPI_Iallreduce: there it took a third of Open MPI 4.1's time
// from 1 MiB up over shared memory (bench/RESULTS.md). Only on two: a sum of two terms is the
// same in any order, while on more ranks the ring adds in another order than MPI's
// reduce-scatter, and ZeRO's and FSDP's updates would no longer equal DDP's to the last bits
// (Adam's first step magnifies the difference where a gradient is near 0).
//
// All collectives work in place or into a caller's tensor of the documented size, on the
// tensors' storage in order (every tensor is dense in its memory format: the ranks' tensors must
// share it, as a pipeline's channels-last activations and their landing buffers do):
// f32/i32/i64/u8 on the CPU, and f16/bf16 for the operations that only move data (MPI cannot
// add 16-bit floats: reduce those in f32); any dtype on the GPU.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "common/parallel/comm/work.h"
#include "common/tensor/tensor.h"

namespace course::parallel {

inline constexpr int64_t kRingAllreduceBytes = 1 << 20;

struct MpiComm;  // wraps an MPI_Comm, so users of this header need no MPI headers
class MpiWork;
class NcclEngine;

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
  // The transfers posted as one group (ncclGroupStart/End on the GPU); all on the CPU or all on
  // this communicator's device.
  WorkPtr exchange(const std::vector<PeerTransfer>& transfers);
  // A group of one transfer.
  WorkPtr send(const Tensor& t, int dst, int tag = 0) { return exchange({send_to(t, dst, tag)}); }
  WorkPtr recv(Tensor& t, int src, int tag = 0) { return exchange({receive_from(t, src, tag)}); }
  void barrier();

  // Counted when an operation is posted by the host: a graph's replays add nothing (a replay
  // moves what its capture counted).
  const Traffic& traffic() const { return traffic_; }
  void reset_traffic() { traffic_ = {}; }

  // Makes `device` (an accelerator) this communicator's device; on a GPU, creates the NCCL
  // communicator of these ranks now (all ranks together, at setup: a GPU collective before it
  // is an error, not a hidden collective inside the first one), unless two ranks of one node
  // share the device: then the MPI engine serves its tensors through host twins.
  void use_device(Device device);
  Device device() const { return device_; }  // the CPU until use_device()
  bool has_nccl() const { return nccl_ != nullptr; }
  bool stages_device_tensors() const { return staged_; }
  // Destroys the NCCL communicator (before MPI is finalised: at exit, for the world's).
  void release_device();

 private:
  // owned: freed with this object. with_ring: makes ring_ (the ring's own communicator has none).
  Communicator(std::unique_ptr<MpiComm> comm, bool owned, bool with_ring = true);
  void check_rank(int r, const char* what) const;
  // Whether `t` goes to NCCL: false for a CPU tensor and on a simulated device (the MPI engine
  // serves both); throws when `t` is on an accelerator other than this communicator's device.
  bool device_engine(const Tensor& t, const char* op) const;
  void check_same_place(const Tensor& a, const Tensor& b, const char* op) const;
  // Whether two ranks of this communicator on one node use `device` (all ranks together).
  bool ranks_share(Device device) const;
  // A work handle of the MPI engine, staging device tensors when the ranks share a device.
  std::shared_ptr<MpiWork> mpi_work(const char* op, std::vector<Tensor> keep) const;
  // An operation of the MPI engine during a graph capture (capture.h): a CPU graph (the CPU,
  // the simulated accelerator) gets `post` as a task, posted and waited for at its place in
  // every replay, and the capture goes on as if it were done; a GPU graph cannot call MPI (the
  // engine of ranks sharing a GPU): GraphCaptureError. Its traffic is counted at the capture,
  // as NCCL's is, not in the replays (whose host code does not run).
  WorkPtr replayed(const char* op, std::function<WorkPtr()> post);

  std::unique_ptr<MpiComm> comm_;
  std::unique_ptr<NcclEngine> nccl_;
  Device device_;        // the CPU until use_device()
  bool staged_ = false;  // device tensors through host twins (ranks share the device)
  bool owned_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  double timeout_ = 300;
  Traffic traffic_;
  WorkPtr last_group_;  // the MPI engine's point-to-point group in flight
  // A duplicate of this communicator that carries only the ring all-reduce's messages (so they
  // never match this one's point-to-point receives), and the ring in flight on it.
  std::unique_ptr<Communicator> ring_;
  WorkPtr ring_in_flight_;
  bool counting_ = true;  // false while a replay posts a captured operation
  void count(double& kind, double bytes);
};

}  // namespace course::parallel
