// The communicator's collectives: the MPI engine's operations (and their tasks in a captured
// graph), or the device engine's where a collective's tensors are on the rank's device.
#include "common/parallel/comm/communicator.h"

#include <mpi.h>

#include <functional>
#include <utility>
#include <vector>

#include "common/core/mpi_check.h"
#include "common/parallel/comm/mpi_comm.h"
#include "common/parallel/comm/mpi_work.h"
#include "common/parallel/comm/nccl_engine.h"
#include "common/parallel/comm/ring_allreduce.h"
#include "common/parallel/comm/traced_work.h"
#include "common/tensor/capture.h"

namespace course::parallel {

namespace {

// The MPI type of `t`'s elements. Operations that only move data (broadcast, all-gather, send,
// receive) move 16-bit floats as 16-bit words; reductions need an arithmetic type.
MPI_Datatype mpi_type(const Tensor& t, const char* op, bool moves_only = false) {
  COURSE_CHECK(t.defined() && t.device().runs_host_kernels(), op,
               ": the MPI engine takes tensors in host memory, got ", t.str());
  switch (t.dtype()) {
    case DType::kF32:
      return MPI_FLOAT;
    case DType::kI32:
      return MPI_INT32_T;
    case DType::kI64:
      return MPI_INT64_T;
    case DType::kU8:
      return MPI_UINT8_T;
    case DType::kI8:
      return MPI_INT8_T;
    case DType::kF16:
    case DType::kBF16:
      if (moves_only) return MPI_UINT16_T;
      [[fallthrough]];
    default:
      COURSE_FAIL(op, ": MPI cannot reduce ", dtype_name(t.dtype()), " (reduce in f32 instead)");
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
  }
  return MPI_SUM;
}

// Tensors on an accelerator go to the rank's device engine (communicator.h), CPU tensors to MPI.
bool on_device(const Tensor& t) { return t.defined() && t.device().is_accelerator(); }

}  // namespace

std::shared_ptr<MpiWork> Communicator::mpi_work(const char* op, std::vector<Tensor> keep) const {
  return std::make_shared<MpiWork>(op, rank_, timeout_, std::move(keep), staged_);
}

bool Communicator::device_engine(const Tensor& t, const char* op) const {
  if (!on_device(t)) return false;
  COURSE_CHECK(t.device() == device_, op, " of ", t.str(), ": this communicator's device is ",
               device_.str(), "; every rank calls use_device(", t.device().str(),
               ") at setup (parallel::set_up_rank does), and a collective's tensors live there");
  return nccl_ != nullptr;
}

void Communicator::check_same_place(const Tensor& a, const Tensor& b, const char* op) const {
  COURSE_CHECK(a.defined() && b.defined() && a.device() == b.device(), op,
               ": the tensors of one operation are all on the CPU or all on this rank's device (",
               device_.str(), "), got ", a.str(), " and ", b.str());
}

void Communicator::check_rank(int r, const char* what) const {
  COURSE_CHECK(r >= 0 && r < size_, what, " rank ", r, " is not in this communicator of ", size_);
}

void Communicator::count(double& kind, double bytes) {
  if (!counting_) return;
  ++traffic_.collectives;
  kind += bytes;
  traffic_.bytes += bytes;
}

WorkPtr Communicator::replayed(const char* op, std::function<WorkPtr()> post) {
  if (!capturing_on_host()) {
    throw GraphCaptureError(detail::concat(
        op,
        " through MPI inside a GPU graph capture: ranks that share a GPU exchange through MPI "
        "from the host, which a CUDA graph cannot replay (give each rank its own GPU, for NCCL)"));
  }
  detail::record_host_work([this, post = std::move(post)] {
    const bool counting = std::exchange(counting_, false);  // counted once, at the capture
    const WorkPtr work = post();
    counting_ = counting;
    work->wait();
  });
  return completed_work();
}

WorkPtr Communicator::allreduce(Tensor& t, ReduceOp op) {
  const bool nccl = device_engine(t, "allreduce");
  count(traffic_.allreduce_bytes, 2.0 * (size_ - 1) / size_ * static_cast<double>(t.nbytes()));
  if (capturing() && !nccl) {
    return replayed("allreduce", [this, t, op]() mutable { return allreduce(t, op); });
  }
  if (nccl) {
    return traced(nccl_->allreduce(t, op), "allreduce", t.nbytes());
  }
  if (ring_ && t.device().is_cpu() && op == ReduceOp::kSum && t.dtype() == DType::kF32 &&
      t.nbytes() >= kRingAllreduceBytes) {
    // One ring at a time, so every rank posts the rings' steps in the same order.
    if (ring_in_flight_) ring_in_flight_->wait();
    ring_in_flight_ = start_ring_allreduce_sum(t, *ring_);
    return traced(ring_in_flight_, "allreduce", t.nbytes());
  }
  auto work = mpi_work("allreduce", {t});
  const Tensor buffer = work->staged(t, true, true);
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(t.numel()),
                           mpi_type(buffer, "allreduce"), mpi_op(op), comm_->comm,
                           work->request()));
  return traced(work, "allreduce", t.nbytes());
}

WorkPtr Communicator::broadcast(Tensor& t, int root) {
  check_rank(root, "broadcast root");
  const bool nccl = device_engine(t, "broadcast");
  count(traffic_.other_bytes, static_cast<double>(t.nbytes()));
  if (capturing() && !nccl) {
    return replayed("broadcast", [this, t, root]() mutable { return broadcast(t, root); });
  }
  if (nccl) {
    return traced(nccl_->broadcast(t, root), "broadcast", t.nbytes());
  }
  auto work = mpi_work("broadcast", {t});
  const Tensor buffer = work->staged(t, rank_ == root, rank_ != root);
  MPI_CHECK(MPI_Ibcast(buffer.data(), static_cast<int>(t.numel()),
                       mpi_type(buffer, "broadcast", true), root, comm_->comm, work->request()));
  return traced(work, "broadcast", t.nbytes());
}

WorkPtr Communicator::reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) {
  COURSE_CHECK(out.dtype() == in.dtype() && in.numel() == out.numel() * size_,
               "reduce_scatter: ", size_, " ranks need an input of ", size_, " x the output (",
               out.numel(), " elements), got ", in.numel());
  check_same_place(in, out, "reduce_scatter");
  const bool nccl = device_engine(in, "reduce_scatter");
  count(traffic_.reduce_scatter_bytes,
        static_cast<double>(size_ - 1) / size_ * static_cast<double>(in.nbytes()));
  if (capturing() && !nccl) {
    return replayed("reduce_scatter",
                    [this, in, out, op]() mutable { return reduce_scatter(in, out, op); });
  }
  if (nccl) {
    return traced(nccl_->reduce_scatter(in, out, op), "reduce_scatter", in.nbytes());
  }
  auto work = mpi_work("reduce_scatter", {in, out});
  const Tensor from = work->staged(in, true, false), to = work->staged(out, false, true);
  const MPI_Datatype type = mpi_type(from, "reduce_scatter");
  mpi_type(to, "reduce_scatter");
  MPI_CHECK(MPI_Ireduce_scatter_block(from.data(), to.data(), static_cast<int>(out.numel()), type,
                                      mpi_op(op), comm_->comm, work->request()));
  return traced(work, "reduce_scatter", in.nbytes());
}

WorkPtr Communicator::all_gather(const Tensor& in, Tensor& out) {
  COURSE_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel() * size_,
               "all_gather: ", size_, " ranks need an output of ", size_, " x the input (",
               in.numel(), " elements), got ", out.numel());
  check_same_place(in, out, "all_gather");
  const bool nccl = device_engine(in, "all_gather");
  count(traffic_.all_gather_bytes,
        static_cast<double>(size_ - 1) / size_ * static_cast<double>(out.nbytes()));
  if (capturing() && !nccl) {
    return replayed("all_gather", [this, in, out]() mutable { return all_gather(in, out); });
  }
  if (nccl) {
    return traced(nccl_->all_gather(in, out), "all_gather", out.nbytes());
  }
  auto work = mpi_work("all_gather", {in, out});
  const Tensor from = work->staged(in, true, false), to = work->staged(out, false, true);
  const MPI_Datatype type = mpi_type(from, "all_gather", true);
  mpi_type(to, "all_gather", true);
  MPI_CHECK(MPI_Iallgather(from.data(), static_cast<int>(in.numel()), type, to.data(),
                           static_cast<int>(in.numel()), type, comm_->comm, work->request()));
  return traced(work, "all_gather", out.nbytes());
}

WorkPtr Communicator::exchange(const std::vector<PeerTransfer>& transfers) {
  if (transfers.empty()) return completed_work();
  const Tensor& first = transfers.front().tensor;
  const bool nccl = device_engine(first, "exchange");
  std::vector<Tensor> tensors;
  int64_t bytes = 0;
  for (const PeerTransfer& t : transfers) {
    const bool sending = t.kind == PeerTransfer::Kind::kSend;
    check_rank(t.peer, sending ? "send destination" : "receive source");
    check_same_place(first, t.tensor, "exchange");
    if (sending) count(traffic_.other_bytes, static_cast<double>(t.tensor.nbytes()));
    bytes += t.tensor.nbytes();
    tensors.push_back(t.tensor);
  }
  if (capturing() && !nccl) {
    return replayed("point-to-point exchange", [this, transfers] { return exchange(transfers); });
  }
  if (nccl) {
    return traced(nccl_->exchange(transfers), "exchange", bytes);
  }
  // As on NCCL's one stream, this group starts when the previous one is complete.
  if (last_group_) last_group_->wait();
  auto work = mpi_work("point-to-point exchange", std::move(tensors));
  for (const PeerTransfer& t : transfers) {
    const auto count = static_cast<int>(t.tensor.numel());
    if (t.kind == PeerTransfer::Kind::kRecv) {
      const Tensor buffer = work->staged(t.tensor, false, true);
      MPI_CHECK(MPI_Irecv(buffer.data(), count, mpi_type(buffer, "recv", true), t.peer, MPI_ANY_TAG,
                          comm_->comm, work->tagged_request(t.peer, t.tag)));
    } else {
      const Tensor buffer = work->staged(t.tensor, true, false);
      MPI_CHECK(MPI_Isend(buffer.data(), count, mpi_type(buffer, "send", true), t.peer, t.tag,
                          comm_->comm, work->request()));
    }
  }
  last_group_ = work;
  return traced(work, "exchange", bytes);
}

void Communicator::barrier() {
  check_not_capturing("a barrier");
  MpiWork work("barrier", rank_, timeout_, {});
  MPI_CHECK(MPI_Ibarrier(comm_->comm, work.request()));
  work.wait();
}

}  // namespace course::parallel
