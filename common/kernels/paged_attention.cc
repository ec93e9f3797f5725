// Paged-attention launches: checks of the shapes, then the bodies of paged_attention_ops.h.
#include "common/kernels/paged_attention.h"

#include "common/kernels/launch.h"
#include "common/kernels/paged_attention_ops.h"

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
