// The reference ring all-reduce, as a Work that posts its steps one after another.
#include "common/parallel/comm/ring_allreduce.h"

#include "common/kernels/elementwise.h"

namespace course::parallel {

namespace {

class RingAllreduce : public Work {
 public:
  RingAllreduce(const Tensor& data, Communicator& comm)
      : comm_(comm),
        flat_(data.view({data.numel()})),
        scratch_(Tensor::empty({data.numel() / comm.size() + 1}, DType::kF32, data.device())),
        p_(comm.size()),
        r_(comm.rank()) {
    post_step();
  }
  bool test() override {
    while (in_flight_ && in_flight_->test()) finish_step();
    return !in_flight_;
  }
  void wait() override {
    while (in_flight_) {
      try {
        in_flight_->wait();
      } catch (const Error& e) {
        COURSE_FAIL("the ring all-reduce's step ", step_ + 1, " of ", 2 * (p_ - 1), ": ", e.what());
      }
      finish_step();
    }
  }

 private:
  bool reducing() const { return step_ < p_ - 1; }
  Tensor chunk(int c) const {
    const int64_t n = flat_.numel();
    const int index = ((c % p_) + p_) % p_;
    return flat_.slice(n * index / p_, n * (index + 1) / p_);
  }
  // Step s of a phase sends chunk (r + shift - s) and receives chunk (r + shift - s - 1): the
  // reduce-scatter (shift 0) adds what arrives into its chunk, after which rank r holds the full
  // sum of chunk r + 1; the all-gather (shift 1) passes the sums on until every rank has all.
  void post_step() {
    if (step_ == 2 * (p_ - 1)) {  // done: nothing of the tensors is kept
      in_flight_.reset();
      flat_ = scratch_ = incoming_ = landing_ = Tensor();
      return;
    }
    const int shift = reducing() ? 0 : 1, s = reducing() ? step_ : step_ - (p_ - 1);
    const Tensor outgoing = chunk(r_ + shift - s);
    incoming_ = chunk(r_ + shift - s - 1);
    landing_ = reducing() ? scratch_.slice(0, incoming_.numel()) : incoming_;
    // One group: posted apart, every rank's receive would wait for a send queued behind it.
    in_flight_ = comm_.exchange(
        {send_to(outgoing, (r_ + 1) % p_), receive_from(landing_, (r_ + p_ - 1) % p_)});
  }
  void finish_step() {
    if (reducing()) axpy_(1.0f, landing_, incoming_);
    ++step_;
    post_step();
  }

  Communicator& comm_;
  Tensor flat_, scratch_, incoming_, landing_;
  const int p_, r_;
  int step_ = 0;
  WorkPtr in_flight_;
};

}  // namespace

WorkPtr start_ring_allreduce_sum(Tensor& data, Communicator& comm) {
  COURSE_CHECK(data.dtype() == DType::kF32, "the ring all-reduce takes f32 tensors, got ",
               data.str());
  if (comm.size() == 1 || data.numel() == 0) return completed_work();
  return std::make_shared<RingAllreduce>(data, comm);
}

void ring_allreduce_sum(Tensor& data, Communicator& comm) {
  start_ring_allreduce_sum(data, comm)->wait();
}

}  // namespace course::parallel
