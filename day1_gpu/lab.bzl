"""The day-1 lab's targets, in //day1_gpu (trainee) and //solutions/day1_gpu (solutions)."""

load("//tools/labgen:day_lab.bzl", "day_lab")

def day1_lab(check_tags = []):
    day_lab(
        day = "day1_gpu",
        exercises = ["exercises.cc"],
        srcs = ["options.cc", "trainer.cc"],
        check_tags = check_tags,
    )
