// A trainee's run inside bubblewrap (sandbox.h).
#include "tools/grade/sandbox.h"

#include <cstdlib>
#include <vector>

#include "common/core/error.h"
#include "tools/grade/system.h"

namespace course::grade {

namespace fs = std::filesystem;

namespace {

using Words = std::vector<std::string>;

void add(Words& words, std::initializer_list<std::string> more) {
  words.insert(words.end(), more.begin(), more.end());
}

// The system, read-only: /usr and what the root links into it (/bin, /lib, ... as the host has
// them: links or folders), /etc, /sys (hwloc reads the topology there), /opt where it exists.
void add_system(Words& words) {
  for (const char* top : {"bin", "sbin", "lib", "lib32", "lib64", "libx32"}) {
    const fs::path path = fs::path("/") / top;
    if (fs::is_symlink(path)) {
      add(words, {"--symlink", fs::read_symlink(path).string(), path.string()});
    } else if (fs::is_directory(path)) {
      add(words, {"--ro-bind", path.string(), path.string()});
    }
  }
  for (const char* dir : {"/usr", "/etc", "/sys", "/opt"}) {
    if (fs::is_directory(dir)) add(words, {"--ro-bind", dir, dir});
  }
  add(words, {"--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc", "--tmpfs", "/tmp"});
}

// The libraries ./setup.sh unpacks outside the system (nvJPEG, cuDNN's frontend: the binaries'
// run paths lead there), read-only.
void add_course_libraries(Words& words) {
  const char* home = std::getenv("HOME");
  std::vector<std::string> caches = {home != nullptr ? std::string(home) + "/.cache/course" : ""};
  for (const char* variable : {"COURSE_NVJPEG_HOME", "COURSE_CUDNN_FRONTEND_HOME"}) {
    if (const char* dir = std::getenv(variable)) caches.push_back(dir);
  }
  for (const std::string& dir : caches) {
    if (!dir.empty() && fs::is_directory(dir)) add(words, {"--ro-bind", dir, dir});
  }
}

// An empty folder in place of `dir`, made read-only once the view is complete.
void hide(Words& words, Words& made_read_only, const fs::path& dir) {
  add(words, {"--tmpfs", dir.string()});
  made_read_only.push_back(dir.string());
}

// `tree` read-only, its test_tmp/ and test_reports/ hidden, and its `hidden` sub-folder empty but
// for the trainee's own `kept` one.
void add_tree(Words& words, Words& made_read_only, const fs::path& tree, const fs::path& hidden,
              const fs::path& kept) {
  add(words, {"--ro-bind", tree.string(), tree.string()});
  for (const char* other : {"test_tmp", "test_reports"}) {
    if (fs::is_directory(tree / other)) hide(words, made_read_only, tree / other);
  }
  if (!fs::is_directory(tree / hidden)) return;
  hide(words, made_read_only, tree / hidden);
  if (fs::is_directory(tree / kept)) {
    add(words, {"--ro-bind", (tree / kept).string(), (tree / kept).string()});
  }
}

}  // namespace

std::optional<std::string> sandbox_unavailable() {
  static const std::optional<std::string> why = []() -> std::optional<std::string> {
    const TimedRun probe = run_with_limit(
        "command -v bwrap >/dev/null || exit 127; bwrap "
        "--ro-bind / / --unshare-user --unshare-net true",
        30);
    if (probe.status == 127) {
      return "no bubblewrap on this machine (apt install bubblewrap, or ./setup.sh)";
    }
    if (probe.status != 0) return "bubblewrap starts no sandbox here: " + probe.output;
    return std::nullopt;
  }();
  return why;
}

std::string sandboxed(const std::string& command, const SandboxView& view,
                      const SandboxLimits& limits) {
  const fs::path work = fs::absolute(view.work);
  const fs::path own = fs::path(view.package).parent_path();  // "graded/t3"
  COURSE_CHECK(!own.empty(), "a trainee's package is graded/<trainee>/<day>, not ", view.package);
  // bazel-out is <output base>/execroot/<workspace>/bazel-out: the runfiles' links point there.
  const fs::path output_base =
      fs::canonical(work / "bazel-out").parent_path().parent_path().parent_path();
  const fs::path bin = fs::canonical(work / "bazel-bin");
  Words words = {"bwrap",
                 "--die-with-parent",
                 "--new-session",
                 "--unshare-user",
                 "--uid",
                 "65534",
                 "--gid",
                 "65534",
                 "--unshare-pid",
                 "--unshare-ipc",
                 "--unshare-net",
                 "--unshare-uts",
                 "--unshare-cgroup-try",
                 "--cap-drop",
                 "ALL"};
  add_system(words);
  add_course_libraries(words);
  Words made_read_only = {"/"};  // the view's own folders: the mount points bwrap made
  add_tree(words, made_read_only, work, "graded", own);
  add(words, {"--ro-bind", output_base.string(), output_base.string()});
  add_tree(words, made_read_only, bin, "graded", own);
  for (const fs::path& writable : {view.scratch, view.reports}) {
    fs::create_directories(writable);
    add(words, {"--bind", fs::absolute(writable).string(), fs::absolute(writable).string()});
  }
  const std::string scratch = fs::absolute(view.scratch).string();
  for (const std::string& dir : made_read_only) add(words, {"--remount-ro", dir});
  add(words, {"--chdir", scratch, "--setenv", "HOME", scratch, "--setenv", "TMPDIR", "/tmp", "--"});
  add(words, {"prlimit", "--cpu=" + std::to_string(limits.cpu_seconds),
              "--data=" + std::to_string(limits.data_bytes),
              "--nproc=" + std::to_string(limits.processes), "--", "/bin/sh", "-c", command});
  std::string line;
  for (const std::string& word : words) line += (line.empty() ? "" : " ") + shell_quoted(word);
  return line;
}

}  // namespace course::grade
