// A transformer block's closed-form figures (workload.h).
#include "common/models/workload.h"

namespace course::nn {

BlockWork transformer_block_work(double s, double h, double a, double mlp_expansion,
                                 double mlp_width) {
  const double mlp = kBf16Bytes * (mlp_expansion + mlp_width) / h;
  return {.output_elements = s * h,
          .saved_whole_bytes = 10 * s * h,
          .saved_cut_bytes = s * h * (8 + mlp) + 5 * a * s * s};
}

}  // namespace course::nn
