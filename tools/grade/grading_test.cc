// The grader's parts, without building anything: the exercises of a file (stubs, a compiler
// error's exercise, a stub put back), the checks' suites and output read per exercise, the
// scorecard's CSV read back and its table, and hand-ins of every kind (a checkout, loose files,
// an archive, a git branch) with a changed course file refused by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "common/core/error.h"
#include "tools/grade/check_results.h"
#include "tools/grade/class_build.h"
#include "tools/grade/exercise_regions.h"
#include "tools/grade/scorecard.h"
#include "tools/grade/submission.h"
#include "tools/grade/system.h"

namespace course::grade {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

const char* kFile = R"(#include "x.h"

int first() {
  // BEGIN EXERCISE TP9.1: add; then return
  ::course::exercise_todo("TP9.1", "add; then \"return\"",
                          "day9/README.md#tp91");
  // END EXERCISE
}

int second(int a) {
  // BEGIN EXERCISE TP9.2: double it
  // a comment the trainee kept
  return 2 * a;
  // END EXERCISE
}
)";

TEST(ExerciseRegions, MarkersStubsAndTheirSheetSections) {
  const std::vector<ExerciseRegion> regions = exercise_regions("f.cc", kFile);
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions[0].id, "TP9.1");
  EXPECT_EQ(regions[0].task, "add; then return");
  EXPECT_EQ(regions[0].begin_line, 4);
  EXPECT_EQ(regions[0].end_line, 7);
  EXPECT_TRUE(regions[0].is_stub());  // its text holds ';' and escaped quotes
  EXPECT_EQ(regions[0].sheet_anchor(), "day9/README.md#tp91");
  EXPECT_FALSE(regions[1].is_stub());
  ExerciseRegion started = regions[0];
  started.body.push_back("  int x = 1;");  // the stub and a first line of their own
  EXPECT_FALSE(started.is_stub());
  ExerciseRegion other = regions[0];
  other.id = "TP9.3";  // another exercise's stub is not this one's
  EXPECT_FALSE(other.is_stub());
}

TEST(ExerciseRegions, AnErrorsLineFindsItsExerciseAndTheStubGoesBack) {
  const std::vector<ExerciseRegion> regions = exercise_regions("f.cc", kFile);
  EXPECT_EQ(region_at_line(regions, 13)->id, "TP9.2");
  EXPECT_EQ(region_at_line(regions, 5)->id, "TP9.1");
  EXPECT_EQ(region_at_line(regions, 11), nullptr);  // the marker itself
  EXPECT_EQ(region_at_line(regions, 2), nullptr);
  const std::string back = with_body(kFile, "TP9.2", regions[0].body);
  const std::vector<ExerciseRegion> again = exercise_regions("f.cc", back);
  EXPECT_EQ(again[1].body, regions[0].body);
  EXPECT_EQ(again[0].body, regions[0].body);
  EXPECT_THAT(back, HasSubstr("int second(int a) {\n  // BEGIN EXERCISE TP9.2: double it\n  "
                              "::course::exercise_todo("));
  EXPECT_THAT([&] { with_body(kFile, "TP9.7", {}); },
              testing::ThrowsMessage<Error>(HasSubstr("no exercise TP9.7")));
}

TEST(ExerciseRegions, BrokenMarkersAreErrorsWithTheLine) {
  EXPECT_THAT([] { exercise_regions("f.cc", "// BEGIN EXERCISE TP1.1: x\nint a;\n"); },
              testing::ThrowsMessage<Error>(HasSubstr("f.cc:1: exercise TP1.1 has no END")));
  EXPECT_THAT([] { exercise_regions("f.cc", "x\n  // END EXERCISE\n"); },
              testing::ThrowsMessage<Error>(HasSubstr("f.cc:2: END EXERCISE without its BEGIN")));
  EXPECT_THAT(
      [] { exercise_regions("f.cc", "// BEGIN EXERCISE TP1.1: x\n// BEGIN EXERCISE TP1.2: y\n"); },
      testing::ThrowsMessage<Error>(HasSubstr("f.cc:2: exercise TP1.2 begins inside TP1.1")));
}

TEST(CheckResults, SuitesNameTheirExercises) {
  EXPECT_THAT(exercises_of_suite("TP2_4"), testing::ElementsAre("TP2.4"));
  EXPECT_THAT(exercises_of_suite("TP4_19ByHand"), testing::ElementsAre("TP4.19"));
  EXPECT_THAT(exercises_of_suite("TP4_6_8"), testing::ElementsAre("TP4.6", "TP4.7", "TP4.8"));
  EXPECT_THAT(exercises_of_suite("Rates/TP3_7SuggestRate"), testing::ElementsAre("TP3.7"));
  EXPECT_TRUE(exercises_of_suite("GemmTest").empty());
  const auto filters = exercise_filters(
      "TP2_1.\n  PaddedShards\n  DropLast\nTP4_6_8.\n  Pipeline\nTP4_7.\n  A\nHelper.\n  B\n"
      "Seeds/TP3_6SweepRates.\n  Decades/0  # GetParam() = 1\n");
  EXPECT_EQ(filters.at("TP2.1"), "TP2_1.*");
  EXPECT_EQ(filters.at("TP4.6"), "TP4_6_8.*");
  EXPECT_EQ(filters.at("TP4.7"), "TP4_6_8.*:TP4_7.*");
  EXPECT_EQ(filters.at("TP3.6"), "Seeds/TP3_6SweepRates.*");
  EXPECT_EQ(filters.size(), 5u);
}

// A gtest XML report of `completed` tests, `failures` of them failed with `message`.
std::string report_xml(int completed, int failures, const std::string& message = "") {
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"" +
                    std::to_string(completed) + "\" failures=\"" + std::to_string(failures) +
                    "\" disabled=\"0\" errors=\"0\" time=\"0\" name=\"AllTests\">\n";
  for (int i = 0; i < completed; ++i) {
    xml += "<testcase name=\"T" + std::to_string(i) + "\" status=\"run\" result=\"completed\">";
    if (i < failures) xml += "<failure message=\"" + message + "\" type=\"\"></failure>";
    xml += "</testcase>\n";
  }
  return xml + "</testsuites>\n";
}

TEST(CheckResults, AReportReadsAsItsCompletedAndFailedTests) {
  const GtestReport passed = read_gtest_report(report_xml(3, 0));
  EXPECT_EQ(passed.completed, 3);
  EXPECT_EQ(passed.failed, 0);
  const GtestReport failed = read_gtest_report(
      report_xml(2, 1, "c.cc:4&#x0A;Expected: &quot;a&quot; &lt; b &amp;&amp; c"));
  EXPECT_EQ(failed.failed, 1);
  EXPECT_EQ(failed.first_failure, "c.cc:4 Expected: \"a\" < b && c");
  EXPECT_EQ(read_gtest_report("[       OK ] not a report").completed, 0);
  // A count no gtest writes (a report the trainee's code could write): not read as one.
  EXPECT_EQ(read_gtest_report("<testsuites tests=\"1\" failures=\"99999999999\" errors=\"0\">"
                              "<testcase result=\"completed\"/></testsuites>")
                .completed,
            0);
}

TEST(CheckResults, ARunReadsAsPassedOrItsFirstFailure) {
  const GtestReport ok = read_gtest_report(report_xml(1, 0));
  const std::string passed =
      "[ RUN      ] TP1_1.A\n[       OK ] TP1_1.A (0 ms)\n[  PASSED  ] 1 test.\n";
  EXPECT_EQ(read_check_run(passed, 0, {ok}, 1).verdict, Verdict::kPassed);
  EXPECT_EQ(read_check_run(passed, 0, {ok, ok}, 2).verdict, Verdict::kPassed);
  // The console is not the verdict: a failed report, or a rank without one, is no pass.
  const std::string forged = passed + "[  PASSED  ] 5 tests.\n";
  const ExerciseResult lied =
      read_check_run(forged, 0, {read_gtest_report(report_xml(1, 1, "x.cc:9&#x0A;wrong"))}, 1);
  EXPECT_EQ(lied.verdict, Verdict::kFailed);
  EXPECT_EQ(lied.message, "x.cc:9 wrong");
  EXPECT_EQ(read_check_run(passed, 0, {ok}, 2).message, "1 of 2 processes wrote no test report");
  // Exit 0 but nothing ran (a filter matching nothing): not a pass.
  EXPECT_EQ(
      read_check_run("[==========] 0 tests ran.\n", 0, {read_gtest_report(report_xml(0, 0))}, 1)
          .message,
      "no test of the exercise ran");
  const std::string failed =
      "[ RUN      ] TP2_2.Avg\nday2_ddp/check_test.cc:93: Failure\nExpected equality of these "
      "values:\n  a\n    Which is: 1\n\nday2_ddp/check_test.cc:93: Failure\nagain\n"
      "rank 1 failed TP2_2.Avg at day2_ddp/check_test.cc:93: Expected; aborting every rank of the "
      "job\n";
  const ExerciseResult r = read_check_run(failed, 1, {}, 2);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.message, "check_test.cc:93: Expected equality of these values: a Which is: 1");
  // Only the abort line (the rank's stdout lost): that line.
  const ExerciseResult aborted = read_check_run(
      "rank 0 failed TP2_3.X at c.cc:4: Value of: y; aborting every rank of the job\n", 1, {}, 2);
  EXPECT_EQ(aborted.message,
            "rank 0 failed TP2_3.X at c.cc:4: Value of: y; aborting every rank of the job");
  // An exception the test did not expect: gtest knows no line.
  EXPECT_EQ(read_check_run("[ RUN      ] TP3_4.A\nunknown file: Failure\nC++ exception with "
                           "description \"x\" thrown in the test body.\n[  FAILED  ] TP3_4.A\n",
                           1, {}, 1)
                .message,
            "unknown file: C++ exception with description \"x\" thrown in the test body.");
  // A crash: the signal named, and the last line.
  const ExerciseResult crashed =
      read_check_run("[ RUN      ] TP1_2.A\nSegmentation fault\n", 139, {}, 1);
  EXPECT_EQ(crashed.verdict, Verdict::kCrashed);
  EXPECT_EQ(crashed.message, "signal 11 (Segmentation fault): Segmentation fault");
  EXPECT_EQ(read_check_run("out\n-----\n\n", 3, {}, 1).message, "exit 3: out");
}

TEST(Scorecard, TheCsvReadsBackAndTheTableCountsPasses) {
  Scorecard card{"day9", {"TP9.1", "TP9.2"}, {}, "course commit abc"};
  card.trainees.push_back({"ann",
                           {{"TP9.1", {Verdict::kPassed, "", "logs/ann/TP9.1.log", 2.5}},
                            {"TP9.2", {Verdict::kFailed, "a, \"quoted\" message", "l"}}},
                           "",
                           "commit 0123456789ab"});
  card.trainees.push_back({"bob",
                           {{"TP9.1", {Verdict::kRefused, "no exercise file", ""}},
                            {"TP9.2", {Verdict::kRefused, "no exercise file", ""}}},
                           "x.cc, y.cc differ"});
  const std::string csv = scorecard_csv(card);
  EXPECT_THAT(csv, HasSubstr("ann,TP9.1,passed,,logs/ann/TP9.1.log,2.5,,commit 0123456789ab\n"));
  EXPECT_THAT(csv, HasSubstr("ann,TP9.2,failed,\"a, \"\"quoted\"\" message\",l,0.0,,commit "
                             "0123456789ab\n"));
  const std::vector<TraineeScore> back = trainees_from_csv(csv);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].note, "x.cc, y.cc differ");
  EXPECT_EQ(back[0].hand_in, "commit 0123456789ab");
  EXPECT_EQ(back[0].results.at("TP9.2").message, "a, \"quoted\" message");
  EXPECT_EQ(back[0].results.at("TP9.1").log, "logs/ann/TP9.1.log");
  EXPECT_EQ(back[0].results.at("TP9.1").seconds, 2.5);
  EXPECT_EQ(back[1].results.at("TP9.1").verdict, Verdict::kRefused);
  const std::string table = scorecard_table(card);
  EXPECT_THAT(table, HasSubstr("day9, graded against course commit abc\n"));
  EXPECT_THAT(table, HasSubstr("ann      ok       FAIL     1/2\n"));
  EXPECT_THAT(table, HasSubstr("class    1/1/2    0/1/2"));  // passed / attempted / trainees
  EXPECT_THAT(table, HasSubstr("bob      REFUSED  REFUSED  0/2\n"));
  EXPECT_THAT(table, HasSubstr("ann TP9.2 failed: a, \"quoted\" message\n"));
  EXPECT_THAT(table, HasSubstr("bob refused: no exercise file\n"));  // once, not per exercise
  EXPECT_THAT(table, HasSubstr("bob note: x.cc, y.cc differ\n"));
  EXPECT_THAT([] { trainees_from_csv("name,score\n"); },
              testing::ThrowsMessage<Error>(HasSubstr("not a scorecard CSV")));
  EXPECT_THAT(
      [] {
        trainees_from_csv(
            "trainee,exercise,verdict,message,log,seconds,note,hand_in\n"
            "ann,TP9.1,passed,,l,soon,,\n");
      },
      testing::ThrowsMessage<Error>(HasSubstr("\"soon\" is not a cell's seconds")));
  const std::string html = scorecard_html(card, "day9 <class>");
  EXPECT_THAT(html, HasSubstr("<title>day9 &lt;class&gt;</title>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"failed\"><a href=\"l\">failed</a><div "
                              "class=\"message\">a, &quot;quoted&quot; message</div></td>"));
  EXPECT_THAT(html, HasSubstr("bob<div class=\"note\">x.cc, y.cc differ</div>"));
  EXPECT_THAT(html, HasSubstr("ann<div class=\"note\">commit 0123456789ab</div>"));
  EXPECT_THAT(html, HasSubstr("ann/TP9.1.log\">passed</a><div class=\"time\">2.5 s</div>"));
  EXPECT_THAT(html, HasSubstr("<td>1 / 1 / 2</td><td>0 / 1 / 2</td>"));
  EXPECT_THAT(html, HasSubstr("Graded against course commit abc."));
}

class Submissions : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") /
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
    write_text(root_ / "course/day1_gpu/exercises.cc", "stub\n");
    write_text(root_ / "course/day1_gpu/check_test.cc", "check\n");
    write_text(root_ / "course/common/lib.cc", "lib\n");
  }
  Submission read(const std::string& spec) {
    return read_submission(spec, day_spec("day1_gpu"), (root_ / "course").string(),
                           (root_ / "scratch").string());
  }
  fs::path root_;
};

TEST_F(Submissions, ACheckoutOrLooseFilesGiveTheExerciseFiles) {
  write_text(root_ / "ann/day1_gpu/exercises.cc", "ann's\n");
  write_text(root_ / "ann/day1_gpu/check_test.cc", "check\n");  // the course's own: fine
  write_text(root_ / "ann/notes.txt", "mine\n");                // not the course's: ignored
  const Submission ann = read((root_ / "ann").string());
  EXPECT_EQ(ann.name, "ann");
  EXPECT_EQ(ann.refused, "");
  EXPECT_EQ(ann.files.at("exercises.cc"), "ann's\n");
  EXPECT_EQ(ann.digest, "exercises.cc sha256 0daba8901b98");  // of "ann's\n", by hashlib
  write_text(root_ / "loose/exercises.cc", "loose\n");
  const Submission loose = read("bob=" + (root_ / "loose").string());
  EXPECT_EQ(loose.name, "bob");
  EXPECT_EQ(loose.files.at("exercises.cc"), "loose\n");
}

TEST_F(Submissions, TheDaysChangedFilesAreListedOtherFilesAndLineEndingsIgnored) {
  write_text(root_ / "eve/day1_gpu/exercises.cc", "eve's\n");
  write_text(root_ / "eve/day1_gpu/check_test.cc", "check, improved\n");
  write_text(root_ / "eve/common/lib.cc", "lib, improved\n");  // outside the day: not compared
  const Submission eve = read((root_ / "eve").string());
  EXPECT_EQ(eve.refused, "");
  EXPECT_EQ(eve.files.at("exercises.cc"), "eve's\n");
  EXPECT_EQ(eve.differing, std::vector<std::string>{"day1_gpu/check_test.cc"});
  write_text(root_ / "flat/exercises.cc", "x\n");
  write_text(root_ / "flat/check_test.cc", "check\r\n");  // a Windows editor's: the same
  EXPECT_TRUE(read((root_ / "flat").string()).differing.empty());
  write_text(root_ / "empty/README", "nothing\n");
  EXPECT_THAT(read((root_ / "empty").string()).refused, HasSubstr("no exercise file of day1_gpu"));
  EXPECT_THAT([&] { read((root_ / "nobody").string()); },
              testing::ThrowsMessage<Error>(HasSubstr("does not exist")));
}

TEST_F(Submissions, ArchivesAndGitBranchesAreUnpacked) {
  write_text(root_ / "src/exercises.cc", "packed\n");
  const std::string src = shell_quoted((root_ / "src").string());
  ASSERT_EQ(std::system(("tar -czf " + shell_quoted((root_ / "tom.tar.gz").string()) + " -C " +
                         src + " exercises.cc")
                            .c_str()),
            0);
  const Submission tom = read((root_ / "tom.tar.gz").string());
  EXPECT_EQ(tom.name, "tom");
  EXPECT_EQ(tom.files.at("exercises.cc"), "packed\n");
  EXPECT_THAT(tom.digest, testing::MatchesRegex("sha256 [0-9a-f]{12}"));
  ASSERT_EQ(std::system(("cd " + src +
                         " && git init -q && git add exercises.cc && git -c "
                         "user.name=t -c user.email=t@example.org commit -qm one && git branch "
                         "first && echo second > exercises.cc && git -c user.name=t -c "
                         "user.email=t@example.org commit -qam two")
                            .c_str()),
            0);
  const Submission first = read((root_ / "src").string() + "@first");
  EXPECT_EQ(first.name, "src-first");
  EXPECT_EQ(first.files.at("exercises.cc"), "packed\n");
  const TimedRun commit = run_with_limit("git -C " + src + " rev-parse first", 60);
  EXPECT_EQ(first.digest, "commit " + commit.output.substr(0, 12));
  // The archive's own digest: another archive of other contents differs.
  ASSERT_EQ(std::system(("tar -czf " + shell_quoted((root_ / "tom.tar.gz").string()) + " -C " +
                         src + " exercises.cc")
                            .c_str()),
            0);
  EXPECT_NE(read((root_ / "tom.tar.gz").string()).digest, tom.digest);
  EXPECT_THAT([&] { read((root_ / "src").string() + "@nobranch"); },
              testing::ThrowsMessage<Error>(HasSubstr("read nobranch of the git repository")));
  write_text(root_ / "x.rar", "?");
  EXPECT_THAT([&] { read((root_ / "x.rar").string()); },
              testing::ThrowsMessage<Error>(HasSubstr("is not a folder, a git repository")));
}

// A name is checked before anything is written: a hand-in named out of its folder (a relative
// climb, an absolute path, a slash) is refused naming the hand-in, and nothing lands outside the
// grader's scratch folder, whatever the name.
TEST_F(Submissions, ANameThatIsNoTraineesIdIsRefusedBeforeAnythingIsWritten) {
  write_text(root_ / "src/exercises.cc", "packed\n");
  const std::string archive = (root_ / "a.tar").string();
  ASSERT_EQ(std::system(("tar -cf " + shell_quoted(archive) + " -C " +
                         shell_quoted((root_ / "src").string()) + " exercises.cc")
                            .c_str()),
            0);
  for (const std::string name :
       {"../../escaped", "/tmp/escaped_grade", "a/b", "..", ".", "sp ace", "tab\tname"}) {
    SCOPED_TRACE(name);
    EXPECT_THAT([&] { read(name + "=" + archive); },
                testing::ThrowsMessage<Error>(
                    AllOf(HasSubstr("the hand-in " + name + "=" + archive + " is named '" + name +
                                    "', not a trainee's id"),
                          HasSubstr("name it ID=" + archive))));
  }
  EXPECT_FALSE(fs::exists(root_ / "escaped"));
  EXPECT_FALSE(fs::exists("/tmp/escaped_grade"));
  EXPECT_FALSE(fs::exists(root_ / "scratch"));  // refused before the scratch folder was made
  // A file name that is no id is refused the same way, and a plain one unpacks inside scratch.
  fs::copy_file(archive, root_ / "Ann Lee.tar");
  EXPECT_THAT([&] { read((root_ / "Ann Lee.tar").string()); },
              testing::ThrowsMessage<Error>(HasSubstr("is named 'Ann Lee', not a trainee's id")));
  EXPECT_EQ(read("ann.lee_2-b=" + archive).files.at("exercises.cc"), "packed\n");
  EXPECT_TRUE(fs::exists(root_ / "scratch/unpacked/exercises.cc"));
}

// The name a hand-in gives: its NAME=, else its file's, archive's or repository's (and branch's).
TEST(HandInNames, TheNameOrTheFilesOwn) {
  EXPECT_EQ(trainee_name("bob=/srv/x.zip"), "bob");
  EXPECT_EQ(trainee_name("/srv/hand-ins/tom.tar.gz"), "tom");
  EXPECT_EQ(trainee_name("/srv/hand-ins/ann/"), "ann");
  EXPECT_EQ(trainee_name("/srv/no-such-repo@first"), "no-such-repo-first");
}

// Under `bazel run` the grader starts in its runfiles tree: relative hand-ins are read from the
// folder the instructor ran it in.
TEST(HandInPaths, RelativeOnesAreReadFromWhereTheCommandStarted) {
  ::setenv("BUILD_WORKING_DIRECTORY", "/home/teacher/class", 1);
  EXPECT_EQ(spec_from_invocation("alice.zip"), "/home/teacher/class/alice.zip");
  EXPECT_EQ(spec_from_invocation("carol=hand-ins/c.tar.gz"),
            "carol=/home/teacher/class/hand-ins/c.tar.gz");
  EXPECT_EQ(spec_from_invocation("repo@first"), "/home/teacher/class/repo@first");
  EXPECT_EQ(spec_from_invocation("dan=/srv/dan"), "dan=/srv/dan");
  ::unsetenv("BUILD_WORKING_DIRECTORY");
  EXPECT_EQ(spec_from_invocation("alice.zip"), "alice.zip");
}

// The build hides the checkout and each hand-in that exists (by its real path, a repository's
// @REF and a NAME= taken off), never a folder that holds the work tree.
TEST_F(Submissions, TheBuildHidesTheCheckoutAndTheHandInsButNotTheWorkTree) {
  write_text(root_ / "class/ann/exercises.cc", "ann's\n");
  write_text(root_ / "class/bob.zip", "zip\n");
  fs::create_directories(root_ / "class/repo");
  fs::create_directory_symlink(root_ / "class/ann", root_ / "ann_link");
  const fs::path work = root_ / "grading/work/course";
  fs::create_directories(work);
  const std::string c = (root_ / "class").string();
  const std::vector<fs::path> hidden = hidden_from_build(
      root_ / "course",
      {c + "/ann", "bob=" + c + "/bob.zip", c + "/repo@done", (root_ / "ann_link").string(),
       c + "/missing.tar", root_.string(), (root_ / "grading").string()},
      work);
  const fs::path real = fs::canonical(root_);
  EXPECT_THAT(hidden,
              ::testing::ElementsAre(real / "course", real / "class/ann", real / "class/bob.zip",
                                     real / "class/repo", real / "class/ann"));
}

TEST(Days, EachDayNamesItsFilesAndChecks) {
  EXPECT_EQ(day_spec("day4_large_models").files.size(), 2u);
  EXPECT_EQ(day_spec("day2_ddp").checks.at(0).ranks, (std::vector<int>{2, 3, 4}));
  EXPECT_THAT([] { day_spec("day5"); }, testing::ThrowsMessage<Error>(HasSubstr("no day day5")));
}

TEST(TimedRuns, ALimitKillsTheWholeGroupAndKeepsTheOutput) {
  const TimedRun quick = run_with_limit("echo out; echo err >&2; exit 3", 10);
  EXPECT_EQ(quick.status, 3);
  EXPECT_EQ(quick.output, "out\nerr\n");
  EXPECT_FALSE(quick.timed_out);
  const auto start = std::chrono::steady_clock::now();
  const TimedRun slow = run_with_limit("echo started; sleep 30 & sleep 30; echo never", 1);
  EXPECT_TRUE(slow.timed_out);
  EXPECT_EQ(slow.output, "started\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// A flood of output (a trainee's printing loop) is read to its end but kept bounded: its start
// and its end, with the count of bytes cut between; a run within the bound keeps all of it.
TEST(TimedRuns, AFloodOfOutputIsKeptBoundedWithItsStartAndEnd) {
  const TimedRun flood = run_with_limit(
      "echo START; head -c 50000000 /dev/zero | tr '\\0' x; echo; echo END", 60, 1000);
  EXPECT_EQ(flood.status, 0);
  EXPECT_EQ(flood.bytes_cut, 6 + 50000000u + 1 + 4 - 1000);  // START\n, the x's, \n, END\n
  EXPECT_LT(flood.output.size(), 1200u);
  EXPECT_EQ(flood.output.substr(0, 9), "START\nxxx");
  EXPECT_EQ(flood.output.substr(flood.output.size() - 8), "xxx\nEND\n");
  EXPECT_NE(flood.output.find("[... 49999011 bytes of output cut: the grader keeps 1000"),
            std::string::npos);
  const TimedRun within = run_with_limit("printf 0123456789", 10, 10);
  EXPECT_EQ(within.output, "0123456789");
  EXPECT_EQ(within.bytes_cut, 0u);
}

}  // namespace
}  // namespace course::grade
