// The 2:4 masks of a whole network (TP4.21's exercise on each weight).
#include "day4_large_models/compression/pruning.h"

#include "day4_large_models/exercises.h"

namespace day4 {

using namespace course;

void mask_two_of_four(std::vector<nn::PrunedWeight>& weights) {
  for (nn::PrunedWeight& w : weights) {
    const Tensor value = w.weight->value.to(Device::cpu());
    w.dense = (value.numel() / value.size(0)) % 4 != 0;
    const Tensor mask =
        w.dense ? Tensor::from_vector(std::vector<float>(value.numel(), 1.0f), value.shape())
                : mask_2_4(value);  // TP4.21
    w.mask = mask.to(w.weight->value.device());
  }
}

}  // namespace day4
