// The ring all-reduce built from point-to-point messages: each rank sends and receives
// 2 (p - 1) / p of the data whatever the number of ranks, which is why NCCL uses rings for
// large messages. This is the reference copy of day 2's TP2.4 (day2_ddp/README.md#tp24), used
// by bench/ and by //day2_ddp:check to judge the trainee's version, and the MPI engine's
// all-reduce of large f32 sums (communicator.h), where it beats the MPI library's own.
#pragma once

#include "common/parallel/comm/communicator.h"

namespace course::parallel {

// Sums a contiguous f32 tensor (on the CPU or the communicator's device) over the ranks in place: p
// chunks (sizes differing by at most one element); p - 1 reduce-scatter steps in which rank r sends
// chunk r - s to rank r + 1 and adds chunk r - s - 1 from rank r - 1; then p - 1 all-gather steps
// that pass the reduced chunks on around the same ring.
void ring_allreduce_sum(Tensor& data, Communicator& comm);

// The same ring, started and not waited for: each test() or wait() of the returned Work moves
// it on by the steps whose messages have arrived (as MPI moves its own non-blocking
// collectives on), one exchange in flight at a time. `comm` must carry no other point-to-point
// traffic meanwhile, and no other ring on it may be in flight: every rank must post the same
// exchanges in the same order.
WorkPtr start_ring_allreduce_sum(Tensor& data, Communicator& comm);

}  // namespace course::parallel
