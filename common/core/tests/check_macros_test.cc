// The error family: COURSE_CHECK messages name file and line, and MPI_CHECK turns a real MPI
// failure (a send to a rank that does not exist) into the same kind of error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/core/error.h"
#include "common/core/format.h"
#include "common/core/mpi_check.h"

namespace course {
namespace {

using ::testing::HasSubstr;

TEST(CourseCheck, MessageNamesTheConditionsPartsAndLocation) {
  try {
    const int batch = 0;
    COURSE_CHECK(batch > 0, "--batch-size must be positive, got ", batch);
    FAIL() << "the check passed";
  } catch (const Error& e) {
    EXPECT_THAT(
        e.what(),
        HasSubstr("--batch-size must be positive, got 0 [common/core/tests/check_macros_test.cc:"));
  }
}

TEST(FormatBytes, UsesBinaryUnits) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(int64_t{3} << 30), "3.00 GiB");
}

TEST(FormatNumber, ShortestOfFixedAndExponent) {
  EXPECT_EQ(format_number(0.1), "0.1");
  EXPECT_EQ(format_number(1e-8), "1e-08");
  EXPECT_EQ(format_number(2048), "2048");
}

TEST(FormatPercent, TwoDecimalsOfTheFraction) {
  EXPECT_EQ(format_percent(0.91234), "91.23");
  EXPECT_EQ(format_percent(1), "100.00");
  EXPECT_EQ(format_percent(0.00006), "0.01");
}

TEST(MpiCheck, AFailingCallBecomesAnError) {
  MPI_Init(nullptr, nullptr);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int size = 0;
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  int value = 1;
  try {
    MPI_CHECK(MPI_Send(&value, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD));
    FAIL() << "a send to rank " << size + 5 << " succeeded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("MPI_Send(&value, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD) failed: "));
    EXPECT_THAT(e.what(), HasSubstr("invalid rank"));
  }
  MPI_Finalize();
}

}  // namespace
}  // namespace course
