// The optimizer comparison's pieces without training: the rates at the large batch worked out
// by hand (linear and square-root rules), each recipe's lab flags accepted by the lab's own
// parser, recipe lists, and the report's files from hand-made runs.
#include "day3_data/optimizer_comparison.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/testing/errors_and_files.h"
#include "day3_data/options.h"

namespace day3 {
namespace {

using course::testing::error_of;
using course::testing::temp_path;
using ::testing::HasSubstr;

Recipe recipe(const std::string& name) { return select_recipes(name).front(); }

TEST(OptimizerComparison, LargeBatchRatesFollowEachRecipesRule) {
  // Eight times the batch: SGD and LARS x8, the adaptive ones x sqrt(8) = 2.8284.
  EXPECT_FLOAT_EQ(scaled_lr(recipe("one-cycle"), 1024, 128), 0.8f);
  EXPECT_FLOAT_EQ(scaled_lr(recipe("lars"), 1024, 128), 4.0f);
  EXPECT_NEAR(scaled_lr(recipe("adamw"), 1024, 128), 3e-3 * 2.8284271, 1e-8);
  EXPECT_NEAR(scaled_lr(recipe("lion"), 1024, 128), 1e-3 * 2.8284271, 1e-9);
  EXPECT_FLOAT_EQ(scaled_lr(recipe("lamb"), 128, 128), 1e-2f);
}

TEST(OptimizerComparison, EveryRecipesFlagsAreTheLabsAtBothBatches) {
  for (const Recipe& r : course_recipes()) {
    for (const int64_t batch : {64, 512}) {
      std::vector<std::string> words = {"lab", "--epochs", "2"};
      for (const std::string& flag : recipe_flags(r, batch, 64, 0.5)) words.push_back(flag);
      const LabOptions o = parse_lab_words(words);
      EXPECT_EQ(course::optim::optimizer_name(o.optimizer), r.optimizer);
      EXPECT_EQ(course::optim::schedule_name(o.schedule), r.schedule);
      EXPECT_EQ(o.batch_size, batch);
      EXPECT_NEAR(o.lr, scaled_lr(r, batch, 64), 1e-5 * o.lr) << r.name;
      EXPECT_FLOAT_EQ(o.wd, r.wd);
      EXPECT_FLOAT_EQ(o.cosine_floor, r.cosine_floor);
      EXPECT_EQ(o.warmup_epochs, batch == 64 ? 0.0 : 0.5) << "only the large batch warms up";
    }
  }
  EXPECT_FLOAT_EQ(recipe("lion").cosine_floor, 0.2f) << "the course's Lion decays to lr/5";
}

TEST(OptimizerComparison, RecipesByName) {
  EXPECT_EQ(select_recipes("all").size(), 6u);
  const std::vector<Recipe> two = select_recipes("lion,constant");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].name, "lion");
  EXPECT_EQ(two[1].name, "constant");
  EXPECT_THAT(error_of([] { select_recipes("sgd,adam"); }), HasSubstr("unknown recipe 'sgd'"));
  EXPECT_THAT(error_of([] { select_recipes(""); }), HasSubstr("names no recipe"));
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(OptimizerComparison, TheReportHasEveryEpochARowPerRunAndAPlotPerBatch) {
  const std::string folder = temp_path("comparison");
  std::filesystem::create_directories(folder);
  std::vector<RecipeRun> runs = {
      {.recipe = recipe("adamw"),
       .batch = 32,
       .lr = 3e-3f,
       .epochs = {{1, 2.5, 0.5}, {2, 5, 0.75}}},
      {.recipe = recipe("lars"), .batch = 256, .lr = 4, .epochs = {{1, 1.5, 0.6}}},
      {.recipe = recipe("lion"), .batch = 256, .lr = 2e-3f, .failure = "diverged"},
  };
  runs[1].epochs.push_back({2, 3, 0.55});
  const std::string table = write_comparison(runs, folder);
  EXPECT_EQ(read(folder + "/optimizers.md"), table);
  EXPECT_THAT(table, HasSubstr("| adamw | adamw | one-cycle | 32 | 0.003 | 0.05 | 2 | 75.00 | "
                               "75.00 | 5 |"));
  EXPECT_THAT(table, HasSubstr("| lars | lars | one-cycle | 256 | 4 | 0.0005 | 2 | 60.00 | 55.00 "
                               "| 3 |"))
      << "the best epoch and the last one";
  EXPECT_THAT(table, HasSubstr("| lion | lion | cosine to lr x 0.2 | 256 | 0.002 | 0.5 | 0 | "
                               "diverged |"));
  const std::string csv = read(folder + "/optimizers.csv");
  EXPECT_THAT(csv, HasSubstr("recipe,optimizer,schedule,batch,lr,wd,epoch,seconds,test_accuracy\n"
                             "adamw,adamw,one-cycle,32,0.003,0.05,1,2.5,0.5\n"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5) << "a header and four epochs";
  for (const char* png : {"/batch_32.png", "/batch_256.png"}) {
    EXPECT_EQ(read(folder + png).substr(1, 3), "PNG") << png;
  }
}

}  // namespace
}  // namespace day3
