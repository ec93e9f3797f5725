// The paged key/value cache of incremental decoding (vLLM's block manager, in its simplest form):
// every layer's keys and values in one pool of fixed-size blocks. A sequence gets the blocks its
// longest length needs when it starts and gives them back when it ends, so that sequences of any
// lengths share the memory without fragmenting it (a sequence starts only when its blocks are
// free: nothing is ever preempted). A sequence is a slot of the cache (its row of the block
// table); a block belongs to one sequence at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "common/kernels/paged_attention.h"
#include "common/models/gpt/gpt_config.h"

namespace course::nn {

// Block ids [0, blocks) handed out and taken back; never one block to two owners.
class BlockAllocator {
 public:
  explicit BlockAllocator(int64_t blocks);
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
  // Throws when none is free.
  int32_t allocate();
  // Throws for a block that is not handed out (never allocated, or freed twice).
  void free(int32_t block);

 private:
  std::vector<int32_t> free_;
  std::vector<bool> handed_out_;
};

struct KvCacheOptions {
  int64_t block_size = 16;  // positions per block
  int64_t blocks = 256;     // in the pool (each layer has its own pool of this many)
  int64_t sequences = 8;    // slots: sequences cached at once
};

class PagedKvCache {
 public:
  PagedKvCache(const GptConfig& config, const KvCacheOptions& options, Device device);

  const KvCacheOptions& options() const { return options_; }
  // Blocks a sequence of `positions` positions needs.
  int64_t blocks_for(int64_t positions) const;
  // Whether a new sequence of up to `positions` positions fits in the free blocks.
  bool fits(int64_t positions) const { return blocks_for(positions) <= allocator_.free_blocks(); }
  // Gives the free slot `sequence` blocks for `positions` positions (it must be free; throws
  // when the pool runs out or the sequence outgrows the context).
  void reserve(int sequence, int64_t positions);
  // Takes the slot's blocks back.
  void release(int sequence);
  int64_t free_blocks() const { return allocator_.free_blocks(); }
  const std::vector<int32_t>& blocks_of(int sequence) const { return tables_.at(sequence); }

  KvBlocks& layer(int64_t l) { return layers_[l]; }
  // The block table on the device ((sequences, blocks per sequence) i32; unused entries 0),
  // copied there again only after a reserve or a release changed it.
  const Tensor& block_table();

 private:
  KvCacheOptions options_;
  int64_t max_blocks_;  // per sequence: the context's
  Device device_;
  BlockAllocator allocator_;
  std::vector<std::vector<int32_t>> tables_;  // per slot
  Tensor device_table_;                       // undefined: tables_ changed since the copy
  std::vector<KvBlocks> layers_;
};

}  // namespace course::nn
