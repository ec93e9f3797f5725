// The ring all-reduce built from point-to-point messages: each rank sends and receives
// 2 (p - 1) / p of the data whatever the number of ranks, which is why NCCL uses rings for
// large messages. This is the reference copy of day 2's TP2.4 (day2_ddp/README.md#tp24), used
// by bench/ and by //day2_ddp:check to judge the trainee's version.
#pragma once

#include "common/parallel/communicator.h"

namespace course::parallel {

// Sums a contiguous f32 CPU tensor over the ranks in place: p chunks (sizes differing by at
// most one element); p - 1 reduce-scatter steps in which rank r sends chunk r - s to rank r + 1
// and adds chunk r - s - 1 from rank r - 1; then p - 1 all-gather steps that pass the reduced
// chunks on around the same ring.
void ring_allreduce_sum(Tensor& data, Communicator& comm);

}  // namespace course::parallel
