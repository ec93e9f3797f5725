// The phases a training step's time is counted in: the chronometer's rows and the profiler's
// ranges (common/train), and what a parallel scheme's step reports as it runs (common/parallel).
#pragma once

namespace course {

// kGraphReplay is forward, backward and optimizer replayed as one captured graph; kPipeline a
// pipeline stage's forwards and backwards of every micro-batch, interleaved by its schedule;
// kAugment the batch's augmentation on the training device (day 3).
enum class Phase { kLoad, kForward, kBackward, kOptimizer, kGraphReplay, kPipeline, kAugment };
inline constexpr int kPhases = 7;
const char* phase_name(Phase phase);

}  // namespace course
