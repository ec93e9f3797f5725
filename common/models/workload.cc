// A transformer block's closed-form figures (workload.h).
#include "common/models/workload.h"

namespace course::nn {

double multiply_adds(const std::vector<MatrixProduct>& products) {
  double sum = 0;
  for (const MatrixProduct& p : products) sum += p.rows * p.columns * p.depth * p.count;
  return sum;
}

BlockWork transformer_block_work(const TransformerShape& shape) {
  const auto [s, h, a, g, expansion, width] = shape;
  const double head = h / a;
  const double mlp = kBf16Bytes * (expansion + width) / h;
  using Cut = MatrixProduct::Cut;
  BlockWork out{.output_elements = s * h,
                .saved_whole_bytes = 10 * s * h,
                .saved_cut_bytes = s * h * (8 + mlp) + 5 * a * s * s,
                .products = {{s, h + 2 * g * head, h, 1, Cut::kColumns},  // queries, keys, values
                             {s, s, head, a, Cut::kCount},                // scores
                             {s, head, s, a, Cut::kCount},                // mixed values
                             {s, h, h, 1, Cut::kDepth},                   // output projection
                             {s, expansion, h, 1, Cut::kColumns},         // the MLP's first
                             {s, h, width, 1, Cut::kDepth}},              // and second
                .elementwise_whole_bytes = 22 * s * h,
                .elementwise_cut_bytes = 4 * s * expansion + 9 * a * s * s};
  out.multiply_adds = multiply_adds(out.products);
  return out;
}

}  // namespace course::nn
