// The race's leaderboard from hand-written metrics files: entries ranked by their best test
// accuracy within the budget (an epoch past it does not count), a resumed run's repeated epoch
// counted once, an entry with no epoch in the budget last and unranked, the tables' cells (with
// the energy and core-hours to the best where the metrics have them), the
// page's escaping, and the written files; a corrupt or foreign file is one clear error.
#include "day3_data/race_tools/race_board.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/testing/errors_and_files.h"

namespace day3 {
namespace {

using ::testing::HasSubstr;

const char kHeader[] =
    R"({"recipe": {"model": "smallnet", "optimizer": "%s", "schedule": "one-cycle", )"
    R"("batch_size": %d, )"
    R"("image_size": 28, "epochs": 3, "lr": %s, "wd": 0.0005}, "race": {"budget_s": 100}})";

std::string header(const std::string& optimizer, int batch, const std::string& lr) {
  char text[512];
  std::snprintf(text, sizeof text, kHeader, optimizer.c_str(), batch, lr.c_str());
  return text;
}

std::string epoch(int number, double elapsed, double accuracy, double images_per_second = 1000) {
  return R"({"epoch": )" + std::to_string(number) + R"(, "elapsed_s": )" + std::to_string(elapsed) +
         R"(, "test_accuracy": )" + std::to_string(accuracy) +
         R"(, "train_accuracy": 0.5, "images_per_second": )" + std::to_string(images_per_second) +
         "}";
}

// An epoch record of the current loop: with the energy so far (the GPU's unmeasured) and hours.
std::string metered_epoch(int number, double elapsed, double accuracy, double images_per_second,
                          double cpu_joules, double core_hours) {
  std::string line = epoch(number, elapsed, accuracy, images_per_second);
  line.pop_back();
  return line + R"(, "energy_cpu_j": )" + std::to_string(cpu_joules) +
         R"(, "energy_gpu_j": null, "core_hours": )" + std::to_string(core_hours) + "}";
}

std::string write_runs(const std::vector<std::pair<std::string, std::vector<std::string>>>& runs) {
  const std::string folder = course::testing::temp_path("runs");
  std::filesystem::create_directories(folder);
  for (const auto& [name, lines] : runs) {
    std::ofstream out(folder + "/" + name + ".jsonl");
    for (const std::string& line : lines) out << line << "\n";
  }
  return folder;
}

std::vector<RaceEntry> three_entries() {
  return read_entries(write_runs({
      // fast: 80% at 50 s; 95% only at 120 s, past the 100 s budget.
      // It measured its energy: 12,345 J and 0.0139 core-hours by its best.
      {"fast",
       {header("sgd", 256, "0.2"), metered_epoch(1, 50, 0.80, 1000, 12345, 0.0139),
        metered_epoch(2, 120, 0.95, 3000, 30000, 0.0333)}},
      // steady: 85% at 90 s; resumed after epoch 1, which it wrote twice.
      {"steady",
       {header("adamw", 128, "0.003"), epoch(1, 40, 0.70), epoch(1, 41, 0.71), epoch(2, 90, 0.85)}},
      // late: its first epoch already past the budget.
      {"late", {header("lars", 1024, "4"), epoch(1, 150, 0.60)}},
  }));
}

TEST(RaceBoard, RanksByTheBestAccuracyWithinTheBudget) {
  const std::vector<RaceEntry> entries = three_entries();
  ASSERT_EQ(entries.size(), 3u);
  const std::vector<BoardRow> rows = rank_entries(entries);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].entry->name, "steady");
  EXPECT_DOUBLE_EQ(rows[0].best->test_accuracy, 0.85);
  EXPECT_EQ(rows[1].entry->name, "fast");
  EXPECT_DOUBLE_EQ(rows[1].best->test_accuracy, 0.80) << "95% came after the budget";
  EXPECT_DOUBLE_EQ(rows[1].best->elapsed_s, 50);
  EXPECT_DOUBLE_EQ(rows[1].images_per_second, 2000) << "the mean of 1000 and 3000";
  EXPECT_EQ(rows[2].entry->name, "late");
  EXPECT_FALSE(rows[2].best.has_value());
}

TEST(RaceBoard, AResumedRunsRepeatedEpochCountsOnceTheLastRecordWinning) {
  const RaceEntry steady = three_entries()[2];
  ASSERT_EQ(steady.name, "steady");
  ASSERT_EQ(steady.history.size(), 2u);
  EXPECT_DOUBLE_EQ(steady.history[0].test_accuracy, 0.71);
  EXPECT_EQ(steady.optimizer, "adamw");
  EXPECT_EQ(steady.batch_size, 128);
  EXPECT_DOUBLE_EQ(steady.lr, 0.003);
  EXPECT_DOUBLE_EQ(steady.budget_s, 100);
}

TEST(RaceBoard, TablesHaveTheCoursesColumns) {
  const std::vector<RaceEntry> entries = three_entries();
  const std::vector<BoardRow> rows = rank_entries(entries);
  const std::string markdown = board_markdown(rows);
  EXPECT_THAT(markdown, HasSubstr("| 1 | steady | smallnet | adamw | 128 | 28 | 0.003 | 0.0005 | "
                                  "85.00 | 90 | 2 | 1000 | - | - |"));
  EXPECT_THAT(markdown, HasSubstr("| 2 | fast | smallnet | sgd | 256 | 28 | 0.2 | 0.0005 | 80.00 | "
                                  "50 | 2 | 2000 | 12.3 | 0.014 |"));
  EXPECT_THAT(markdown,
              HasSubstr("| - | late | smallnet | lars | 1024 | 28 | 4 | 0.0005 | - | - | 1 |"));
  EXPECT_EQ(board_csv(rows),
            "name,model,optimizer,batch,image_size,lr,wd,best_top1,time_to_best_s,epochs,"
            "images_per_s,energy_to_best_kj,core_hours_to_best\n"
            "steady,smallnet,adamw,128,28,0.003,0.0005,85.00,90,2,1000,-,-\n"
            "fast,smallnet,sgd,256,28,0.2,0.0005,80.00,50,2,2000,12.3,0.014\n"
            "late,smallnet,lars,1024,28,4,0.0005,-,-,1,1000,-,-\n");
}

TEST(RaceBoard, ThePageEscapesTextAndShowsBothPlots) {
  const std::vector<RaceEntry> entries = three_entries();
  const std::string page = board_html(rank_entries(entries), "Race <night 1> & co");
  EXPECT_THAT(page, HasSubstr("<title>Race &lt;night 1&gt; &amp; co</title>"));
  EXPECT_THAT(page, HasSubstr("<td>1</td><td>steady</td><td>smallnet</td><td>adamw</td>"));
  EXPECT_THAT(page, HasSubstr("<img src=\"validation.png\""));
  EXPECT_THAT(page, HasSubstr("<img src=\"training.png\""));
}

TEST(RaceBoard, WritesEveryFile) {
  const std::vector<RaceEntry> entries = three_entries();
  const std::string out = course::testing::temp_path("board");
  std::filesystem::create_directories(out);
  write_board(entries, out, "night");
  for (const char* name :
       {"board.md", "board.csv", "index.html", "validation.png", "training.png"}) {
    EXPECT_GT(std::filesystem::file_size(out + "/" + name), 100u) << name;
  }
}

TEST(RaceBoard, CorruptOrForeignFilesAreOneClearError) {
  const std::string corrupt =
      write_runs({{"broken", {header("sgd", 128, "0.1"), "{\"epoch\": 1, \"elapsed"}}});
  EXPECT_THAT(course::testing::error_of([&] { read_entries(corrupt); }),
              HasSubstr("broken.jsonl:2: not a race metrics line"));
  const std::string foreign = write_runs({{"day1", {epoch(1, 10, 0.5)}}});
  std::filesystem::remove(foreign + "/broken.jsonl");
  EXPECT_THAT(course::testing::error_of([&] { read_entries(foreign); }),
              HasSubstr("day1.jsonl has no race recipe line"));
  const std::string empty = course::testing::temp_path("no_runs");
  std::filesystem::create_directories(empty);
  EXPECT_THAT(course::testing::error_of([&] { read_entries(empty); }),
              HasSubstr("no entry's metrics (*.jsonl) in"));
  EXPECT_THAT(course::testing::error_of([&] { read_entries("/no/such/runs"); }),
              HasSubstr("the runs folder /no/such/runs does not exist"));
}

}  // namespace
}  // namespace day3
