// The paged key/value cache (paged_attention.h): the input embedding of tokens at any positions,
// the new keys and values written into their cache blocks (keys, and the queries, turned by
// rotary position embedding), and one query's attention over its sequence's cached positions.
// The bodies (one for the CPU and the GPU), their shape checks and dispatch, and their GPU
// instantiations.
#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/grouped_qkv_ops.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/paged_attention.h"

namespace course::ops {

// Element (n, c) of the (N, C) f32 output: wte[token n] + wpe[position n] (no wpe: rotary).
struct EmbedAtPositions {
  const int32_t* tokens;
  const int32_t* positions;
  const float* wte;
  const float* wpe;  // nullptr: no learned positions
  float* out;
  int64_t channels;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t c = i % channels, n = i / channels;
    const float position = wpe ? wpe[positions[n] * channels + c] : 0.0f;
    out[i] = wte[tokens[n] * channels + c] + position;
  }
};

// Where a sequence's position lives: its block (from the sequence's row of the block table)
// and the slot in it; the element (kv_head, d) of that slot.
struct CacheSlot {
  const int32_t* block_table;  // (sequences, blocks_per_sequence)
  int64_t blocks_per_sequence, block_size, kv_heads, head_dim;
  COURSE_HD int64_t offset(int64_t sequence, int64_t position, int64_t kv_head, int64_t d) const {
    const int64_t block = block_table[sequence * blocks_per_sequence + position / block_size];
    return ((block * block_size + position % block_size) * kv_heads + kv_head) * head_dim + d;
  }
};

// Element d of a head at `position` after the rotary turn (grouped_qkv_ops.h's, as the
// training forward turns it). `x` points at the head's D values.
COURSE_HD inline float rotated(const float* x, int64_t d, int64_t head_dim, int64_t position,
                               float theta) {
  float a = x[d - d % 2], b = x[d - d % 2 + 1];
  GroupedHeadShape{.head_dim = head_dim, .rope_theta = theta}.turn(position, d / 2, 1.0f, a, b);
  return d % 2 == 0 ? a : b;
}

// Element (n, j) of the (N, (H + 2 G) D) q|k|v rows, j over the H + G query and key heads'
// D values and the G value heads': queries rotated into `queries` (N, H D), keys rotated and
// values as they are into the cache at (sequence n, position n).
struct AppendToCache {
  const float* qkv;
  const int32_t* sequences;
  const int32_t* positions;
  CacheSlot slot;
  float* queries;
  float* key_cache;
  float* value_cache;
  int64_t heads;
  float theta;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t d_model = slot.head_dim;
    const int64_t width = (heads + 2 * slot.kv_heads) * d_model;
    const int64_t n = i / width, j = i % width, head = j / d_model, d = j % d_model;
    const float* row = qkv + n * width;
    const int64_t position = positions[n];
    if (head < heads) {
      queries[(n * heads + head) * d_model + d] =
          rotated(row + head * d_model, d, d_model, position, theta);
    } else if (head < heads + slot.kv_heads) {
      const int64_t kv_head = head - heads;
      key_cache[slot.offset(sequences[n], position, kv_head, d)] =
          rotated(row + head * d_model, d, d_model, position, theta);
    } else {
      const int64_t kv_head = head - heads - slot.kv_heads;
      value_cache[slot.offset(sequences[n], position, kv_head, d)] = row[j];
    }
  }
};

// Row n's query head h attending to positions 0 ... positions[n] of its sequence (causal: what
// the cache holds up to itself), its key/value head h / (H / G): one (n, h) per index, the
// softmax in one pass with a running maximum (online softmax), out (N, H D) f32.
struct CachedAttention {
  const float* queries;
  const int32_t* sequences;
  const int32_t* positions;
  CacheSlot slot;
  const float* key_cache;
  const float* value_cache;
  float* out;
  int64_t heads;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t n = i / heads, head = i % heads, d_model = slot.head_dim;
    const int64_t kv_head = head / (heads / slot.kv_heads), sequence = sequences[n];
    const float* q = queries + (n * heads + head) * d_model;
    float* o = out + (n * heads + head) * d_model;
    const float scale = 1.0f / sqrtf(static_cast<float>(d_model));
    for (int64_t d = 0; d < d_model; ++d) o[d] = 0.0f;
    float running_max = -INFINITY, total = 0.0f;
    for (int64_t t = 0; t <= positions[n]; ++t) {
      const float* k = key_cache + slot.offset(sequence, t, kv_head, 0);
      float score = 0.0f;
      for (int64_t d = 0; d < d_model; ++d) score += q[d] * k[d];
      score *= scale;
      const float new_max = score > running_max ? score : running_max;
      const float rescale = expf(running_max - new_max), weight = expf(score - new_max);
      const float* v = value_cache + slot.offset(sequence, t, kv_head, 0);
      for (int64_t d = 0; d < d_model; ++d) o[d] = o[d] * rescale + weight * v[d];
      total = total * rescale + weight;
      running_max = new_max;
    }
    for (int64_t d = 0; d < d_model; ++d) o[d] /= total;
  }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

void check_rows(const Tensor& t, int64_t n, const Device& device, const char* what) {
  COURSE_CHECK(t.dtype() == DType::kI32 && t.dim() == 1 && t.size(0) == n && t.device() == device &&
                   t.memory_format() == MemoryFormat::kContiguous,
               what, " must be contiguous (", n, ",) i32 on ", device.str(), ", got ", t.str());
}

ops::CacheSlot cache_slot(const CacheRows& rows, const KvBlocks& cache) {
  return {rows.block_table.data_as<int32_t>(), rows.block_table.size(1), cache.keys.size(1),
          cache.keys.size(2), cache.keys.size(3)};
}

}  // namespace

Tensor embed_at_positions(const Tensor& tokens, const Tensor& positions, const Tensor& wte,
                          const Tensor& wpe) {
  const int64_t n = tokens.numel(), channels = wte.size(1);
  check_rows(tokens, n, wte.device(), "the tokens");
  check_rows(positions, n, wte.device(), "the positions");
  COURSE_CHECK(wte.dtype() == DType::kF32 && (!wpe.defined() || wpe.dtype() == DType::kF32),
               "the embedding tables must be f32");
  Tensor out = Tensor::empty({n, channels}, DType::kF32, wte.device());
  for_each_index(wte.device(), n * channels,
                 ops::EmbedAtPositions{tokens.data_as<int32_t>(), positions.data_as<int32_t>(),
                                       wte.data_as<float>(), wpe.data_or_null<float>(),
                                       out.data_as<float>(), channels});
  return out;
}

Tensor cache_and_attend(const Tensor& qkv, const CacheRows& rows, KvBlocks& cache,
                        const GroupedHeads& heads) {
  check_grouped_heads(heads);
  const Device device = cache.keys.device();
  const int64_t n = qkv.size(0);
  COURSE_CHECK(qkv.dtype() == DType::kF32 && qkv.dim() == 2 && qkv.size(1) == heads.width() &&
                   qkv.device() == device,
               "cache_and_attend needs (N, ", heads.width(), ") f32 q|k|v rows on ", device.str(),
               ", got ", qkv.str());
  const Shape pool{cache.keys.size(0), cache.keys.size(1), heads.kv_heads, heads.head_dim};
  COURSE_CHECK(cache.keys.shape() == pool && cache.values.shape() == pool &&
                   cache.keys.dtype() == DType::kF32 && cache.values.dtype() == DType::kF32,
               "the key and value pools must be f32 ", shape_str(pool));
  check_rows(rows.sequences, n, device, "the rows' sequences");
  check_rows(rows.positions, n, device, "the rows' positions");
  COURSE_CHECK(rows.block_table.dtype() == DType::kI32 && rows.block_table.dim() == 2 &&
                   rows.block_table.device() == device,
               "the block table must be (sequences, blocks) i32 on ", device.str());
  const ops::CacheSlot slot = cache_slot(rows, cache);
  Tensor queries = Tensor::empty({n, heads.heads * heads.head_dim}, DType::kF32, device);
  for_each_index(device, n * heads.width(),
                 ops::AppendToCache{qkv.data_as<float>(), rows.sequences.data_as<int32_t>(),
                                    rows.positions.data_as<int32_t>(), slot,
                                    queries.data_as<float>(), cache.keys.data_as<float>(),
                                    cache.values.data_as<float>(), heads.heads, heads.rope_theta});
  Tensor out = Tensor::empty({n, heads.heads * heads.head_dim}, DType::kF32, device);
  for_each_index(
      device, n * heads.heads,
      ops::CachedAttention{queries.data_as<float>(), rows.sequences.data_as<int32_t>(),
                           rows.positions.data_as<int32_t>(), slot, cache.keys.data_as<float>(),
                           cache.values.data_as<float>(), out.data_as<float>(), heads.heads},
      heads.head_dim * 64);
  return out;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

COURSE_INSTANTIATE_FOR_EACH(ops::EmbedAtPositions)
COURSE_INSTANTIATE_FOR_EACH(ops::AppendToCache)
COURSE_INSTANTIATE_FOR_EACH(ops::CachedAttention)

}  // namespace course
