"""The day-3 lab's targets, in //day3_data (trainee) and //solutions/day3_data (solutions):
the lab, its check, the race entry, and the hyper-parameter search and optimizer comparison
tools on that lab."""

load("//tools/labgen:day_lab.bzl", "day_lab")

def day3_lab(check_tags = []):
    day_lab(
        day = "day3_data",
        exercises = ["exercises.cc"],
        srcs = ["lr_finder.cc", "options.cc", "trainer.cc"],
        deps = [
            "//common/core:gnuplot",
            "//common/hpo",
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
    native.cc_binary(
        name = "hpo",
        srcs = [
            "//day3_data/hpo_tool:hpo.cc",
            "//day3_data/hpo_tool:hpo_objective.cc",
            "//day3_data/hpo_tool:hpo_objective.h",
        ],
        deps = [
            ":exercises",
            "//common/hpo",
            "//common/train:lab_support",
        ],
    )

    # An entry of the race: this package's lab within the race's budget.
    native.cc_binary(
        name = "race",
        srcs = ["//day3_data/race_tools:race.cc"],
        deps = [
            ":exercises",
            "//common/parallel",
            "//common/parallel:ddp",
            "//common/train:lab_support",
            "//day3_data/race_tools:race_budget",
        ],
    )

    # The optimizer comparison, run after run of this package's lab.
    native.cc_binary(
        name = "optimizers",
        srcs = [
            "//day3_data:optimizer_comparison.cc",
            "//day3_data:optimizer_comparison.h",
            "//day3_data:optimizers.cc",
        ],
        deps = [
            ":exercises",
            "//common/core:gnuplot",
            "//common/train:lab_support",
        ],
    )
