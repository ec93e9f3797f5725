// Permute (transpose) of a contiguous tensor's axes into a new contiguous tensor: the
// transformer's (B, T, 3, H, D) <-> (3, B, H, T, D) reshuffle around attention, so each head's
// rows are contiguous for the attention kernels.
#pragma once

#include <vector>

#include "common/tensor/tensor.h"

namespace course {

// y's axis a is x's axis order[a] (as torch.permute); at most 6 axes, any dtype.
Tensor permute(const Tensor& x, const std::vector<int>& order);

// The order that undoes `order`: permute(permute(x, order), inverse_permutation(order)) == x.
std::vector<int> inverse_permutation(const std::vector<int>& order);

}  // namespace course
