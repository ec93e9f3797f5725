// Flat parameters: a model's parameters (values and gradients) re-homed as views into one
// contiguous f32 buffer each, in parameters() order, padded to a multiple of the shard count so
// the buffer splits into equal shards, one per data-parallel rank. This is what ZeRO and FSDP
// shard: a rank owns the range shard(rank) of the flat buffer, reduce-scatters gradients into
// it, updates it, and all-gathers the values back. Layers keep working unchanged: their
// Parameter tensors are now views, written in place by backward and by optimizers.
#pragma once

#include <cstdint>
#include <vector>

#include "common/nn/module.h"

namespace course::nn {

struct FlatRange {
  int64_t begin = 0, end = 0;  // [begin, end) in the flat buffer
  int64_t size() const { return end - begin; }
};

// The part of one parameter that falls inside a range.
struct FlatPiece {
  size_t param;        // index into the flattened parameters
  int64_t begin, end;  // element range within that parameter (flattened)
  int64_t flat_begin;  // where it starts in the flat buffer
};

class FlatParameters {
 public:
  // Copies the values of `params` (f32, contiguous, all on one device) into the flat buffer
  // and points each Parameter's value and grad at its slice. The parameters must outlive this
  // object, which owns the buffers.
  FlatParameters(const std::vector<Parameter*>& params, int shards = 1);

  Tensor& values() { return values_; }  // (padded_numel(),) f32; undefined while unbound
  Tensor& grads() { return grads_; }
  const Tensor& values() const { return values_; }
  const Tensor& grads() const { return grads_; }
  // Points every parameter's value (or gradient) at its slice of `buffer`, a (padded_numel(),)
  // tensor on the parameters' device that this object then holds: f32 gradients; values f32 or
  // 16-bit (FSDP's mixed precision computes from 16-bit copies of the f32 master values). An
  // undefined tensor unbinds them (each becomes undefined), and the old buffer is freed once
  // nothing else holds it: ZeRO-3 and FSDP keep the full values only while a layer runs.
  void bind_values(Tensor buffer);
  void bind_grads(Tensor buffer);
  Device device() const { return device_; }
  int64_t numel() const { return numel_; }  // without the padding
  int64_t padded_numel() const;
  int shards() const { return shards_; }
  // Rank r's equal share of the padded buffer.
  FlatRange shard(int rank) const;
  // Where parameter i lives in the flat buffer.
  FlatRange range_of(size_t param) const { return ranges_.at(param); }
  // The range's values and gradients as one parameter (views): an optimizer given it updates
  // that range only, as ZeRO's rank updates its shard.
  Parameter view(const FlatRange& range);
  // The parameters overlapping `range`, clipped to it (for per-parameter work on a shard).
  std::vector<FlatPiece> pieces(const FlatRange& range) const;

 private:
  // Points the chosen member (value or grad) of every parameter at its slice of `buffer`.
  void bind(Tensor& held, Tensor buffer, Tensor Parameter::*member);

  std::vector<Parameter*> params_;
  std::vector<FlatRange> ranges_;
  std::vector<Shape> shapes_;
  Device device_;
  Tensor values_, grads_;
  int64_t numel_ = 0;
  int shards_;
};

}  // namespace course::nn
