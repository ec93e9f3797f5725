"""The targets of a day's lab, for the trainee's copy (//dayN_x) and the solutions' copy.

A day package <day> holds lab.cc, check_test.cc, the lab's other sources and a :lab_headers
library; solutions/<day> holds the complete exercise file that labgen turns into the trainee's.
"""

load("//common/parallel/tests:mpirun_test.bzl", "mpirun_gtest")
load("//tools/cc:grouped_library.bzl", "grouped_cc_library", "grouped_cc_test")
load("//tools/labgen:style.bzl", "CLANG_FORMAT_STYLE")

# What every lab is built from; days add their own (day 2: the communicator and DDP).
LAB_DEPS = [
    "//common/core",
    "//common/data",
    "//common/kernels",
    "//common/models",
    "//common/nn",
    "//common/optim",
    "//common/train",
    "//common/train:lab_support",
    "@system_headers//:json",
]

def day_lab(
        day,
        exercises,
        srcs,
        deps = [],
        lab_deps = [],
        check_tags = [],
        check_ranks = [],
        check_srcs = ["check_test.cc"]):
    """Defines :exercises, :lab and :check in the calling package.

    The day's own sources call the exercises declared in its exercises.h; which definitions they
    get, the trainee's or the solutions', is chosen at link time by the package's :exercises
    (linked whole). So those sources compile once, in the day's package, as :lab_parts.

    Args:
      day: the day's package ("day1_gpu").
      exercises: the exercise source files of the calling package.
      srcs: the lab's other sources, by file name in the day's package.
      deps: libraries of the lab beyond LAB_DEPS.
      lab_deps: further libraries of the lab program (lab.cc) itself.
      check_tags: tags of the :check test ("manual" for the trainee's copy).
      check_ranks: numbers of MPI ranks to run the check on (none: an ordinary test).
      check_srcs: the check's test sources, by file name in the day's package.
    """
    day_library(day, name = "lab_parts", srcs = srcs, deps = LAB_DEPS + deps + [":lab_headers"])
    native.cc_library(
        name = "exercises",
        srcs = exercises,
        deps = ["//%s:lab_parts" % day],
        alwayslink = True,
    )
    day_program(day, "lab", ["//%s:lab.cc" % day], ["//common/train:lab_support"] + lab_deps)
    check_deps = [
        ":exercises",
        "//common/testing",
    ]
    if not check_ranks:
        grouped_cc_test(
            name = "check",
            srcs = ["//%s:%s" % (day, src) for src in check_srcs],
            deps = check_deps + ["@system_headers//:gtest_main"],
            tags = check_tags,
        )
        return
    mpirun_gtest(
        name = "check",
        srcs = ["//%s:%s" % (day, src) for src in check_srcs],
        deps = check_deps,
        ranks = check_ranks,
        tags = check_tags,
    )

def day_library(day, **kwargs):
    """A library of the day's package (sources compiled in groups), defined only there (once for
    both copies of the day)."""
    if native.package_name() == day:
        grouped_cc_library(**kwargs)

def day_program(day, name, srcs, deps):
    """The program :<name> on the calling package's exercises.

    Its sources compile once, in the day's package, as :<name>_main (a library holding main);
    each package links them with its own :exercises.
    """
    day_library(day, name = name + "_main", srcs = srcs, deps = [":lab_parts"] + deps)
    native.cc_binary(
        name = name,
        deps = [":exercises", "//%s:%s_main" % (day, name)],
    )

def lab_script(name, day, tools = []):
    """`bazel run //<package>:<name>`: the script <name>.sh, run on the day's solutions' lab
    (its runfiles path the script's default, $LAB another), with more programs, `tools`, in its
    runfiles. The script finds them under $RUNFILES_DIR, or its own runfiles, so that it also
    runs from bazel-bin and from another program's runfiles."""
    native.sh_binary(
        name = name,
        srcs = [name + ".sh"],
        data = ["//solutions/%s:lab" % day] + tools,
    )

def solution_lab_test(name, day):
    """A shell test `name`.sh of a day's complete lab: its arguments are the expect helpers
    (common/testing/expect.sh) and the solutions' lab binary."""
    lab = "//solutions/%s:lab" % day
    native.sh_test(
        name = name,
        size = "large",
        srcs = [name + ".sh"],
        args = ["$(location //common/testing:expect.sh)", "$(location %s)" % lab],
        data = ["//common/testing:expect.sh", lab],
    )

def generated_exercises(day, files = ["exercises.cc"]):
    """In solutions/<day>: generates the trainee's copy of each exercise file, tests the checked-in."""
    args = []
    data = []
    for f in files:
        generated = "generated_" + f[:-len(".cc")]
        native.genrule(
            name = generated,
            srcs = [f],
            outs = ["generated/" + f],
            cmd = "$(location //tools/labgen) %s/README.md < $< | " % day +
                  "clang-format --assume-filename=%s --style='" % f + CLANG_FORMAT_STYLE +
                  "' > $@",
            tools = ["//tools/labgen"],
        )
        args += ["$(location :%s)" % generated, "$(location //%s:%s)" % (day, f)]
        data += [":" + generated, "//%s:%s" % (day, f)]
    native.sh_test(
        name = "lab_files_up_to_date",
        srcs = ["//tools/labgen:check_generated.sh"],
        args = args,
        data = data,
    )
