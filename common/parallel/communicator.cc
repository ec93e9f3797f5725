// The MPI engine of the communicator.
#include "common/parallel/communicator.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "common/core/exit_codes.h"
#include "common/core/mpi_check.h"
#include "common/parallel/nccl_engine.h"
#include "common/parallel/traced_work.h"

namespace course::parallel {

struct MpiComm {
  MPI_Comm comm;
};

namespace {

// The MPI type of `t`'s elements. Operations that only move data (broadcast, all-gather, send,
// receive) move 16-bit floats as 16-bit words; reductions need an arithmetic type.
MPI_Datatype mpi_type(const Tensor& t, const char* op, bool moves_only = false) {
  COURSE_CHECK(t.defined() && t.device().is_cpu(), op, ": the MPI engine takes CPU tensors, got ",
               t.str());
  COURSE_CHECK(t.memory_format() == MemoryFormat::kContiguous, op, ": needs a contiguous tensor");
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

// Set when a wait timed out: the job cannot finish cleanly (MPI_Finalize would wait for the
// missing rank), so it is aborted at exit instead.
std::atomic<bool> timed_out{false};

// A non-blocking MPI request; it keeps the tensors it reads or writes alive until done.
class MpiWork : public Work {
 public:
  MpiWork(const char* op, const Communicator& comm, std::vector<Tensor> keep)
      : op_(op), rank_(comm.rank()), timeout_(comm.timeout()), keep_(std::move(keep)) {}
  MPI_Request* request() { return &request_; }

  bool test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    MPI_CHECK(MPI_Test(&request_, &done, MPI_STATUS_IGNORE));
    if (done) keep_.clear();
    return done;
  }

  void wait() override {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_);
    for (int polls = 0; !test(); ++polls) {
      if (Clock::now() > deadline) {
        timed_out = true;
        COURSE_FAIL(op_, " did not complete within ", timeout_, " s on rank ", rank_,
                    ": another rank died or stalled");
      }
      if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  ~MpiWork() override {
    if (request_ != MPI_REQUEST_NULL && !timed_out) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }

 private:
  const char* op_;
  int rank_;
  double timeout_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  std::vector<Tensor> keep_;
};

// GPU tensors go to the NCCL engine, CPU tensors to MPI.
bool on_gpu(const Tensor& t) { return t.defined() && t.device().is_cuda(); }

class CompletedWork : public Work {
 public:
  void wait() override {}
  bool test() override { return true; }
};

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (timed_out) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
}

// This rank's place among the ranks that share its node, and their number.
std::pair<int, int> node_rank_and_size(MPI_Comm comm) {
  MPI_Comm node;
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
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

WorkPtr completed_work() { return std::make_shared<CompletedWork>(); }

Communicator::Communicator(std::unique_ptr<MpiComm> comm, bool owned)
    : comm_(std::move(comm)), owned_(owned) {
  MPI_CHECK(MPI_Comm_set_errhandler(comm_->comm, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_->comm, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_->comm, &size_));
  std::tie(local_rank_, local_size_) = node_rank_and_size(comm_->comm);
}

void Communicator::set_timeout(double seconds) {
  COURSE_CHECK(seconds > 0, "the communication timeout must be positive, got ", seconds);
  timeout_ = seconds;
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
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      std::atexit(finalize_at_exit);
    }
    world.reset(new Communicator(std::make_unique<MpiComm>(MpiComm{MPI_COMM_WORLD}), false));
  });
  return world;
}

std::shared_ptr<Communicator> Communicator::split(int color, int key) const {
  COURSE_CHECK(color >= 0, "split colours must not be negative, got ", color);
  auto sub = std::make_unique<MpiComm>();
  MPI_CHECK(MPI_Comm_split(comm_->comm, color, key, &sub->comm));
  std::shared_ptr<Communicator> part(new Communicator(std::move(sub), true));
  part->timeout_ = timeout_;  // a stalled rank is found as fast in a sub-group
  return part;
}

void Communicator::use_gpu(Device device) {
  if (nccl_ && nccl_->device() == device) return;
  nccl_ = std::make_unique<NcclEngine>(rank_, size_, device, timeout_, [this](void* bytes, int n) {
    MPI_CHECK(MPI_Bcast(bytes, n, MPI_BYTE, 0, comm_->comm));
  });
}

NcclEngine& Communicator::gpu(const Tensor& t, bool create) {
  if (create) use_gpu(t.device());
  COURSE_CHECK(nccl_ && nccl_->device() == t.device(), "GPU send/recv on ", t.device().str(),
               " needs use_gpu(", t.device().str(), ") on every rank first");
  return *nccl_;
}

void Communicator::check_rank(int r, const char* what) const {
  COURSE_CHECK(r >= 0 && r < size_, what, " rank ", r, " is not in this communicator of ", size_);
}

void Communicator::count(double& kind, double bytes) {
  ++traffic_.collectives;
  kind += bytes;
  traffic_.bytes += bytes;
}

WorkPtr Communicator::allreduce(Tensor& t, ReduceOp op) {
  count(traffic_.allreduce_bytes, 2.0 * (size_ - 1) / size_ * static_cast<double>(t.nbytes()));
  if (on_gpu(t)) return traced(gpu(t, true).allreduce(t, op), "allreduce", t.nbytes());
  auto work = std::make_shared<MpiWork>("allreduce", *this, std::vector<Tensor>{t});
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, t.data(), static_cast<int>(t.numel()),
                           mpi_type(t, "allreduce"), mpi_op(op), comm_->comm, work->request()));
  return traced(work, "allreduce", t.nbytes());
}

WorkPtr Communicator::broadcast(Tensor& t, int root) {
  check_rank(root, "broadcast root");
  count(traffic_.other_bytes, static_cast<double>(t.nbytes()));
  if (on_gpu(t)) return traced(gpu(t, true).broadcast(t, root), "broadcast", t.nbytes());
  auto work = std::make_shared<MpiWork>("broadcast", *this, std::vector<Tensor>{t});
  MPI_CHECK(MPI_Ibcast(t.data(), static_cast<int>(t.numel()), mpi_type(t, "broadcast", true), root,
                       comm_->comm, work->request()));
  return traced(work, "broadcast", t.nbytes());
}

WorkPtr Communicator::reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) {
  COURSE_CHECK(out.dtype() == in.dtype() && in.numel() == out.numel() * size_,
               "reduce_scatter: ", size_, " ranks need an input of ", size_, " x the output (",
               out.numel(), " elements), got ", in.numel());
  count(traffic_.reduce_scatter_bytes,
        static_cast<double>(size_ - 1) / size_ * static_cast<double>(in.nbytes()));
  if (on_gpu(in))
    return traced(gpu(in, true).reduce_scatter(in, out, op), "reduce_scatter", in.nbytes());
  const MPI_Datatype type = mpi_type(in, "reduce_scatter");
  mpi_type(out, "reduce_scatter");
  auto work = std::make_shared<MpiWork>("reduce_scatter", *this, std::vector<Tensor>{in, out});
  MPI_CHECK(MPI_Ireduce_scatter_block(in.data(), out.data(), static_cast<int>(out.numel()), type,
                                      mpi_op(op), comm_->comm, work->request()));
  return traced(work, "reduce_scatter", in.nbytes());
}

WorkPtr Communicator::all_gather(const Tensor& in, Tensor& out) {
  COURSE_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel() * size_,
               "all_gather: ", size_, " ranks need an output of ", size_, " x the input (",
               in.numel(), " elements), got ", out.numel());
  count(traffic_.all_gather_bytes,
        static_cast<double>(size_ - 1) / size_ * static_cast<double>(out.nbytes()));
  if (on_gpu(in)) return traced(gpu(in, true).all_gather(in, out), "all_gather", out.nbytes());
  const MPI_Datatype type = mpi_type(in, "all_gather", true);
  mpi_type(out, "all_gather", true);
  auto work = std::make_shared<MpiWork>("all_gather", *this, std::vector<Tensor>{in, out});
  MPI_CHECK(MPI_Iallgather(in.data(), static_cast<int>(in.numel()), type, out.data(),
                           static_cast<int>(in.numel()), type, comm_->comm, work->request()));
  return traced(work, "all_gather", out.nbytes());
}

WorkPtr Communicator::send(const Tensor& t, int dst, int tag) {
  check_rank(dst, "send destination");
  count(traffic_.other_bytes, static_cast<double>(t.nbytes()));
  if (on_gpu(t)) return traced(gpu(t, false).send(t, dst), "send", t.nbytes());
  auto work = std::make_shared<MpiWork>("send", *this, std::vector<Tensor>{t});
  MPI_CHECK(MPI_Isend(t.data(), static_cast<int>(t.numel()), mpi_type(t, "send", true), dst, tag,
                      comm_->comm, work->request()));
  return traced(work, "send", t.nbytes());
}

WorkPtr Communicator::recv(Tensor& t, int src, int tag) {
  check_rank(src, "receive source");
  if (on_gpu(t)) return traced(gpu(t, false).recv(t, src), "recv", t.nbytes());
  auto work = std::make_shared<MpiWork>("recv", *this, std::vector<Tensor>{t});
  MPI_CHECK(MPI_Irecv(t.data(), static_cast<int>(t.numel()), mpi_type(t, "recv", true), src, tag,
                      comm_->comm, work->request()));
  return traced(work, "recv", t.nbytes());
}

void Communicator::barrier() {
  MpiWork work("barrier", *this, {});
  MPI_CHECK(MPI_Ibarrier(comm_->comm, work.request()));
  work.wait();
}

}  // namespace course::parallel
