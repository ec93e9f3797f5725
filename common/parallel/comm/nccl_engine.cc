// NCCL collectives on a communication stream, with timed waits.
#include "common/parallel/comm/nccl_engine.h"

#if COURSE_WITH_CUDA
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "common/tensor/capture.h"
#include "common/tensor/cuda_check.h"
#endif

namespace course::parallel {

#if COURSE_WITH_CUDA

namespace {

ncclDataType_t nccl_type(const Tensor& t, Device device, const char* op) {
  COURSE_CHECK(t.defined() && t.device() == device, op, ": the NCCL engine of ", device.str(),
               " got ", t.str());
  switch (t.dtype()) {
    case DType::kF32:
      return ncclFloat32;
    case DType::kF16:
      return ncclFloat16;
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kI32:
      return ncclInt32;
    case DType::kI64:
      return ncclInt64;
    case DType::kU8:
      return ncclUint8;
    case DType::kI8:
      return ncclInt8;
  }
  COURSE_FAIL(op, ": no NCCL type for ", dtype_name(t.dtype()));
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kSum:
      break;
  }
  return ncclSum;
}

}  // namespace

// A collective in flight: its end event, when it must be done by, and the tensors it reads or
// writes (kept alive until it is done: the caching allocator does not follow NCCL's stream).
// Shared by its Work and the watchdog; the event goes with the last of them (a Work may wait on
// it after the watchdog retired it).
struct PendingCollective {
  PendingCollective(cudaStream_t stream, const char* what) : op(what) {
    CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(done, stream));
  }
  ~PendingCollective() { cudaEventDestroy(done); }
  PendingCollective(const PendingCollective&) = delete;
  PendingCollective& operator=(const PendingCollective&) = delete;

  cudaEvent_t done = nullptr;
  const char* op;
  std::chrono::steady_clock::time_point deadline;
  std::vector<Tensor> keep;
};

// The communicator, its stream, and the watchdog that ends what outlives the timeout (the host
// never polls a collective itself: Work::wait() is stream-ordered).
struct NcclEngine::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
  int rank = 0;
  double timeout = 300;

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::shared_ptr<PendingCollective>> pending;
  std::string failure;  // set when the communicator was aborted
  bool aborted = false, stopping = false;
  std::thread watchdog;

  // Throws the failure that aborted the communicator, if any.
  void check() {
    std::lock_guard lock(mutex);
    COURSE_CHECK(failure.empty(), failure);
  }

  // A call's result on this non-blocking communicator: ncclInProgress means NCCL is still
  // enqueuing it, and nothing else may be called on the communicator until that is done.
  void settle(ncclResult_t result, const std::string& what) {
    COURSE_CHECK(result == ncclSuccess || result == ncclInProgress, what,
                 " failed: ", ncclGetErrorString(result));
    if (result == ncclSuccess) return;
    poll(what, [this] {
      ncclResult_t state = ncclInProgress;
      NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
      return state == ncclSuccess;
    });
  }

  // Polls `done` on the host until it returns true, the communicator reports an error, or the
  // timeout (then the communicator is aborted): a call's enqueueing, a Work's synchronize().
  template <typename Done>
  void poll(const std::string& what, Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    while (!done()) {
      check();
      ncclResult_t async = ncclSuccess;
      NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
      COURSE_CHECK(async == ncclSuccess || async == ncclInProgress, what, " (NCCL) on rank ", rank,
                   ": ", ncclGetErrorString(async));
      if (std::chrono::steady_clock::now() > deadline) {
        abort(detail::concat(what, " (NCCL) did not complete within ", timeout, " s on rank ", rank,
                             ": another rank died or stalled"));
        check();
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  // Records `what` and aborts the communicator, once: every rank's operations on it end (its
  // kernels too, so a stream waiting for them goes on), and its next call throws `what`.
  void abort(const std::string& what) {
    {
      std::lock_guard lock(mutex);
      if (aborted) return;
      aborted = true;
      failure = what;
    }
    std::fprintf(stderr, "error: %s\n", what.c_str());
    ncclCommAbort(comm);
  }

  void watch(std::shared_ptr<PendingCollective> collective) {
    std::lock_guard lock(mutex);
    pending.push_back(std::move(collective));
    wake.notify_one();
  }

  // The watchdog's loop (a thread per communicator, as PyTorch's): retires the collectives that
  // are done, oldest first, and aborts the communicator at the first one past its deadline.
  void run_watchdog() {
    cudaSetDevice(device);
    std::unique_lock lock(mutex);
    while (!stopping) {
      if (pending.empty()) {
        wake.wait(lock, [this] { return stopping || !pending.empty(); });
        continue;
      }
      const std::shared_ptr<PendingCollective> oldest = pending.front();
      lock.unlock();
      const cudaError_t status = cudaEventQuery(oldest->done);
      const bool running = status == cudaErrorNotReady;
      if (running && std::chrono::steady_clock::now() > oldest->deadline) {
        abort(detail::concat(oldest->op, " (NCCL) did not complete within ", timeout, " s on rank ",
                             rank, ": another rank died or stalled"));
      } else if (running) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      lock.lock();
      if (!running || aborted) pending.pop_front();
    }
  }
};

namespace {

// The work queued so far on `stream` as one collective `op`, given to the watchdog, which ends it
// when it outlives the timeout.
std::shared_ptr<PendingCollective> watch_stream(NcclEngine::State& state, cudaStream_t stream,
                                                const char* op, std::vector<Tensor> keep) {
  auto collective = std::make_shared<PendingCollective>(stream, op);
  collective->deadline = std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(state.timeout));
  collective->keep = std::move(keep);
  state.watch(collective);
  return collective;
}

// A collective in flight. Posted during a graph capture (capture.h) it is a node of the graph:
// its end event belongs to the capture, which the host may not query, so the watchdog watches
// each replay instead (the graph queues that watch after it) and the graph keeps the tensors.
class NcclWork : public Work {
 public:
  NcclWork(std::shared_ptr<NcclEngine::State> state, const char* op, std::vector<Tensor> keep)
      : state_(std::move(state)) {
    if (!captured_) {
      collective_ = watch_stream(*state_, state_->stream, op, std::move(keep));
      return;
    }
    collective_ = std::make_shared<PendingCollective>(state_->stream, op);
    detail::after_each_replay(state_.get(), [state = state_] {
      watch_stream(*state, static_cast<cudaStream_t>(current_cuda_stream()),
                   "a replayed graph's collectives", {});
    });
  }

  bool test() override {
    state_->check();
    if (captured_) return true;  // done in the graph's order
    const cudaError_t status = cudaEventQuery(collective_->done);
    if (status == cudaErrorNotReady) return false;
    CUDA_CHECK(status);
    return true;
  }
  void wait() override {
    state_->check();
    // Later work on the compute stream sees the result; the host goes on.
    CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(current_cuda_stream()),
                                   collective_->done, 0));
  }
  void synchronize() override {
    check_not_capturing("a collective's host wait");
    note_host_synchronization(Device::cuda(state_->device));
    state_->poll(collective_->op, [this] { return test(); });
    wait();
  }

 private:
  std::shared_ptr<NcclEngine::State> state_;
  const bool captured_ = capturing();
  std::shared_ptr<PendingCollective> collective_;
};

// Orders the communication stream after the work queued so far on the compute stream, once the
// communicator is known not to have failed.
void after_compute_stream(NcclEngine::State& state) {
  state.check();
  cudaEvent_t ready;
  CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(ready, static_cast<cudaStream_t>(current_cuda_stream())));
  CUDA_CHECK(cudaStreamWaitEvent(state.stream, ready, 0));
  CUDA_CHECK(cudaEventDestroy(ready));
}

}  // namespace

NcclEngine::NcclEngine(int rank, int size, Device device, double timeout_seconds,
                       const std::function<void(void*, int)>& broadcast_id)
    : state_(std::make_shared<State>()), device_(device) {
  COURSE_CHECK(device.is_cuda(), "the NCCL engine needs a GPU device, got ", device.str());
  require_device(device);
  set_current_device(device);
  state_->device = device.index;
  state_->rank = rank;
  state_->timeout = timeout_seconds;
  ncclUniqueId id{};
  if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  broadcast_id(&id, static_cast<int>(sizeof(id)));
  // Non-blocking initialisation: a rank that never joins ends in the timeout, not a hang.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  state_->settle(ncclCommInitRankConfig(&state_->comm, size, id, rank, &config),
                 "ncclCommInitRankConfig");
  CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
  state_->watchdog = std::thread([state = state_.get()] { state->run_watchdog(); });
}

NcclEngine::~NcclEngine() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    state_->wake.notify_one();
  }
  state_->watchdog.join();
  // The collectives still queued are waited for under the timeout before the communicator goes
  // (an aborted one is never destroyed: its ranks are not all there to agree).
  if (!state_->aborted) {
    try {
      state_->poll("the collectives before ncclCommDestroy",
                   [this] { return cudaStreamQuery(state_->stream) != cudaErrorNotReady; });
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
  }
  if (!state_->aborted) ncclCommDestroy(state_->comm);
  cudaStreamDestroy(state_->stream);
}

WorkPtr NcclEngine::allreduce(Tensor& t, ReduceOp op) {
  const ncclDataType_t type = nccl_type(t, device_, "allreduce");
  after_compute_stream(*state_);
  state_->settle(
      ncclAllReduce(t.data(), t.data(), t.numel(), type, nccl_op(op), state_->comm, state_->stream),
      "ncclAllReduce");
  return std::make_shared<NcclWork>(state_, "allreduce", std::vector<Tensor>{t});
}

WorkPtr NcclEngine::broadcast(Tensor& t, int root) {
  const ncclDataType_t type = nccl_type(t, device_, "broadcast");
  after_compute_stream(*state_);
  state_->settle(
      ncclBroadcast(t.data(), t.data(), t.numel(), type, root, state_->comm, state_->stream),
      "ncclBroadcast");
  return std::make_shared<NcclWork>(state_, "broadcast", std::vector<Tensor>{t});
}

WorkPtr NcclEngine::reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) {
  const ncclDataType_t type = nccl_type(in, device_, "reduce_scatter");
  nccl_type(out, device_, "reduce_scatter");
  after_compute_stream(*state_);
  state_->settle(ncclReduceScatter(in.data(), out.data(), out.numel(), type, nccl_op(op),
                                   state_->comm, state_->stream),
                 "ncclReduceScatter");
  return std::make_shared<NcclWork>(state_, "reduce_scatter", std::vector<Tensor>{in, out});
}

WorkPtr NcclEngine::all_gather(const Tensor& in, Tensor& out) {
  const ncclDataType_t type = nccl_type(in, device_, "all_gather");
  nccl_type(out, device_, "all_gather");
  after_compute_stream(*state_);
  state_->settle(
      ncclAllGather(in.data(), out.data(), in.numel(), type, state_->comm, state_->stream),
      "ncclAllGather");
  return std::make_shared<NcclWork>(state_, "all_gather", std::vector<Tensor>{in, out});
}

WorkPtr NcclEngine::exchange(const std::vector<PeerTransfer>& transfers) {
  after_compute_stream(*state_);
  std::vector<Tensor> keep;
  NCCL_CHECK(ncclGroupStart());
  for (const PeerTransfer& t : transfers) {
    void* data = t.tensor.data();
    if (t.kind == PeerTransfer::Kind::kSend) {
      NCCL_CHECK(ncclSend(data, t.tensor.numel(), nccl_type(t.tensor, device_, "send"), t.peer,
                          state_->comm, state_->stream));
    } else {
      NCCL_CHECK(ncclRecv(data, t.tensor.numel(), nccl_type(t.tensor, device_, "recv"), t.peer,
                          state_->comm, state_->stream));
    }
    keep.push_back(t.tensor);
  }
  state_->settle(ncclGroupEnd(), "ncclGroupEnd");
  return std::make_shared<NcclWork>(state_, "point-to-point exchange", std::move(keep));
}

#else  // built without CUDA: GPU tensors cannot exist, and neither can this engine

struct NcclEngine::State {};

NcclEngine::NcclEngine(int, int, Device device, double, const std::function<void(void*, int)>&)
    : device_(device) {
  COURSE_FAIL("NCCL needs a build with CUDA (this one has none) for ", device.str());
}
NcclEngine::~NcclEngine() = default;
WorkPtr NcclEngine::allreduce(Tensor&, ReduceOp) { return completed_work(); }
WorkPtr NcclEngine::broadcast(Tensor&, int) { return completed_work(); }
WorkPtr NcclEngine::reduce_scatter(const Tensor&, Tensor&, ReduceOp) { return completed_work(); }
WorkPtr NcclEngine::all_gather(const Tensor&, Tensor&) { return completed_work(); }
WorkPtr NcclEngine::exchange(const std::vector<PeerTransfer>&) { return completed_work(); }

#endif

}  // namespace course::parallel
