// Incremental decoding's kernels (vLLM's PagedAttention, in its simplest form): keys and values
// of every sequence's past positions kept in fixed-size blocks of one pool per layer, a
// sequence's blocks listed in its row of a block table, so that a new token costs one position
// of attention, not a pass over its whole prefix. Rows are tokens of any sequences at any
// positions: a prompt's tokens (prefill) and the running sequences' last tokens (decode) go
// through the same call, which is what lets continuous batching mix them.
#pragma once

#include "common/kernels/grouped_qkv.h"
#include "common/tensor/tensor.h"

namespace course {

// The key and value pools of one layer: (blocks, block_size, kv_heads, head_dim) f32 each.
struct KvBlocks {
  Tensor keys, values;
};

// Where the rows go: rows (N,) i32 each of a sequence (its row of `block_table`) and a position;
// `block_table` (sequences, blocks per sequence) i32 of block ids, all on the pools' device.
struct CacheRows {
  Tensor sequences, positions, block_table;
};

// tokens and positions (N,) i32 -> (N, C) f32: wte[token] + wpe[position] (wpe undefined:
// rotary positions, wte alone).
Tensor embed_at_positions(const Tensor& tokens, const Tensor& positions, const Tensor& wte,
                          const Tensor& wpe);

// qkv (N, (H + 2 G) D) f32, a projection's q|k|v of the rows: writes each row's key (rotated
// as `heads` says) and value into its sequence's block at its position, then returns each row's
// attention over its sequence's positions up to its own, (N, H D) f32. A row may read what an
// earlier row of the same call wrote (a prompt's tokens in one call).
Tensor cache_and_attend(const Tensor& qkv, const CacheRows& rows, KvBlocks& cache,
                        const GroupedHeads& heads);

}  // namespace course
