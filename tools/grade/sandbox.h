// Each run of a trainee's binary inside a sandbox of bubblewrap (Debian's `bubblewrap`), so that
// the trainee's code, which shares the check's process, sees only what grading it needs:
//   - the system read-only (/usr, /etc, /sys, /opt, and the libraries ./setup.sh keeps in
//     ~/.cache/course; no home folder, no instructor's checkout, no hand-ins), a /dev and /proc
//     of its own, a private /tmp and /dev/shm;
//   - the class's work tree (which holds no solutions/: clean_copy, class_build.h) and the
//     build's outputs read-only, with every other trainee's sources, binaries, scratch and
//     reports out of sight (empty folders);
//   - its own scratch folder, where it starts, and its reports' folder, the only writable places;
//   - no network (a loopback of its own), its own process, IPC and user namespaces (an
//     unprivileged id, every capability dropped, so the view cannot be unmounted);
//   - limits on CPU time, memory (data segment: a GPU runtime's address-space reservations do not
//     count) and processes, through util-linux's prlimit.
// The output's bound is run_with_limit's (system.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace course::grade {

struct SandboxLimits {
  int64_t cpu_seconds = 600;
  int64_t data_bytes = int64_t{8} << 30;
  int64_t processes = 512;
};

// What one trainee's run may see.
struct SandboxView {
  std::filesystem::path work;     // the class's work tree (its bazel-bin and bazel-out inside)
  std::string package;            // the trainee's, "graded/t3/day2_ddp"
  std::filesystem::path scratch;  // writable: TEST_TMPDIR and HOME, and where the run starts
  std::filesystem::path reports;  // writable: where the check's processes write their results
};

// Why no sandbox can be made here (no bwrap on PATH, or one that starts no sandbox), said in
// the user's terms; nothing when bubblewrap works. Checked once per process.
std::optional<std::string> sandbox_unavailable();

// `command` (a shell command line) as a shell command that runs it inside `view` under `limits`.
std::string sandboxed(const std::string& command, const SandboxView& view,
                      const SandboxLimits& limits);

}  // namespace course::grade
