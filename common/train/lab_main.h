// The end of every lab's main(): runs the lab and turns its errors into one message on stderr
// and an exit code a script can tell apart:
//   0 done; 1 error (bad input, a failed check); 2 out of memory ("OOM: ..."); 3 an exercise
//   not written yet ("TODO TPx.y: ...").
#pragma once

#include <functional>

namespace course::train {

int lab_main(const std::function<void()>& run);

}  // namespace course::train
