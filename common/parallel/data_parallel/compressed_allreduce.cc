// The compressed all-reduce: worker compression, all-to-all, server compression, all-gather.
#include "common/parallel/data_parallel/compressed_allreduce.h"

#include <cmath>
#include <numeric>

#include "common/kernels/elementwise.h"

namespace course::parallel {

int64_t padded_tensor_numel(int64_t numel, int ranks) {
  const int64_t multiple = static_cast<int64_t>(ranks) * std::lcm(ranks, 8);
  return (numel + multiple - 1) / multiple * multiple;
}

CompressedAllreduce::CompressedAllreduce(const std::vector<int64_t>& numels,
                                         std::shared_ptr<Communicator> comm, Device device,
                                         WorkerCompression worker)
    : comm_(std::move(comm)), worker_(std::move(worker)) {
  COURSE_CHECK(!worker_ || device.is_cpu(),
               "the workers' own compression (your onebit_compress) runs on the CPU, not on ",
               device.str(), ": leave --device cpu");
  const int ranks = comm_->size();
  std::vector<int64_t> padded, chunks;
  for (const int64_t numel : numels) {
    COURSE_CHECK(numel > 0, "a compressed all-reduce needs values, got a tensor of ", numel);
    offsets_.push_back(padded_numel_);
    padded.push_back(padded_tensor_numel(numel, ranks));
    chunks.push_back(padded.back() / ranks);
    padded_numel_ += padded.back();
  }
  worker_plan_ = segment_plan(padded, ranks, device, numels);
  server_plan_ = segment_plan(chunks, 1, device);
  const int64_t tensors = static_cast<int64_t>(numels.size()), chunk = padded_numel_ / ranks;
  worker_error_ = zeros({padded_numel_}, DType::kF32, device);
  server_error_ = zeros({chunk}, DType::kF32, device);
  bits_ = Tensor::empty({padded_numel_ / 8}, DType::kU8, device);
  scales_ = Tensor::empty({tensors}, DType::kF32, device);
  received_bits_ = Tensor::empty({padded_numel_ / 8}, DType::kU8, device);
  received_scales_ = Tensor::empty({ranks * tensors}, DType::kF32, device);
  server_sum_ = Tensor::empty({chunk}, DType::kF32, device);
  server_bits_ = Tensor::empty({chunk / 8}, DType::kU8, device);
  server_scales_ = Tensor::empty({tensors}, DType::kF32, device);
  gathered_bits_ = Tensor::empty({padded_numel_ / 8}, DType::kU8, device);
  gathered_scales_ = Tensor::empty({ranks * tensors}, DType::kF32, device);
}

// All-to-all of the signs (block r of bits_ to rank r, this rank's own by a copy), all-gather of
// the worker scales.
void CompressedAllreduce::exchange_worker_signs() {
  const int rank = comm_->rank(), ranks = comm_->size();
  const int64_t block = padded_numel_ / 8 / ranks;
  const auto block_of = [block](const Tensor& t, int r) {
    return t.slice(r * block, (r + 1) * block);
  };
  std::vector<PeerTransfer> transfers;
  for (int peer = 0; peer < ranks; ++peer) {
    if (peer == rank) continue;
    transfers.push_back(send_to(block_of(bits_, peer), peer, 0));
    transfers.push_back(receive_from(block_of(received_bits_, peer), peer, 0));
  }
  Tensor own = block_of(received_bits_, rank);
  copy_(own, block_of(bits_, rank));
  comm_->exchange(transfers)->wait();
  comm_->all_gather(scales_, received_scales_)->wait();
}

// Each tensor through the worker's compression, what it sends then packed as the library packs
// its own (signs and the root mean square of +-scale, with no error left).
void CompressedAllreduce::compress_with_worker(const Tensor& x) {
  Tensor sent = Tensor::empty({padded_numel_}, DType::kF32, x.device());
  for (size_t t = 0; t < offsets_.size(); ++t) {
    const int64_t begin = offsets_[t];
    const int64_t end = t + 1 < offsets_.size() ? offsets_[t + 1] : padded_numel_;
    Tensor error = worker_error_.slice(begin, end);
    const Tensor out = worker_(x.slice(begin, end), error);
    COURSE_CHECK(out.dtype() == DType::kF32 && out.numel() == end - begin,
                 "onebit_compress must return f32 values of its input's size, ", end - begin,
                 ", got ", out.str());
    const std::vector<float> values = out.to_vector<float>();
    for (size_t i = 1; i < values.size(); ++i) {
      COURSE_CHECK(std::fabs(values[i]) == std::fabs(values[0]),
                   "onebit_compress must send one scale for the tensor, with each sign: element ",
                   i, " is ", values[i], ", element 0 ", values[0]);
    }
    Tensor into = sent.slice(begin, end);
    copy_(into, out);
  }
  Tensor no_error = zeros({padded_numel_}, DType::kF32, x.device());
  compress_segments_(sent, no_error, bits_, scales_, worker_plan_);
}

void CompressedAllreduce::average_(Tensor& x) {
  COURSE_CHECK(x.dtype() == DType::kF32 && x.numel() == padded_numel_ &&
                   x.device() == worker_error_.device(),
               "compressed all-reduce: needs (", padded_numel_, ",) f32 on ",
               worker_error_.device().str(), ", got ", x.str());
  const int ranks = comm_->size();
  if (ranks == 1) return;  // DeepSpeed compresses only over several ranks
  if (worker_) {
    compress_with_worker(x);
  } else {
    compress_segments_(x, worker_error_, bits_, scales_, worker_plan_);
  }
  exchange_worker_signs();
  average_compressed(received_bits_, received_scales_, server_sum_, server_plan_, ranks);
  compress_segments_(server_sum_, server_error_, server_bits_, server_scales_, server_plan_);
  const WorkPtr signs = comm_->all_gather(server_bits_, gathered_bits_);
  const WorkPtr scales = comm_->all_gather(server_scales_, gathered_scales_);
  signs->wait();
  scales->wait();
  expand_segments(gathered_bits_, gathered_scales_, x, worker_plan_);
}

}  // namespace course::parallel
