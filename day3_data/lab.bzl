"""The day-3 lab's targets, in //day3_data (trainee) and //solutions/day3_data (solutions)."""

load("//tools/labgen:day_lab.bzl", "day_lab")

def day3_lab(check_tags = []):
    day_lab(
        day = "day3_data",
        exercises = "exercises.cc",
        srcs = ["options.cc", "trainer.cc"],
        check_tags = check_tags,
    )
