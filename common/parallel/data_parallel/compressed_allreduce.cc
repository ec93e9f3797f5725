// The compressed all-reduce: worker compression, all-to-all, server compression, all-gather.
#include "common/parallel/data_parallel/compressed_allreduce.h"

#include <algorithm>

#include "common/kernels/elementwise.h"
#include "common/kernels/sign_compression.h"

namespace course::parallel {

namespace {

// Elements per rank's chunk: the buffer split evenly, rounded up to whole bytes of signs.
int64_t chunk_of(int64_t numel, int ranks) {
  const int64_t share = (numel + ranks - 1) / ranks;
  return std::max<int64_t>(8, (share + 7) / 8 * 8);
}

}  // namespace

CompressedAllreduce::CompressedAllreduce(int64_t numel, std::shared_ptr<Communicator> comm,
                                         Device device)
    : numel_(numel), chunk_(chunk_of(numel, comm->size())), comm_(std::move(comm)) {
  COURSE_CHECK(numel > 0, "a compressed all-reduce needs values, got ", numel);
  const int64_t ranks = comm_->size(), bytes = chunk_ / 8;
  worker_error_ = zeros({padded_numel()}, DType::kF32, device);
  server_error_ = zeros({chunk_}, DType::kF32, device);
  bits_ = Tensor::empty({ranks * bytes}, DType::kU8, device);
  scales_ = Tensor::empty({ranks}, DType::kF32, device);
  received_bits_ = Tensor::empty({ranks * bytes}, DType::kU8, device);
  received_scales_ = Tensor::empty({ranks}, DType::kF32, device);
  server_mean_ = Tensor::empty({chunk_}, DType::kF32, device);
  mean_bits_ = Tensor::empty({bytes}, DType::kU8, device);
  mean_scale_ = Tensor::empty({1}, DType::kF32, device);
  gathered_bits_ = Tensor::empty({ranks * bytes}, DType::kU8, device);
  gathered_scales_ = Tensor::empty({ranks}, DType::kF32, device);
}

void CompressedAllreduce::average_(Tensor& x) {
  COURSE_CHECK(x.dtype() == DType::kF32 && x.numel() == padded_numel() &&
                   x.device() == worker_error_.device(),
               "compressed all-reduce: needs (", padded_numel(), ",) f32 on ",
               worker_error_.device().str(), ", got ", x.str());
  const int rank = comm_->rank(), ranks = comm_->size();
  const int64_t bytes = chunk_ / 8;
  const auto bits_of = [bytes](const Tensor& t, int r) {
    return t.slice(r * bytes, (r + 1) * bytes);
  };
  compress_signs_(x, worker_error_, bits_, scales_, chunk_, numel_);

  // All-to-all: chunk r to rank r (this rank's own by a copy), signs then scale per peer.
  std::vector<PeerTransfer> transfers;
  for (int peer = 0; peer < ranks; ++peer) {
    if (peer == rank) continue;
    transfers.push_back(send_to(bits_of(bits_, peer), peer, 0));
    transfers.push_back(send_to(scales_.slice(peer, peer + 1), peer, 1));
    transfers.push_back(receive_from(bits_of(received_bits_, peer), peer, 0));
    transfers.push_back(receive_from(received_scales_.slice(peer, peer + 1), peer, 1));
  }
  Tensor own_bits = bits_of(received_bits_, rank),
         own_scale = received_scales_.slice(rank, rank + 1);
  copy_(own_bits, bits_of(bits_, rank));
  copy_(own_scale, scales_.slice(rank, rank + 1));
  if (!transfers.empty()) comm_->exchange(transfers)->wait();

  // Server: this rank's chunk averaged over the ranks, compressed again with its own error.
  average_signs(received_bits_, received_scales_, server_mean_, chunk_);
  const int64_t valid = std::clamp<int64_t>(numel_ - rank * chunk_, 0, chunk_);
  compress_signs_(server_mean_, server_error_, mean_bits_, mean_scale_, chunk_, valid);

  const WorkPtr signs = comm_->all_gather(mean_bits_, gathered_bits_);
  const WorkPtr scales = comm_->all_gather(mean_scale_, gathered_scales_);
  signs->wait();
  scales->wait();
  expand_signs(gathered_bits_, gathered_scales_, x, chunk_);
}

}  // namespace course::parallel
