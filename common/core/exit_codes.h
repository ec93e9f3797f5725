// Exit codes of the lab programs, which scripts (batch sweeps, Slurm jobs) tell apart:
//   0 done; 1 an error (bad input, a failed check, a rank that failed); 2 out of memory;
//   3 an exercise not written yet; 4 stopped by a signal after writing its checkpoint (a Slurm
//   job requeues itself on it and resumes).
#pragma once

namespace course {

inline constexpr int kExitDone = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitOutOfMemory = 2;
inline constexpr int kExitExerciseNotDone = 3;
inline constexpr int kExitPreempted = 4;

}  // namespace course
