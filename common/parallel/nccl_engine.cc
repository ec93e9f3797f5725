// NCCL collectives on a communication stream, with timed waits.
#include "common/parallel/nccl_engine.h"

#if COURSE_WITH_CUDA
#include <chrono>
#include <thread>

#include "common/tensor/cuda_check.h"
#endif

namespace course::parallel {

#if COURSE_WITH_CUDA

namespace {

ncclDataType_t nccl_type(const Tensor& t, Device device, const char* op) {
  COURSE_CHECK(t.defined() && t.device() == device, op, ": the NCCL engine of ", device.str(),
               " got ", t.str());
  COURSE_CHECK(t.memory_format() == MemoryFormat::kContiguous, op, ": needs a contiguous tensor");
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
    if (!state_->aborted) cudaEventSynchronize(done_);
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
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(state_->timeout);
    while (!test()) {
      ncclResult_t async = ncclSuccess;
      NCCL_CHECK(ncclCommGetAsyncError(state_->comm, &async));
      if (async != ncclSuccess || std::chrono::steady_clock::now() > deadline) {
        state_->aborted = true;
        ncclCommAbort(state_->comm);
        COURSE_FAIL(
            op_, " (NCCL) did not complete within ", state_->timeout, " s on rank ", state_->rank,
            ": ",
            async != ncclSuccess ? ncclGetErrorString(async) : "another rank died or stalled");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
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
  ncclUniqueId id{};
  if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  broadcast_id(&id, static_cast<int>(sizeof(id)));
  NCCL_CHECK(ncclCommInitRank(&state_->comm, size, id, rank));
  CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
  state_->rank = rank;
  state_->timeout = timeout_seconds;
}

NcclEngine::~NcclEngine() {
  if (!state_->aborted) ncclCommDestroy(state_->comm);
  cudaStreamDestroy(state_->stream);
}

WorkPtr NcclEngine::allreduce(Tensor& t, ReduceOp op) {
  const ncclDataType_t type = nccl_type(t, device_, "allreduce");
  after_default_stream(state_->stream);
  NCCL_CHECK(ncclAllReduce(t.data(), t.data(), t.numel(), type, nccl_op(op), state_->comm,
                           state_->stream));
  return std::make_shared<NcclWork>(state_, "allreduce", std::vector<Tensor>{t});
}

WorkPtr NcclEngine::broadcast(Tensor& t, int root) {
  const ncclDataType_t type = nccl_type(t, device_, "broadcast");
  after_default_stream(state_->stream);
  NCCL_CHECK(
      ncclBroadcast(t.data(), t.data(), t.numel(), type, root, state_->comm, state_->stream));
  return std::make_shared<NcclWork>(state_, "broadcast", std::vector<Tensor>{t});
}

WorkPtr NcclEngine::reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) {
  const ncclDataType_t type = nccl_type(in, device_, "reduce_scatter");
  nccl_type(out, device_, "reduce_scatter");
  after_default_stream(state_->stream);
  NCCL_CHECK(ncclReduceScatter(in.data(), out.data(), out.numel(), type, nccl_op(op), state_->comm,
                               state_->stream));
  return std::make_shared<NcclWork>(state_, "reduce_scatter", std::vector<Tensor>{in, out});
}

WorkPtr NcclEngine::all_gather(const Tensor& in, Tensor& out) {
  const ncclDataType_t type = nccl_type(in, device_, "all_gather");
  nccl_type(out, device_, "all_gather");
  after_default_stream(state_->stream);
  NCCL_CHECK(ncclAllGather(in.data(), out.data(), in.numel(), type, state_->comm, state_->stream));
  return std::make_shared<NcclWork>(state_, "all_gather", std::vector<Tensor>{in, out});
}

WorkPtr NcclEngine::send(const Tensor& t, int peer) {
  const ncclDataType_t type = nccl_type(t, device_, "send");
  after_default_stream(state_->stream);
  NCCL_CHECK(ncclSend(t.data(), t.numel(), type, peer, state_->comm, state_->stream));
  return std::make_shared<NcclWork>(state_, "send", std::vector<Tensor>{t});
}

WorkPtr NcclEngine::recv(Tensor& t, int peer) {
  const ncclDataType_t type = nccl_type(t, device_, "recv");
  after_default_stream(state_->stream);
  NCCL_CHECK(ncclRecv(t.data(), t.numel(), type, peer, state_->comm, state_->stream));
  return std::make_shared<NcclWork>(state_, "recv", std::vector<Tensor>{t});
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
WorkPtr NcclEngine::send(const Tensor&, int) { return completed_work(); }
WorkPtr NcclEngine::recv(Tensor&, int) { return completed_work(); }

#endif

}  // namespace course::parallel
