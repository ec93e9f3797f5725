// The phases' names, as the chronometer's table and the profiler's trace show them.
#include "common/core/step_phase.h"

namespace course {

const char* phase_name(Phase phase) {
  static const char* names[] = {"load",         "forward",  "backward", "optimizer",
                                "graph replay", "pipeline", "augment"};
  return names[static_cast<int>(phase)];
}

}  // namespace course
