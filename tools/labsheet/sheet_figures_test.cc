// The sheets' figures (sheet_figures.h): markers read with their attributes, a program's printed
// table read by its columns, numbers compared within the figure's tolerance with text and shape
// exact, the claims' rows, and a figure's lines replaced with nothing else touched.
#include "tools/labsheet/sheet_figures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/core/error.h"

namespace course::labsheet {
namespace {

using ::testing::HasSubstr;

const char* kSheet = R"(# A sheet

Some text | with a bar.

<!-- figure command="mpirun -np 4 bazel-bin/bench/allreduce_bench" table="size" tolerance="0.5" absolute="0.1" claim="first-below ring/MPI 1" cheap -->
Measured with `mpirun -np 4 bazel-bin/bench/allreduce_bench` on a machine:

| size | MPI us | ring/MPI |
| ---: | ---: | ---: |
| 1.00 KiB | 7.5 | 2.49 |
| 256.00 KiB | 148.4 | 1.05 |
| 1.00 MiB | 1,581.5 | 0.61 |
<!-- /figure -->

After.
<!-- figure command="bench/other" table="m" -->
<!-- /figure -->
<!-- figure command="bazel-bin/lab --model x" table="grid" computed -->
<!-- /figure -->
<!-- figure command="bench/gpu_compare.sh" table="| setting" gpu -->
<!-- /figure -->
)";

const char* kPrinted = R"(all-reduce (sum, f32) on 4 ranks
      size       MPI us   ring/MPI
  1.00 KiB         14.7       2.04
256.00 KiB        145.7       0.95
  1.00 MiB       2662.3       0.88
wrote results
)";

TEST(SheetFigures, MarkersGiveTheCommandHowToReadItAndTheSheetsTable) {
  const std::vector<Figure> found = find_figures("day2.md", kSheet);
  ASSERT_EQ(found.size(), 4u);
  const Figure& f = found[0];
  EXPECT_EQ(f.command, "mpirun -np 4 bazel-bin/bench/allreduce_bench");
  EXPECT_EQ(f.table_start, "size");
  EXPECT_DOUBLE_EQ(f.tolerance, 0.5);
  EXPECT_DOUBLE_EQ(f.absolute, 0.1);
  EXPECT_EQ(f.claim, "first-below ring/MPI 1");
  EXPECT_TRUE(f.cheap);
  EXPECT_EQ(f.open_line, 4u);
  EXPECT_EQ(f.close_line, 12u);
  EXPECT_EQ(f.table.header, (std::vector<std::string>{"size", "MPI us", "ring/MPI"}));
  ASSERT_EQ(f.table.rows.size(), 3u);
  EXPECT_EQ(f.table.rows[2], (std::vector<std::string>{"1.00 MiB", "1,581.5", "0.61"}));
  EXPECT_FALSE(found[1].cheap);
  EXPECT_FALSE(found[1].computed);
  EXPECT_DOUBLE_EQ(found[1].tolerance, 0.25);
  EXPECT_TRUE(found[2].computed);  // a model's table: compared exactly
  EXPECT_DOUBLE_EQ(found[2].tolerance, 0);
  EXPECT_FALSE(found[2].gpu);
  EXPECT_TRUE(found[3].gpu);
  EXPECT_TRUE(found[1].table.header.empty());
}

TEST(SheetFigures, BrokenMarkersAreErrorsNamingTheLine) {
  EXPECT_THAT([] { find_figures("s.md", "x\n<!-- figure table=\"a\" -->\n<!-- /figure -->\n"); },
              testing::ThrowsMessage<Error>(HasSubstr("s.md:2: the figure marker has no command")));
  EXPECT_THAT([] { find_figures("s.md", "<!-- figure command=\"c\" table=\"a\" -->\n| a |\n"); },
              testing::ThrowsMessage<Error>(HasSubstr("s.md:1: the figure has no <!-- /figure")));
  EXPECT_THAT(
      [] {
        find_figures("s.md",
                     "<!-- figure command=\"c\" table=\"a\" tolerance=\"wide\" -->\n<!-- /figure "
                     "-->\n");
      },
      testing::ThrowsMessage<Error>(HasSubstr("tolerance=\"wide\" is not a number")));
  EXPECT_THAT(
      [] {
        find_figures("s.md",
                     "<!-- figure command=\"c\" table=\"a\" -->\n| a | b |\n| --- | --- |\n| 1 "
                     "|\n<!-- /figure -->\n");
      },
      testing::ThrowsMessage<Error>(HasSubstr("s.md:4: a row of 1 cells in a table of 2")));
}

TEST(SheetFigures, APrintedTableIsReadByItsColumnsUpToItsEnd) {
  const Table t = table_from_output(kPrinted, "size");
  EXPECT_EQ(t.header, (std::vector<std::string>{"size", "MPI us", "ring/MPI"}));
  ASSERT_EQ(t.rows.size(), 3u);  // "wrote results" has one column: the table ended
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"256.00 KiB", "145.7", "0.95"}));
  EXPECT_THAT([] { table_from_output(kPrinted, "seq"); },
              testing::ThrowsMessage<Error>(HasSubstr("no table starting with \"seq\"")));
  EXPECT_THAT([] { table_from_output("  size  time\n\n", "size"); },
              testing::ThrowsMessage<Error>(HasSubstr("has no rows")));
}

TEST(SheetFigures, NumbersMoveWithinTheToleranceTextAndShapeMustMatch) {
  const Figure f = find_figures("day2.md", kSheet)[0];
  const Comparison c = compare(f, table_from_output(kPrinted, "size"));
  EXPECT_TRUE(c.shape_errors.empty());
  EXPECT_EQ(c.numbers, 9u);  // "1.00 KiB" is one number and a unit
  // 7.5 -> 14.7 is 49% of 14.7 (within 0.5); 1,581.5 -> 2662.3 is 41%; 2.49 -> 2.04 within
  // 0.5 relative; 1.05 -> 0.95 within the absolute 0.1. Nothing moved beyond.
  EXPECT_TRUE(c.drifts.empty());
  Figure strict = f;
  strict.tolerance = 0.2;
  strict.absolute = 0;
  const Comparison moved = compare(strict, table_from_output(kPrinted, "size"));
  ASSERT_EQ(moved.drifts.size(), 3u);
  EXPECT_EQ(moved.drifts[0].row, 0u);
  EXPECT_EQ(moved.drifts[0].column, 1u);
  EXPECT_EQ(moved.drifts[0].sheet, "7.5");
  EXPECT_EQ(moved.drifts[0].measured, "14.7");
  EXPECT_EQ(moved.drifts[1].sheet, "1,581.5");
  EXPECT_EQ(moved.drifts[2].measured, "0.88");

  Table relabelled = table_from_output(kPrinted, "size");
  relabelled.rows[2][0] = "1.00 GiB";
  EXPECT_THAT(compare(f, relabelled).shape_errors,
              testing::ElementsAre("row 3, size: \"1.00 MiB\" is now \"1.00 GiB\""));
  Table shorter = relabelled;
  shorter.rows.pop_back();
  EXPECT_THAT(compare(f, shorter).shape_errors,
              testing::ElementsAre("the sheet has 3 rows, the program prints 2"));
  Table renamed = shorter;
  renamed.header[2] = "ring / MPI";
  EXPECT_THAT(compare(f, renamed).shape_errors[0], HasSubstr("column 3: \"ring/MPI\""));
  EXPECT_THAT(compare(find_figures("day2.md", kSheet)[1], shorter).shape_errors,
              testing::ElementsAre(HasSubstr("no table here yet")));
}

TEST(SheetFigures, AClaimNamesTheFirstRowOnEachSide) {
  const Figure f = find_figures("day2.md", kSheet)[0];
  const Comparison c = compare(f, table_from_output(kPrinted, "size"));
  ASSERT_TRUE(c.claim.has_value());
  EXPECT_EQ(c.claim->sheet_row, "1.00 MiB");
  EXPECT_EQ(c.claim->measured_row, "256.00 KiB");
  EXPECT_TRUE(c.claim->changed());
  Figure above = f;
  above.claim = "first-above ring/MPI 3";
  EXPECT_EQ(compare(above, table_from_output(kPrinted, "size")).claim->measured_row, "none");
  Figure wrong = f;
  wrong.claim = "first-below bandwidth 1";
  EXPECT_THAT([&] { compare(wrong, table_from_output(kPrinted, "size")); },
              testing::ThrowsMessage<Error>(HasSubstr("column bandwidth is not in the table")));
}

// A program that prints a markdown table (bench/compare's scripts): its bars are the columns and
// its separator row is no row.
TEST(SheetFigures, AMarkdownTableAsPrinted) {
  const Table t = table_from_output(
      "== GPU\n| setting | lab per s |\n|---|---:|\n| f32 | 2,102 |\n| `--amp` | 2,707 |\ndone\n",
      "| setting");
  EXPECT_EQ(t.header, (std::vector<std::string>{"setting", "lab per s"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"`--amp`", "2,707"}));
}

TEST(SheetFigures, AWrittenFigureReplacesOnlyItsLinesAndReadsBack) {
  const Figure f = find_figures("day2.md", kSheet)[0];
  const Table measured = table_from_output(kPrinted, "size");
  const std::string body = "Measured with `x` here:\n\n" + markdown(measured);
  EXPECT_EQ(markdown(measured),
            "| size | MPI us | ring/MPI |\n| ---: | ---: | ---: |\n| 1.00 KiB | 14.7 | 2.04 |\n"
            "| 256.00 KiB | 145.7 | 0.95 |\n| 1.00 MiB | 2662.3 | 0.88 |\n");
  const std::string text = replace_figure(kSheet, f, body);
  EXPECT_THAT(text, HasSubstr("Some text | with a bar.\n\n<!-- figure command="));
  EXPECT_THAT(text, HasSubstr("cheap -->\nMeasured with `x` here:\n\n| size |"));
  EXPECT_THAT(text, HasSubstr("| 1.00 MiB | 2662.3 | 0.88 |\n<!-- /figure -->\n\nAfter.\n"));
  const std::vector<Figure> again = find_figures("day2.md", text);
  ASSERT_EQ(again.size(), 4u);
  EXPECT_EQ(again[0].table.rows, measured.rows);
  EXPECT_TRUE(compare(again[0], measured).drifts.empty());
}

}  // namespace
}  // namespace course::labsheet
