// Progress line.
#include "common/train/progress.h"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace course::train {

Progress::Progress(bool enabled, int64_t epoch, int64_t epochs, int64_t total)
    : enabled_(enabled && total > 0),
      tty_(isatty(2)),
      epoch_(epoch),
      epochs_(epochs),
      total_(total),
      start_(Clock::now()) {}

void Progress::update(int64_t done, float loss) {
  if (!enabled_) return;
  const auto now = Clock::now();
  const bool last = done == total_;
  if (tty_ ? (now - shown_ < std::chrono::milliseconds(250) && !last)
           : (done * 10 / total_ == shown_decile_ && !last)) {
    return;
  }
  shown_ = now;
  shown_decile_ = done * 10 / total_;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double eta = done > 0 ? elapsed * static_cast<double>(total_ - done) / done : 0;
  const int filled = static_cast<int>(30 * done / total_);
  std::fprintf(stderr, "%sepoch %lld/%lld [%-30s] %lld/%lld loss %.4f %.0fs eta %.0fs%s",
               tty_ ? "\r" : "", static_cast<long long>(epoch_ + 1),
               static_cast<long long>(epochs_), std::string(filled, '#').c_str(),
               static_cast<long long>(done), static_cast<long long>(total_), loss, elapsed, eta,
               tty_ && !last ? "" : "\n");
}

}  // namespace course::train
