"""The day-2 lab's targets, in //day2_ddp (trainee) and //solutions/day2_ddp (solutions)."""

load("//tools/labgen:day_lab.bzl", "day_lab")

def day2_lab(check_tags = []):
    day_lab(
        day = "day2_ddp",
        exercises = ["exercises.cc"],
        srcs = ["options.cc", "parallel_setup.cc", "trainer.cc"],
        deps = [
            "//common/parallel/comm",
            "//common/parallel/data_parallel:ddp",
        ],
        check_tags = check_tags,
        lab_deps = ["//common/parallel/comm"],
        check_ranks = [2, 3, 4],
    )
