// The Work of an operation that completed when it was posted.
#include "common/parallel/comm/work.h"

namespace course::parallel {

namespace {

class CompletedWork : public Work {
 public:
  void wait() override {}
  bool test() override { return true; }
};

}  // namespace

WorkPtr completed_work() { return std::make_shared<CompletedWork>(); }

}  // namespace course::parallel
