"""The day-4 lab's targets, in //day4_large_models (trainee) and //solutions/day4_large_models."""

load("//tools/labgen:day_lab.bzl", "day_lab", "day_library", "day_program")

def day4_lab(check_tags = []):
    day_lab(
        day = "day4_large_models",
        exercises = ["exercises.cc", "pipeline_exercises.cc"],
        srcs = ["gpt_options.cc", "gpt_trainer.cc", "gpt_validate.cc", "grid_validate.cc", "image_trainer.cc", "lab_run.cc", "memory_report.cc", "parallel_modes.cc", "pipeline_report.cc", "throughput_report.cc"],
        deps = [
            "//common/parallel/comm",
            "//common/parallel/data_parallel:ddp",
            "//common/parallel/data_parallel:onebit",
            "//common/parallel/data_parallel:sharded",
            "//common/parallel/pipeline",
            "//common/parallel/planning:image_memory_estimate",
            "//common/parallel/planning:memory_estimate",
            "//common/parallel/planning:throughput_model",
            "//common/parallel/tensor_parallel",
            "//common/parallel:training_parallelism",
            "//common/plot:timeline_chart",
        ],
        check_tags = check_tags,
        lab_deps = ["//common/parallel/comm"],
        check_srcs = [
            "check_test.cc",
            "onebit_check_test.cc",
            "pipeline_check_test.cc",
            "tensor_parallel_check_test.cc",
        ],
        check_ranks = [2, 3, 4],
    )

    # Part 7, making a trained model cheaper: `compress distill` (TP4.19), `compress quantize`
    # (TP4.20), `compress prune` (TP4.21).
    day_library(
        "day4_large_models",
        name = "compress_modes",
        srcs = [
            "//day4_large_models/compression:activation_range.cc",
            "//day4_large_models/compression:compress_training.cc",
            "//day4_large_models/compression:distill_options.cc",
            "//day4_large_models/compression:distill_trainer.cc",
            "//day4_large_models/compression:inference_network.cc",
            "//day4_large_models/compression:prune_options.cc",
            "//day4_large_models/compression:prune_run.cc",
            "//day4_large_models/compression:pruning.cc",
            "//day4_large_models/compression:quantize_options.cc",
            "//day4_large_models/compression:quantize_run.cc",
            "//day4_large_models/compression:trained_model.cc",
        ],
        hdrs = [
            "//day4_large_models/compression:activation_range.h",
            "//day4_large_models/compression:compress_training.h",
            "//day4_large_models/compression:distill_options.h",
            "//day4_large_models/compression:distill_trainer.h",
            "//day4_large_models/compression:inference_network.h",
            "//day4_large_models/compression:prune_options.h",
            "//day4_large_models/compression:prune_run.h",
            "//day4_large_models/compression:pruning.h",
            "//day4_large_models/compression:quantize_options.h",
            "//day4_large_models/compression:quantize_run.h",
            "//day4_large_models/compression:trained_model.h",
        ],
        deps = [
            ":lab_parts",
            "//common/core:gnuplot",
            "//common/kernels:int8",
            "//common/nn:weight_pruning",
            "//common/train:lab_support",
        ],
    )

    day_program("day4_large_models", "compress", ["//day4_large_models/compression:compress.cc"], [
        "//day4_large_models:compress_modes",
    ])

    # Part 7's exercises (TP4.19 on), single-process.
    native.cc_test(
        name = "compress_check",
        srcs = ["//day4_large_models/compression:compress_check_test.cc"],
        deps = [
            ":exercises",
            "@system_headers//:gtest_main",
        ],
        tags = check_tags,
    )
