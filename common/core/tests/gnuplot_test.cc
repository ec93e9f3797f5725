// run_gnuplot: a script's PNG is written; a PNG that cannot be written gives one error naming
// gnuplot's own message (not a claim that gnuplot is missing), and neither the image nor the
// message reaches the terminal.
#include "common/core/gnuplot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "common/testing/errors_and_files.h"

namespace course {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Gnuplot, WritesThePngTheScriptNames) {
  const std::string png = testing::temp_path("plot.png");
  run_gnuplot("set output '" + png + "'\nplot sin(x)\n");
  std::ifstream in(png, std::ios::binary);
  char magic[4] = {};
  ASSERT_TRUE(in.read(magic, 4));
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
}

TEST(Gnuplot, AnUnwritablePngIsOneErrorAndNothingOnTheTerminal) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const std::string error =
      testing::error_of([] { run_gnuplot("set output '/no/such/folder/plot.png'\nplot x\n"); });
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(error, HasSubstr("gnuplot failed: "));
  EXPECT_THAT(error, HasSubstr("cannot open file"));
  EXPECT_THAT(error, Not(HasSubstr("not installed")));
  EXPECT_EQ(out, "") << "the PNG gnuplot wrote to its standard output instead";
  EXPECT_EQ(err, "");
}

}  // namespace
}  // namespace course
