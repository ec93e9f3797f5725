// The rows of a packed projection regrouped by tensor-parallel rank. A layer that packs several
// outputs in one weight (attention's q | k | v, a SwiGLU's gate | up) is cut over p ranks by
// cutting each part: rank r takes rows [r n / p, (r + 1) n / p) of every part of n rows. Regrouped
// as [part_0 of rank 0 | part_1 of rank 0 | ... | part_0 of rank 1 | ...], rank r's share is
// contiguous rows, which a column-parallel layer can take as its own.
#pragma once

#include <vector>

#include "common/nn/linear.h"

namespace course::parallel {

// The parts' row counts must add up to packed's rows and each split over `ranks` (throws).
Tensor rows_grouped_by_rank(const Tensor& packed, const std::vector<int64_t>& parts, int ranks);
// The inverse: grouped rows back to [part_0 | part_1 | ...].
Tensor rows_ungrouped(const Tensor& grouped, const std::vector<int64_t>& parts, int ranks);

// A copy of `packed` (weight, and bias if any) with its rows grouped by rank.
nn::Linear grouped_by_rank(const nn::Linear& packed, const std::vector<int64_t>& parts, int ranks);

}  // namespace course::parallel
