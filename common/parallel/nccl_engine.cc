// NCCL collectives on a communication stream, with timed waits.
#include "common/parallel/nccl_engine.h"

#if COURSE_WITH_CUDA
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

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

struct NcclEngine::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int rank = 0;
  double timeout = 300;
  bool aborted = false;

  // Aborts the communicator (every rank's operations on it end) and throws `what`.
  [[noreturn]] void abort(const std::string& what) {
    aborted = true;
    ncclCommAbort(comm);
    COURSE_FAIL(what, " (NCCL) did not complete within ", timeout, " s on rank ", rank,
                ": another rank died or stalled");
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

  // Polls `done` until it returns true, the communicator reports an error, or the timeout.
  template <typename Done>
  void poll(const std::string& what, Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    while (!done()) {
      ncclResult_t async = ncclSuccess;
      NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
      COURSE_CHECK(async == ncclSuccess || async == ncclInProgress, what, " (NCCL) on rank ", rank,
                   ": ", ncclGetErrorString(async));
      if (std::chrono::steady_clock::now() > deadline) abort(what);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
};

namespace {

class NcclWork : public Work {
 public:
  NcclWork(std::shared_ptr<NcclEngine::State> state, const char* op, std::vector<Tensor> keep)
      : state_(std::move(state)), op_(op), keep_(std::move(keep)) {
    CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(done_, state_->stream));
  }
  ~NcclWork() override {
    // A Work dropped unwaited is still waited for, under the timeout (never in a destructor's
    // unbounded cudaEventSynchronize).
    if (!state_->aborted) {
      try {
        wait();
      } catch (const Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
      }
    }
    cudaEventDestroy(done_);
  }
  bool test() override {
    const cudaError_t status = cudaEventQuery(done_);
    if (status == cudaErrorNotReady) return false;
    CUDA_CHECK(status);
    keep_.clear();
    return true;
  }
  void wait() override {
    state_->poll(op_, [this] { return test(); });
    // Later work on the default stream sees the result.
    CUDA_CHECK(cudaStreamWaitEvent(nullptr, done_, 0));
  }

 private:
  std::shared_ptr<NcclEngine::State> state_;
  const char* op_;
  std::vector<Tensor> keep_;
  cudaEvent_t done_ = nullptr;
};

// Orders the communication stream after the work queued so far on the default stream.
void after_default_stream(cudaStream_t stream) {
  cudaEvent_t ready;
  CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(ready, nullptr));
  CUDA_CHECK(cudaStreamWaitEvent(stream, ready, 0));
  CUDA_CHECK(cudaEventDestroy(ready));
}

}  // namespace

NcclEngine::NcclEngine(int rank, int size, Device device, double timeout_seconds,
                       const std::function<void(void*, int)>& broadcast_id)
    : state_(std::make_shared<State>()), device_(device) {
  COURSE_CHECK(device.is_cuda(), "the NCCL engine needs a GPU device, got ", device.str());
  require_device(device);
  set_current_device(device);
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
}

NcclEngine::~NcclEngine() {
  if (!state_->aborted) ncclCommDestroy(state_->comm);
  cudaStreamDestroy(state_->stream);
}

WorkPtr NcclEngine::allreduce(Tensor& t, ReduceOp op) {
  const ncclDataType_t type = nccl_type(t, device_, "allreduce");
  after_default_stream(state_->stream);
  state_->settle(
      ncclAllReduce(t.data(), t.data(), t.numel(), type, nccl_op(op), state_->comm, state_->stream),
      "ncclAllReduce");
  return std::make_shared<NcclWork>(state_, "allreduce", std::vector<Tensor>{t});
}

WorkPtr NcclEngine::broadcast(Tensor& t, int root) {
  const ncclDataType_t type = nccl_type(t, device_, "broadcast");
  after_default_stream(state_->stream);
  state_->settle(
      ncclBroadcast(t.data(), t.data(), t.numel(), type, root, state_->comm, state_->stream),
      "ncclBroadcast");
  return std::make_shared<NcclWork>(state_, "broadcast", std::vector<Tensor>{t});
}

WorkPtr NcclEngine::reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) {
  const ncclDataType_t type = nccl_type(in, device_, "reduce_scatter");
  nccl_type(out, device_, "reduce_scatter");
  after_default_stream(state_->stream);
  state_->settle(ncclReduceScatter(in.data(), out.data(), out.numel(), type, nccl_op(op),
                                   state_->comm, state_->stream),
                 "ncclReduceScatter");
  return std::make_shared<NcclWork>(state_, "reduce_scatter", std::vector<Tensor>{in, out});
}

WorkPtr NcclEngine::all_gather(const Tensor& in, Tensor& out) {
  const ncclDataType_t type = nccl_type(in, device_, "all_gather");
  nccl_type(out, device_, "all_gather");
  after_default_stream(state_->stream);
  state_->settle(
      ncclAllGather(in.data(), out.data(), in.numel(), type, state_->comm, state_->stream),
      "ncclAllGather");
  return std::make_shared<NcclWork>(state_, "all_gather", std::vector<Tensor>{in, out});
}

WorkPtr NcclEngine::exchange(const std::vector<PeerTransfer>& transfers) {
  after_default_stream(state_->stream);
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
