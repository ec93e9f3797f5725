"""The targets of one copy of the day-1 lab: the trainee's (//day1_gpu) or the solutions'."""

def day_lab(exercises, check_tags = []):
    """Defines :exercises (from `exercises`), :lab and :check in the calling package.

    Args:
      exercises: the exercise source file of this package.
      check_tags: tags of the :check test ("manual" for the trainee's copy).
    """
    common = [
        "//common/core",
        "//common/data",
        "//common/kernels",
        "//common/nn",
        "//common/optim",
        "//common/train",
        "//common/train:lab_support",
        "//day1_gpu:lab_headers",
    ]
    native.cc_library(
        name = "exercises",
        srcs = [exercises, "//day1_gpu:options.cc", "//day1_gpu:trainer.cc"],
        deps = common + ["@system_headers//:json"],
    )
    native.cc_binary(
        name = "lab",
        srcs = ["//day1_gpu:lab.cc"],
        deps = [":exercises"],
    )
    native.cc_test(
        name = "check",
        srcs = ["//day1_gpu:check_test.cc"],
        deps = [
            ":exercises",
            "//common/testing",
            "@system_headers//:gtest_main",
        ],
        tags = check_tags,
    )
