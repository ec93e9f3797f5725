// The reference ring all-reduce.
#include "common/parallel/ring_allreduce.h"

#include "common/kernels/elementwise.h"

namespace course::parallel {

void ring_allreduce_sum(Tensor& data, Communicator& comm) {
  COURSE_CHECK(data.device().is_cpu() && data.dtype() == DType::kF32,
               "the ring all-reduce takes f32 CPU tensors, got ", data.str());
  const int p = comm.size(), r = comm.rank();
  const int64_t n = data.numel();
  if (p == 1 || n == 0) return;
  const Tensor flat = data.view({n});
  const auto chunk = [&](int c) {
    const int index = ((c % p) + p) % p;
    return flat.slice(n * index / p, n * (index + 1) / p);
  };
  const int to = (r + 1) % p, from = (r + p - 1) % p;
  Tensor scratch = Tensor::empty({n / p + 1});
  // Step s of a phase sends chunk (r + shift - s) and receives chunk (r + shift - s - 1).
  const auto phase = [&](int shift, bool accumulate) {
    for (int s = 0; s < p - 1; ++s) {
      Tensor outgoing = chunk(r + shift - s), incoming = chunk(r + shift - s - 1);
      Tensor landing = accumulate ? scratch.slice(0, incoming.numel()) : incoming;
      // One group: posted apart, every rank's receive would wait for a send queued behind it.
      comm.exchange({send_to(outgoing, to), receive_from(landing, from)})->wait();
      if (accumulate) axpy_(1.0f, landing, incoming);
    }
  };
  phase(0, true);   // afterwards rank r holds the full sum of chunk r + 1
  phase(1, false);  // and passes it on until every rank has every chunk
}

}  // namespace course::parallel
