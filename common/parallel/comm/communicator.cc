// The MPI engine of the communicator.
#include "common/parallel/comm/communicator.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "common/core/exit_codes.h"
#include "common/core/launch_rank.h"
#include "common/core/mpi_check.h"
#include "common/parallel/comm/mpi_work.h"
#include "common/parallel/comm/nccl_engine.h"
#include "common/parallel/comm/ring_allreduce.h"
#include "common/parallel/comm/traced_work.h"
#include "common/tensor/capture.h"

namespace course::parallel {

struct MpiComm {
  MPI_Comm comm;
};

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

Communicator* world_instance = nullptr;

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Every NCCL communicator of the world goes before MPI does (its destruction may talk to the
  // other ranks); those of sub-communicators went with them, when the lab's objects did.
  if (world_instance != nullptr) world_instance->release_device();
  if (mpi_timed_out) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
}

// The ranks of `comm` that share this rank's node (the caller frees it).
MPI_Comm node_of(MPI_Comm comm) {
  MPI_Comm node;
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  return node;
}

// This rank's place among the ranks that share its node, and their number.
std::pair<int, int> node_rank_and_size(MPI_Comm comm) {
  MPI_Comm node = node_of(comm);
  int local = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(node, &local));
  MPI_CHECK(MPI_Comm_size(node, &size));
  MPI_CHECK(MPI_Comm_free(&node));
  return {local, size};
}

}  // namespace

int finish_job(int code) {
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  // Every rank stops together when preempted (the decision is all-reduced), and ends cleanly.
  if (code == kExitDone || code == kExitPreempted || !initialized || finalized) return code;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  return code;
}

Communicator::Communicator(std::unique_ptr<MpiComm> comm, bool owned, bool with_ring)
    : comm_(std::move(comm)), owned_(owned) {
  MPI_CHECK(MPI_Comm_set_errhandler(comm_->comm, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_->comm, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_->comm, &size_));
  std::tie(local_rank_, local_size_) = node_rank_and_size(comm_->comm);
  if (with_ring && size_ == 2) {
    auto ring = std::make_unique<MpiComm>();
    MPI_CHECK(MPI_Comm_dup(comm_->comm, &ring->comm));
    ring_.reset(new Communicator(std::move(ring), true, false));
  }
}

void Communicator::set_timeout(double seconds) {
  COURSE_CHECK(seconds > 0, "the communication timeout must be positive, got ", seconds);
  timeout_ = seconds;
  if (ring_) ring_->set_timeout(seconds);
}

Communicator::~Communicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) MPI_Comm_free(&comm_->comm);
}

std::shared_ptr<Communicator> Communicator::world() {
  static std::once_flag once;
  static std::shared_ptr<Communicator> world;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      // A process started without mpirun or srun runs as an isolated singleton. Open MPI 4
      // would otherwise start a local daemon whose PMIx server tries munge first: 2-5 s lost
      // per run where munge is installed but its daemon not running (as after ./setup.sh,
      // which installs it for Slurm). A launched process never reads this setting, and one the
      // user set is kept.
      setenv("OMPI_MCA_ess_singleton_isolated", "1", /*overwrite=*/0);
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      std::atexit(finalize_at_exit);
    }
    world.reset(new Communicator(std::make_unique<MpiComm>(MpiComm{MPI_COMM_WORLD}), false));
    world_instance = world.get();
  });
  return world;
}

std::shared_ptr<Communicator> Communicator::split(int color, int key) const {
  COURSE_CHECK(color >= 0, "split colours must not be negative, got ", color);
  auto sub = std::make_unique<MpiComm>();
  MPI_CHECK(MPI_Comm_split(comm_->comm, color, key, &sub->comm));
  std::shared_ptr<Communicator> part(new Communicator(std::move(sub), true));
  part->set_timeout(timeout_);  // a stalled rank is found as fast in a sub-group
  // The rows of a device grid are device communicators too.
  if (device_.is_accelerator()) part->use_device(device_);
  return part;
}

std::shared_ptr<MpiWork> Communicator::mpi_work(const char* op, std::vector<Tensor> keep) const {
  return std::make_shared<MpiWork>(op, rank_, timeout_, std::move(keep), staged_);
}

bool Communicator::ranks_share(Device device) const {
  MPI_Comm node = node_of(comm_->comm);
  int node_size = 1;
  MPI_CHECK(MPI_Comm_size(node, &node_size));
  std::vector<int> devices(static_cast<size_t>(node_size));
  int mine = static_cast<int>(device.kind) * 1024 + device.index;
  {
    MpiWork gather("the ranks' devices", rank_, timeout_, {});
    MPI_CHECK(
        MPI_Iallgather(&mine, 1, MPI_INT, devices.data(), 1, MPI_INT, node, gather.request()));
    gather.wait();
  }
  MPI_CHECK(MPI_Comm_free(&node));
  std::sort(devices.begin(), devices.end());
  int shared = std::adjacent_find(devices.begin(), devices.end()) != devices.end();
  MpiWork agree("the ranks' agreement on sharing devices", rank_, timeout_, {});
  MPI_CHECK(
      MPI_Iallreduce(MPI_IN_PLACE, &shared, 1, MPI_INT, MPI_LOR, comm_->comm, agree.request()));
  agree.wait();
  return shared != 0;
}

void Communicator::use_device(Device device) {
  COURSE_CHECK(device.is_accelerator(), "use_device(", device.str(),
               "): CPU tensors always go to the MPI engine");
  if (device_ == device) return;
  require_device(device);
  nccl_.reset();
  staged_ = ranks_share(device);
  if (staged_) {
    static std::once_flag said;
    if (rank_ == 0) {
      std::call_once(said, [&] {
        std::fprintf(stderr,
                     "note: ranks of one node share %s: their collectives go through MPI, staged "
                     "through pinned host memory (NCCL needs a device per rank)\n",
                     device.str().c_str());
      });
    }
  } else if (device.is_cuda()) {
    nccl_ =
        std::make_unique<NcclEngine>(rank_, size_, device, timeout_, [this](void* bytes, int n) {
          MpiWork work("the NCCL unique id's broadcast", rank_, timeout_, {});
          MPI_CHECK(MPI_Ibcast(bytes, n, MPI_BYTE, 0, comm_->comm, work.request()));
          work.wait();
        });
  }
  device_ = device;
}

void Communicator::release_device() {
  nccl_.reset();
  device_ = Device::cpu();
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
