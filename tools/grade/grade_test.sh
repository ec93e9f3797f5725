#!/usr/bin/env bash
# The class grader on a synthetic class of day 2 (multi-rank checks), made from the solutions and
# handed in every way a class does: `complete` (a git branch) has every exercise right, `stubs`
# (a folder of the untouched file) none attempted, `broken` (a zip) an exercise that does not
# compile, `deadlock` (a folder) a ring whose ranks all receive before they send and a schedule
# that aborts past its last step, `edited` (a checkout) a changed check file (only noted), a lab
# with Windows line endings (the same file), `no_average` (a .tar.gz) the gradients summed but
# not averaged (a wrong version TP2.2's check was written against) and a debugging line that
# floods the output (cut, and said in the cell), and two more wrong versions
# as folders: `forward_buckets` (TP2.3's buckets filled from the first parameter, not the last,
# and a schedule that exits with status 0 past its last step, after a test printed "[ OK ]") and
# `no_padding` (TP2.1's shards cut to n / p even without --drop-last), which also probes its
# sandbox. The scorecard is asserted cell by cell, the deadlock ends in the exercise's time
# limit, and headless Chromium renders the page.
# Run by ./test.sh outside `bazel test` (the grader runs bazel itself); the course is graded as
# committed (git archive of HEAD).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PMIX_MCA_psec=native
bazel build //tools/grade >/dev/null 2>&1 || { bazel build //tools/grade; exit 1; }
grade=bazel-bin/tools/grade/grade

class=$(mktemp -d)
trap 'rm -rf "$class"' EXIT
solution=solutions/day2_ddp/exercises.cc
fail() {
  echo "FAIL: $*"
  exit 1
}

# complete: a git repository whose branch `done` holds the solution.
git init -q "$class/complete_repo"
cp "$solution" "$class/complete_repo/exercises.cc"
git -C "$class/complete_repo" -c user.name=t -c user.email=t@example.org commit -qm start --allow-empty
git -C "$class/complete_repo" checkout -qb done
git -C "$class/complete_repo" add exercises.cc
git -C "$class/complete_repo" -c user.name=t -c user.email=t@example.org commit -qm done
# stubs: the trainee's file as the course hands it out.
mkdir "$class/stubs" && cp day2_ddp/exercises.cc "$class/stubs/"
# broken: TP2.3 misses a semicolon (the first line after its marker that pushes an index).
mkdir "$class/broken"
sed 's/^    plan.back().push_back(i);$/    plan.back().push_back(i)/' "$solution" >"$class/broken/exercises.cc"
grep -q 'push_back(i)$' "$class/broken/exercises.cc" || fail "the broken fixture did not apply"
(cd "$class/broken" && zip -q ../broken.zip exercises.cc)
# deadlock: every rank receives from its left before sending to its right.
mkdir "$class/deadlock"
awk '/comm.exchange\(\{parallel::send_to\(chunk_of\(send_chunk\), next\),$/ && !done {
       print "    comm.recv(buffer, previous)->wait();";
       print "    comm.send(chunk_of(send_chunk), next)->wait();";
       getline; getline; done = 1; next } { print }' "$solution" >"$class/deadlock/exercises.cc"
grep -q 'comm.recv(buffer, previous)' "$class/deadlock/exercises.cc" ||
  fail "the deadlock fixture did not apply"
# ... and aborts where its schedule runs out of steps (TP2.5: "cannot happen").
schedule_start='^  const float peak = s.base_lr \* static_cast<float>(s.global_batch) / s.base_batch;$'
sed -i "s|$schedule_start|  if (step > s.total_steps) std::abort();\n&|" "$class/deadlock/exercises.cc"
grep -q 'std::abort();' "$class/deadlock/exercises.cc" || fail "the abort fixture did not apply"
# edited: a checkout whose check was changed (said in its row, never built: the course's is) and
# whose lab has Windows line endings (the same file).
mkdir -p "$class/edited/day2_ddp"
cp "$solution" "$class/edited/day2_ddp/exercises.cc"
{ cat day2_ddp/check_test.cc; echo "// passes now"; } >"$class/edited/day2_ddp/check_test.cc"
sed 's/$/\r/' day2_ddp/lab.cc >"$class/edited/day2_ddp/lab.cc"
# no_average: the gradients summed over the ranks, not averaged, and a debugging line left in
# that floods the output (7 MB a process: the log keeps its first and last 2 MiB).
mkdir "$class/no_average"
{
  echo "#include <cstdio>"
  sed 's|^    course::scale_(p->grad, 1.0f / static_cast<float>(comm.size()));|    static const bool flooded = [] { for (int i = 0; i < 100000; ++i) std::puts("a trainee'"'"'s debugging line, printed 100000 times by each process"); return true; }(); (void)flooded;|' "$solution"
} >"$class/no_average/exercises.cc"
grep -q "static const bool flooded" "$class/no_average/exercises.cc" || fail "the no_average fixture did not apply"
tar -czf "$class/no_average.tar.gz" -C "$class/no_average" exercises.cc
wrong_version() { # name 'sed expression' pattern-that-must-then-be-there
  mkdir "$class/$1"
  sed "$2" "$solution" >"$class/$1/exercises.cc"
  grep -qF "$3" "$class/$1/exercises.cc" || fail "the $1 fixture did not apply"
}
wrong_version forward_buckets 's/for (size_t i = param_bytes.size(); i-- > 0;) {/for (size_t i = 0; i < param_bytes.size(); ++i) {/' \
  'for (size_t i = 0; i < param_bytes.size(); ++i)'
# forward_buckets also ends the program where its schedule runs out of steps (TP2.5), with exit
# status 0 after the first test's "[       OK ]": no report, so no pass.
sed -i "s|$schedule_start|  if (step > s.total_steps) std::exit(0);  // training is over\n&|" \
  "$class/forward_buckets/exercises.cc"
grep -q 'std::exit(0);' "$class/forward_buckets/exercises.cc" || fail "the exit fixture did not apply"
wrong_version no_padding 's|const int64_t per_rank = options.drop_last ? n / p : (n + p - 1) / p;|const int64_t per_rank = n / p;|' \
  'const int64_t per_rank = n / p;'

# no_padding also carries code that looks around from inside the check before it runs (a static
# initialiser): it reads the course's solutions and the other trainees' packages wherever it
# finds them above its binary or its working folder, or in the instructor's checkout, and writes
# a file in each of those folders. In its sandbox it must find nothing and write only in its
# private /tmp.
probe_mark="run $$ at $(date +%s%N)"
{
  cat <<PROBE
#include <cstdio>
#include <filesystem>
#include <fstream>
namespace {
namespace fs = std::filesystem;
// The trainee's own folder under graded/ (tN), from the binary's path.
std::string own_id(const fs::path& binary) {
  bool next = false;
  for (const fs::path& part : binary) {
    if (next) return part.string();
    next = part == "graded";
  }
  return "";
}
void look_in(const fs::path& dir, const std::string& own, int& places) {
  ++places;
  const fs::path solution = dir / "solutions/day2_ddp/exercises.cc";
  if (std::ifstream(solution)) std::printf("PROBE read %s\\n", solution.c_str());
  std::error_code ec;
  for (const auto& other : fs::directory_iterator(dir / "graded", ec)) {
    if (other.path().filename() != own) std::printf("PROBE saw %s\\n", other.path().c_str());
  }
  const fs::path written = dir / "probe_escaped";
  if (std::ofstream(written) << "x") std::printf("PROBE wrote %s\\n", written.c_str());
}
// At compile time: the solutions through the compiler's working folder (the build's sandbox,
// <work folder>/bazel-output/sandbox/<strategy>/<n>/execroot/course, or the execroot itself) or
// at the instructor's checkout, and another trainee's hand-in where the instructor keeps it.
// What it finds is not among the action's inputs, so Bazel's cache would hand a later run the
// object of an earlier one: this run's own mark makes the compile a new action ($probe_mark).
#if __has_include("/proc/self/cwd/../../../../../../course/solutions/day2_ddp/exercises.cc") || \\
    __has_include("/proc/self/cwd/../../../course/solutions/day2_ddp/exercises.cc") || \\
    __has_include("$PWD/solutions/day2_ddp/exercises.cc") || \\
    __has_include("$class/complete_repo/exercises.cc")
[[maybe_unused]] const bool compiled = std::printf("PROBE saw the solutions at compile time\\n");
#endif
const bool probed = [] {
  int places = 0;
  std::error_code ec;
  const fs::path binary = fs::read_symlink("/proc/self/exe", ec);
  for (const fs::path& start : {binary, fs::current_path(ec).parent_path()}) {
    for (fs::path dir = start.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      look_in(dir, own_id(binary), places);
      if (dir == dir.parent_path()) break;
    }
  }
  look_in("$PWD", own_id(binary), places);
  std::printf("PROBE looked in %d folders\\n", places);
  return true;
}();
}  // namespace
PROBE
} >>"$class/no_padding/exercises.cc"

out="$class/grades"
start=$SECONDS
"$grade" --day day2_ddp --out "$out" --exercise-limit 10 --root "$PWD" --keep-work \
  complete="$class/complete_repo@done" "$class/stubs" "$class/broken.zip" "$class/deadlock" \
  "$class/edited" "$class/no_average.tar.gz" "$class/forward_buckets" "$class/no_padding" |
  tee "$class/grade.out"
echo "graded 8 trainees in $((SECONDS - start)) s"

csv="$out/scorecard.csv"
cell() { # trainee exercise -> "verdict,message"
  awk -F, -v t="$1" -v e="$2" '$1 == t && $2 == e { print $3 "," $4 }' "$csv"
}
expect() { # trainee exercise verdict [message part]
  local got
  got=$(cell "$1" "$2")
  [[ ${got%%,*} == "$3" ]] || fail "$1 $2: expected $3, got '$got'"
  [[ -z ${4:-} || $got == *"$4"* ]] || fail "$1 $2: the message '$got' does not say '$4'"
}
for e in TP2.1 TP2.2 TP2.3 TP2.4 TP2.5; do
  expect complete $e passed
  expect stubs $e "not attempted"
  expect edited $e passed  # its own check not used: graded with the course's
done
expect broken TP2.3 "did not compile" "exercises.cc:"
for e in TP2.1 TP2.2 TP2.4 TP2.5; do expect broken $e passed; done
expect deadlock TP2.4 "timed out" "the exercise's limit"
expect deadlock TP2.5 crashed "signal 6 (Aborted): mpirun noticed"
for e in TP2.1 TP2.2 TP2.3; do expect deadlock $e passed; done
expect no_average TP2.2 failed
grep -q "^no_average TP2.2 failed: check_test.cc:[0-9]*: .*; its output cut: [0-9.]* MiB left out of the log, its first and last 2.0 MiB kept$" \
  "$class/grade.out" || fail "no_average's flood is not said in its cell"
for e in TP2.1 TP2.3 TP2.4 TP2.5; do expect no_average $e passed; done
expect forward_buckets TP2.3 failed check_test.cc
expect forward_buckets TP2.5 failed "wrote no test report"
for e in TP2.1 TP2.2 TP2.4; do expect forward_buckets $e passed; done
expect no_padding TP2.1 failed check_test.cc
for e in TP2.2 TP2.3 TP2.4 TP2.5; do expect no_padding $e passed; done
grep -q "^edited note: day2_ddp/check_test.cc differs from the course's (not used" \
  "$class/grade.out" || fail "the edited checkout's note"
[[ $(wc -l <"$csv") == 41 ]] || fail "the scorecard has $(wc -l <"$csv") lines, not 1 + 8 x 5"
# The work tree kept (--keep-work) to be searched too; the probe may write only in its private
# /tmp, which the host never sees.
work_tree=$(sed -n 's/^the work tree: //p' "$class/grade.out")
[[ -d $work_tree ]] || fail "no work tree kept"
grep -qh "^PROBE looked in [0-9]* folders" "$out"/logs/no_padding/*.log || fail "the probe did not run"
! grep -h "^PROBE \(read\|saw\)" "$out"/logs/no_padding/*.log || fail "the probe got out"
! grep -h "^PROBE wrote" "$out"/logs/no_padding/*.log | grep -v "^PROBE wrote /tmp/" ||
  fail "the probe wrote outside its private /tmp"
escaped=$(
  find "$class" "$PWD" "$(dirname "$work_tree")" -name probe_escaped
  find /tmp -maxdepth 1 -name probe_escaped
)
rm -rf "$(dirname "$work_tree")"
[[ -z $escaped ]] || fail "the probe wrote $escaped"
echo "ok: no_padding's probe, in its sandbox, found no solutions, no other trainee, nothing writable"
grep -q "^no_average  *ok  *FAIL  *ok  *ok  *ok  *4/5$" "$class/grade.out" ||
  fail "the terminal table's no_average row"
grep -qE "^class +6/7/8 +6/7/8 +5/7/8 +6/7/8 +5/7/8 *$" "$class/grade.out" ||
  fail "the class's totals (passed/attempted/trainees)"
grep -q "^day2_ddp, graded against course commit $(git rev-parse HEAD)$" "$class/grade.out" ||
  fail "the scorecard does not name the course's commit"
[[ -s $out/logs/deadlock/TP2.4.log ]] || fail "no log of the deadlock"
# What was graded, per hand-in: the branch's commit, a folder's file's and an archive's SHA-256.
hand_in() { awk -F, -v t="$1" '$1 == t { print $8; exit }' "$csv"; }
[[ $(hand_in complete) == "commit $(git -C "$class/complete_repo" rev-parse --short=12 done)" ]] ||
  fail "complete's hand-in is '$(hand_in complete)'"
[[ $(hand_in stubs) == "exercises.cc sha256 $(sha256sum <day2_ddp/exercises.cc | cut -c1-12)" ]] ||
  fail "stubs' hand-in is '$(hand_in stubs)'"
[[ $(hand_in no_average) == "sha256 $(sha256sum <"$class/no_average.tar.gz" | cut -c1-12)" ]] ||
  fail "no_average's hand-in is '$(hand_in no_average)'"
echo "ok: every cell of the scorecard as expected"

# A --root that is not the course: one message, and no work folder left behind.
work_folders() { find /tmp -maxdepth 1 -name 'course-grade-*' | wc -l; }
before=$(work_folders)
if wrong_root=$("$grade" --day day2_ddp --out "$class/wrong_root" --root "$class" "$class/stubs" 2>&1) ||
  [[ $wrong_root != "error: --root $class is not a checkout of the course: it has no day2_ddp/"* ]]; then
  fail "a --root that is not the course: $wrong_root"
fi
[[ $(work_folders) == "$before" ]] || fail "a work folder was left"
echo "ok: a --root that is not the course is refused with one message"

# Stopped by a signal (scancel's SIGTERM) once its build runs: one line, status 143, its Bazel
# server killed and its work folder gone.
folders_before=$(find /tmp -maxdepth 1 -name 'course-grade-*' | sort)
"$grade" --day day2_ddp --out "$class/stopped" --root "$PWD" "$class/stubs" >"$class/stopped.out" 2>&1 &
grader=$!
server_pid=""
for _ in $(seq 1 600); do
  folder=$(comm -13 <(echo "$folders_before") <(find /tmp -maxdepth 1 -name 'course-grade-*' | sort))
  [[ -n $folder && -s $folder/bazel-output/server/server.pid.txt ]] &&
    server_pid=$(cat "$folder/bazel-output/server/server.pid.txt") && break
  sleep 0.1
done
[[ -n $server_pid ]] || fail "the grader to be stopped started no build"
kill -TERM "$grader"
status=0
wait "$grader" || status=$?
[[ $status == 143 ]] || fail "the grader stopped by SIGTERM exited with $status"
[[ $(cat "$class/stopped.out") == *"grading stopped by Terminated" ]] ||
  fail "the stopped grader said: $(cat "$class/stopped.out")"
[[ ! -e $folder ]] || fail "the stopped grader left $folder"
alive() { [[ $(ps -o stat= -p "$1" 2>/dev/null) == [^Z]* ]]; }  # a zombie waits for init only
for _ in $(seq 1 50); do alive "$server_pid" && sleep 0.1; done
! alive "$server_pid" || fail "the stopped grader left its Bazel server ($server_pid)"
echo "ok: a grader stopped by SIGTERM kills its build and removes its work folder"

chromium=(chromium --headless --no-sandbox --disable-gpu --window-size=1400,1000)
dom=$(timeout 120 "${chromium[@]}" --dump-dom "file://$out/index.html" 2>/dev/null) ||
  fail "chromium could not open the scorecard"
[[ $(grep -o "<tr" <<<"$dom" | wc -l) == 10 ]] || fail "the rendered table: $dom"
grep -q '<td class="timed-out"><a href="logs/deadlock/TP2.4.log">timed out</a><div class="message">stopped after 10 s' \
  <<<"$dom" || fail "the deadlock's cell does not link its log and say its message: $dom"
grep -q '<td class="trainee">no_average<div class="note">sha256 ' <<<"$dom" ||
  fail "no_average and its hand-in's digest are not on the page"
echo "ok: headless Chromium renders the scorecard, its cells linking to their logs"

# Practice: a trainee's own clone, day 1 solved but TP1.4 off by one (the first recorded step
# is the last warm-up one), graded from inside it: their scorecard, then the sheet's TP1.4.
git clone -q . "$class/mine"
sed 's/return step >= first \&\& step < first + schedule.active;/return step >= first - 1 \&\& step < first + schedule.active;/' \
  solutions/day1_gpu/exercises.cc >"$class/mine/day1_gpu/exercises.cc"
grep -q 'first - 1' "$class/mine/day1_gpu/exercises.cc" || fail "the practice fixture did not apply"
practice=$(cd "$class/mine" && "$OLDPWD/$grade" --day day1_gpu --practice --root . --out "$class/mine/grades")
grep -q "^you  *ok  *ok  *ok  *FAIL  *ok  *4/5$" <<<"$practice" || fail "practice scorecard: $practice"
grep -q "^== TP1.4 failed: check_test.cc:[0-9]*:" <<<"$practice" || fail "practice: no TP1.4 message"
grep -q "^### TP1.4: the profiler$" <<<"$practice" || fail "practice: no sheet section: $practice"
! grep -q "^### TP1.5" <<<"$practice" || fail "practice: the section did not end at TP1.5's"
echo "ok: practice mode grades the trainee's own tree and prints TP1.4's section of the sheet"
echo "grade tests passed"
