// The multiply-adds a thread's convolutions, matrix products and attention run while a
// MultiplyAddCount lives: each adds its own as it is called (on any device; the work runs as
// usual), so a model's forward run once gives the multiply-adds behind MFU's training FLOPs
// (common/train/model_flops.h), whatever layers the model is made of.
#pragma once

namespace course {

class MultiplyAddCount {
 public:
  MultiplyAddCount();  // counts this thread's calls from now on (one count at a time)
  ~MultiplyAddCount();
  MultiplyAddCount(const MultiplyAddCount&) = delete;
  MultiplyAddCount& operator=(const MultiplyAddCount&) = delete;

  double total() const { return total_; }

  // Adds to this thread's count, when one is counting (the layers' kernels call it).
  static void add(double multiply_adds);

 private:
  double total_ = 0;
};

}  // namespace course
