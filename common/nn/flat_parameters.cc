// Re-homing parameters into flat buffers.
#include "common/nn/flat_parameters.h"

#include <algorithm>

#include "common/kernels/elementwise.h"

namespace course::nn {

FlatParameters::FlatParameters(const std::vector<Parameter*>& params, int shards)
    : params_(params), shards_(shards) {
  COURSE_CHECK(!params.empty(), "flat parameters of no parameters");
  COURSE_CHECK(shards > 0, "flat parameters need at least one shard, got ", shards);
  const Device device = params.front()->value.device();
  for (const Parameter* p : params) {
    COURSE_CHECK(p->value.dtype() == DType::kF32 && p->value.device() == device &&
                     p->value.memory_format() == MemoryFormat::kContiguous,
                 "flat parameters take contiguous f32 parameters on one device, got ",
                 p->value.str());
    ranges_.push_back({numel_, numel_ + p->value.numel()});
    numel_ += p->value.numel();
  }
  const int64_t padded = (numel_ + shards - 1) / shards * shards;
  values_ = Tensor::empty({padded}, DType::kF32, device);
  grads_ = Tensor::empty({padded}, DType::kF32, device);
  fill_(values_, 0.0);
  fill_(grads_, 0.0);
  for (size_t i = 0; i < params.size(); ++i) {
    Parameter& p = *params[i];
    const Shape shape = p.value.shape();
    Tensor value = values_.slice(ranges_[i].begin, ranges_[i].end).view(shape);
    Tensor grad = grads_.slice(ranges_[i].begin, ranges_[i].end).view(shape);
    copy_(value, p.value);
    copy_(grad, p.grad);
    p.value = value;
    p.grad = grad;
  }
}

FlatRange FlatParameters::shard(int rank) const {
  COURSE_CHECK(rank >= 0 && rank < shards_, "shard ", rank, " of ", shards_);
  const int64_t size = padded_numel() / shards_;
  return {rank * size, (rank + 1) * size};
}

Parameter FlatParameters::view(const FlatRange& range) {
  return Parameter(values_.slice(range.begin, range.end), grads_.slice(range.begin, range.end));
}

std::vector<FlatPiece> FlatParameters::pieces(const FlatRange& range) const {
  std::vector<FlatPiece> out;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    const int64_t begin = std::max(range.begin, ranges_[i].begin);
    const int64_t end = std::min(range.end, ranges_[i].end);
    if (begin < end) {
      out.push_back({i, begin - ranges_[i].begin, end - ranges_[i].begin, begin});
    }
  }
  return out;
}

}  // namespace course::nn
