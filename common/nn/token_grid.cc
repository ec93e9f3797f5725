// Token-grid layers, through the 4-D pooling kernels on the tokens' channels-last view.
#include "common/nn/token_grid.h"

#include "common/kernels/avg_pool2.h"
#include "common/kernels/pooling.h"
#include "common/nn/autocast.h"

namespace course::nn {

namespace {

// (N, h w, C) tokens as the channels-last (N, C, h, w) map they are in memory.
Tensor as_map(const Tensor& tokens, int64_t h, int64_t w, const char* layer) {
  COURSE_CHECK(tokens.dim() == 3 && tokens.size(1) == h * w &&
                   tokens.memory_format() == MemoryFormat::kContiguous,
               layer, " was built for ", h, "x", w, " = ", h * w, " tokens (N, tokens, C), got ",
               tokens.str());
  return tokens.view({tokens.size(0), tokens.size(2), h, w}, MemoryFormat::kChannelsLast);
}

Tensor as_tokens(const Tensor& map) {
  return map.view({map.size(0), map.size(2) * map.size(3), map.size(1)}, MemoryFormat::kContiguous);
}

}  // namespace

TokenPool2::TokenPool2(int64_t h, int64_t w) : h_(h), w_(w) {
  COURSE_CHECK(h >= 2 && w >= 2, "2x2 pooling of a ", h, "x", w, " token grid leaves no token");
}

Tensor TokenPool2::run_forward(const Tensor& tokens, Context& ctx) {
  const Tensor map = as_map(tokens, h_, w_, "a 2x2 token pooling");
  ctx.save(map);
  return as_tokens(avg_pool2_forward(map));
}

Tensor TokenPool2::run_backward(const Tensor& dy, Context& ctx) {
  const Tensor& map = ctx.saved<Tensor>("TokenPool2");
  const Tensor dy_map =
      as_map(as_dtype(dy, map.dtype()), h_ / 2, w_ / 2, "a 2x2 token pooling's dy");
  return as_tokens(avg_pool2_backward(dy_map, map));
}

Tensor TokenMean::run_forward(const Tensor& tokens, Context& ctx) {
  COURSE_CHECK(tokens.dim() == 3, "the token mean needs (N, tokens, C), got ", tokens.str());
  const Tensor map = as_map(tokens, tokens.size(1), 1, "the token mean");
  ctx.save(map);
  return global_avg_pool_forward(map);
}

Tensor TokenMean::run_backward(const Tensor& dy, Context& ctx) {
  const Tensor& map = ctx.saved<Tensor>("TokenMean");
  return as_tokens(global_avg_pool_backward(as_dtype(dy, map.dtype()), map));
}

}  // namespace course::nn
