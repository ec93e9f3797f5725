// Re-homing parameters into flat buffers.
#include "common/nn/flat_parameters.h"

#include <algorithm>

#include "common/kernels/elementwise.h"

namespace course::nn {

FlatParameters::FlatParameters(const std::vector<Parameter*>& params, int shards)
    : params_(params), shards_(shards) {
  COURSE_CHECK(!params.empty(), "flat parameters of no parameters");
  COURSE_CHECK(shards > 0, "flat parameters need at least one shard, got ", shards);
  device_ = params.front()->value.device();
  for (const Parameter* p : params) {
    COURSE_CHECK(p->value.dtype() == DType::kF32 && p->value.device() == device_ &&
                     p->value.memory_format() == MemoryFormat::kContiguous,
                 "flat parameters take contiguous f32 parameters on one device, got ",
                 p->value.str());
    ranges_.push_back({numel_, numel_ + p->value.numel()});
    shapes_.push_back(p->value.shape());
    numel_ += p->value.numel();
  }
  const int64_t padded = (numel_ + shards - 1) / shards * shards;
  Tensor values = zeros({padded}, DType::kF32, device_);
  Tensor grads = zeros({padded}, DType::kF32, device_);
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor value = values.slice(ranges_[i].begin, ranges_[i].end).view(shapes_[i]);
    Tensor grad = grads.slice(ranges_[i].begin, ranges_[i].end).view(shapes_[i]);
    copy_(value, params[i]->value);
    copy_(grad, params[i]->grad);
  }
  bind_values(values);
  bind_grads(grads);
}

void FlatParameters::bind_values(Tensor buffer) {
  COURSE_CHECK(!buffer.defined() || is_floating(buffer.dtype()), "flat parameter values bound to ",
               buffer.str(), ", not a floating type");
  bind(values_, std::move(buffer), &Parameter::value);
}

void FlatParameters::bind_grads(Tensor buffer) {
  COURSE_CHECK(!buffer.defined() || buffer.dtype() == DType::kF32,
               "flat parameter gradients bound to ", buffer.str(), ", not f32");
  bind(grads_, std::move(buffer), &Parameter::grad);
}

void FlatParameters::bind(Tensor& held, Tensor buffer, Tensor Parameter::*member) {
  if (buffer.defined()) {
    COURSE_CHECK(buffer.device() == device_ && buffer.shape() == Shape{padded_numel()},
                 "flat parameters bound to ", buffer.str(), ", not (", padded_numel(), ",) on ",
                 device_.str());
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i]->*member = buffer.defined()
                              ? buffer.slice(ranges_[i].begin, ranges_[i].end).view(shapes_[i])
                              : Tensor();
  }
  held = std::move(buffer);
}

int64_t FlatParameters::padded_numel() const { return (numel_ + shards_ - 1) / shards_ * shards_; }

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
