// The block allocator and the per-layer pools.
#include "common/models/gpt/kv_cache.h"

#include "common/core/error.h"
#include "common/kernels/elementwise.h"

namespace course::nn {

BlockAllocator::BlockAllocator(int64_t blocks) : handed_out_(blocks, false) {
  COURSE_CHECK(blocks > 0, "a key/value cache needs at least one block, got ", blocks);
  for (int64_t b = blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

int32_t BlockAllocator::allocate() {
  COURSE_CHECK(!free_.empty(), "the key/value cache has no free block left (", handed_out_.size(),
               " in all)");
  const int32_t block = free_.back();
  free_.pop_back();
  handed_out_[block] = true;
  return block;
}

void BlockAllocator::free(int32_t block) {
  COURSE_CHECK(block >= 0 && block < static_cast<int64_t>(handed_out_.size()) && handed_out_[block],
               "block ", block, " of the key/value cache is not handed out");
  handed_out_[block] = false;
  free_.push_back(block);
}

PagedKvCache::PagedKvCache(const GptConfig& config, const KvCacheOptions& options, Device device)
    : options_(options),
      max_blocks_((config.context + options.block_size - 1) /
                  std::max<int64_t>(1, options.block_size)),
      device_(device),
      allocator_(options.blocks),
      tables_(options.sequences) {
  COURSE_CHECK(options.block_size > 0 && options.sequences > 0,
               "a key/value cache needs positive block sizes and sequences");
  const Shape pool{options.blocks, options.block_size, config.key_value_heads(), config.head_dim()};
  for (int64_t l = 0; l < config.layers; ++l) {
    layers_.push_back({zeros(pool, DType::kF32, device), zeros(pool, DType::kF32, device)});
  }
}

int64_t PagedKvCache::blocks_for(int64_t positions) const {
  return (positions + options_.block_size - 1) / options_.block_size;
}

void PagedKvCache::reserve(int sequence, int64_t positions) {
  std::vector<int32_t>& table = tables_.at(sequence);
  COURSE_CHECK(table.empty(), "slot ", sequence, " of the key/value cache is in use");
  const int64_t needed = blocks_for(positions);
  COURSE_CHECK(needed <= max_blocks_, "a sequence of ", positions,
               " positions is longer than the model's context");
  COURSE_CHECK(needed <= allocator_.free_blocks(), "the key/value cache has ",
               allocator_.free_blocks(), " free blocks, a sequence of ", positions,
               " positions needs ", needed);
  for (int64_t b = 0; b < needed; ++b) table.push_back(allocator_.allocate());
  device_table_ = Tensor();
}

void PagedKvCache::release(int sequence) {
  for (const int32_t block : tables_.at(sequence)) allocator_.free(block);
  tables_.at(sequence).clear();
  device_table_ = Tensor();
}

const Tensor& PagedKvCache::block_table() {
  if (device_table_.defined()) return device_table_;
  std::vector<int32_t> flat(tables_.size() * max_blocks_, 0);
  for (size_t s = 0; s < tables_.size(); ++s) {
    for (size_t b = 0; b < tables_[s].size(); ++b) flat[s * max_blocks_ + b] = tables_[s][b];
  }
  device_table_ =
      Tensor::from_vector(flat, {static_cast<int64_t>(tables_.size()), max_blocks_}).to(device_);
  return device_table_;
}

}  // namespace course::nn
