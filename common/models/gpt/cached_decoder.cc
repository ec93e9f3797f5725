// The blocks' forward on cached rows.
#include "common/models/gpt/cached_decoder.h"

#include "common/core/error.h"
#include "common/kernels/elementwise.h"

namespace course::nn {

CachedDecoder::CachedDecoder(Gpt& model, PagedKvCache& cache)
    : model_(model),
      cache_(cache),
      heads_{model.config().heads, model.config().key_value_heads(), model.config().head_dim(),
             model.config().rope_theta},
      device_(model.token_table().value.device()) {
  model_.set_training(false);
}

Tensor CachedDecoder::block_forward(int64_t layer, const Tensor& x, const CacheRows& rows) {
  const GptBlockLayers& block = model_.block_layers()[layer];
  const int64_t n = x.size(1);
  Context discarded;
  const Tensor qkv = block.qkv->forward(block.attention_norm->forward(x, discarded), discarded);
  const Tensor attended =
      cache_and_attend(qkv.view({n, heads_.width()}), rows, cache_.layer(layer), heads_);
  const Tensor after_attention =
      add(x, block.attention_projection->forward(
                 attended.view({1, n, heads_.heads * heads_.head_dim}), discarded));
  const Tensor expanded = block.expansion->forward(
      block.feed_forward_norm->forward(after_attention, discarded), discarded);
  // GPT-2's expansion applies its GELU itself (nn/transformer_blocks.h).
  const Tensor activated = model_.config().llama() ? swiglu_forward(expanded) : expanded;
  return add(after_attention, block.feed_forward_projection->forward(activated, discarded));
}

Tensor CachedDecoder::logits(const DecoderRows& rows) {
  const int64_t n = static_cast<int64_t>(rows.tokens.size());
  COURSE_CHECK(n > 0 && static_cast<int64_t>(rows.sequences.size()) == n &&
                   static_cast<int64_t>(rows.positions.size()) == n,
               "cached decoding needs a token, a sequence and a position per row");
  const GptConfig& config = model_.config();
  for (int64_t i = 0; i < n; ++i) {
    COURSE_CHECK(rows.tokens[i] >= 0 && rows.tokens[i] < config.vocabulary, "token ",
                 rows.tokens[i], " is outside the vocabulary of ", config.vocabulary);
    COURSE_CHECK(rows.positions[i] >= 0 && rows.positions[i] < config.context, "position ",
                 rows.positions[i], " is outside the context of ", config.context);
    const int64_t cached = static_cast<int64_t>(cache_.blocks_of(rows.sequences.at(i)).size()) *
                           cache_.options().block_size;
    COURSE_CHECK(rows.positions[i] < cached, "position ", rows.positions[i], " of sequence ",
                 rows.sequences[i], " has no block reserved");
  }
  const auto on_device = [&](const std::vector<int32_t>& values) {
    return Tensor::from_vector(values, {n}).to(device_);
  };
  const Tensor positions = on_device(rows.positions);
  const CacheRows cache_rows{on_device(rows.sequences), positions, cache_.block_table()};
  const Embedding& embedding = model_.embedding();
  Tensor x = embed_at_positions(on_device(rows.tokens), positions, embedding.wte.value,
                                embedding.wpe ? embedding.wpe->value : Tensor{})
                 .view({1, n, config.channels});
  for (int64_t l = 0; l < config.layers; ++l) x = block_forward(l, x, cache_rows);
  Context discarded;
  const Tensor logits = model_.head().forward(model_.final_norm().forward(x, discarded), discarded);
  return logits.view({n, config.vocabulary});
}

}  // namespace course::nn
