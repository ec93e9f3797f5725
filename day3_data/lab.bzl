"""The day-3 lab's targets, in //day3_data (trainee) and //solutions/day3_data (solutions):
the lab, its check, the race entry, and the hyper-parameter search and optimizer comparison
tools on that lab."""

load("//tools/labgen:day_lab.bzl", "day_lab", "day_library", "day_program")

def day3_lab(check_tags = []):
    day_lab(
        day = "day3_data",
        exercises = ["exercises.cc"],
        srcs = ["lr_finder.cc", "options.cc", "rank_images.cc", "trainer.cc"],
        deps = [
            "//common/core:gnuplot",
            "//common/hpo",
            "//common/parallel/data_parallel:onebit",
        ],
        check_tags = check_tags,
        check_srcs = [
            "check_test.cc",
            "cutmix_check_test.cc",
            "hpo_check_test.cc",
            "lr_finder_check_test.cc",
        ],
    )

    # The hyper-parameter search tool, whose lab objective is this package's lab.
    day_program("day3_data", "hpo", [
        "//day3_data/hpo_tool:hpo.cc",
        "//day3_data/hpo_tool:hpo_objective.cc",
        "//day3_data/hpo_tool:hpo_objective.h",
    ], [
        "//common/hpo",
        "//common/train:lab_support",
    ])

    # An entry of the race: this package's lab within the race's budget.
    day_program("day3_data", "race", ["//day3_data/race_tools:race.cc"], [
        "//common/parallel/comm",
        "//common/parallel/data_parallel:ddp",
        "//common/train:lab_support",
        "//day3_data/race_tools:race_budget",
    ])

    # The optimizer comparison, run after run of this package's lab (its rates, flags and
    # report are tested on the solutions: //solutions/day3_data:optimizer_comparison_test).
    day_library(
        "day3_data",
        name = "optimizer_comparison",
        srcs = ["//day3_data:optimizer_comparison.cc"],
        hdrs = ["//day3_data:optimizer_comparison.h"],
        deps = [
            ":lab_parts",
            "//common/core:gnuplot",
            "//common/train:lab_support",
        ],
    )
    day_program("day3_data", "optimizers", ["//day3_data:optimizers.cc"], [
        "//day3_data:optimizer_comparison",
    ])
