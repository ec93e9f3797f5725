// Collectives in the profiler's trace: while the activity log (common/core/activity_log.h)
// listens, a collective's Work records the span it was in flight (from its launch to the
// completion this rank sees: MPI on the CPU completes a request only inside MPI calls) and each
// span a caller waited for it, the communication computation did not hide.
#pragma once

#include <cstdint>
#include <string>

#include "common/parallel/comm/work.h"

namespace course::parallel {

// `work`, recording as "<op> <bytes>" while the log listens (else `work` itself).
WorkPtr traced(WorkPtr work, const std::string& op, int64_t bytes);

}  // namespace course::parallel
