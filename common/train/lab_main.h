// The end of every lab's main(): installs the stop-signal handlers (common/train/stop_signal.h),
// runs the lab and turns its errors into one message on stderr and an exit code a script can
// tell apart (common/core/exit_codes.h): 1 error (the course's or the standard library's), 2 out of
// memory ("OOM: ..."), 3 an exercise not written yet ("TODO TPx.y: ..."), 4 preempted ("preempted:
// ...").
#pragma once

#include <functional>

namespace course::train {

int lab_main(const std::function<void()>& run);

}  // namespace course::train
