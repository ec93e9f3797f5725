// A progress line on stderr with the loss and an ETA: redrawn in place on a terminal, printed
// every 10% when stderr is a log file (Slurm jobs).
#pragma once

#include <chrono>
#include <cstdint>

namespace course::train {

class Progress {
 public:
  Progress(bool enabled, int64_t epoch, int64_t epochs, int64_t total);
  void update(int64_t done, float loss);

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_, tty_;
  int64_t epoch_, epochs_, total_, shown_decile_ = -1;
  Clock::time_point start_, shown_{};
};

}  // namespace course::train
