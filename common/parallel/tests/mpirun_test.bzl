"""A GoogleTest binary run on several MPI ranks inside `bazel test` (mpirun_test.sh)."""

load("//tools/cc:grouped_library.bzl", "grouped_objects_of")

def mpirun_gtest(name, srcs, deps, ranks = [], tags = [], size = "medium"):
    """Defines <name>_ranks (the binary, with the multi-rank main) and the test <name>.

    Args:
      name: the test's name.
      srcs: the test's sources (compiled a few at a time: tools/cc/grouped_library.bzl).
      deps: its libraries (the main comes from //common/testing:mpi_gtest_main).
      ranks: numbers of ranks to run on (default: 2 and 4).
      tags: the test's tags, and its binary's (a manual test's binary is built only for it).
      size: the test's size (its timeout).
    """
    binary_deps = deps + ["//common/testing:mpi_gtest_main"]
    native.cc_binary(
        name = name + "_ranks",
        testonly = True,
        srcs = grouped_objects_of(name + "_ranks", srcs, binary_deps, testonly = True),
        deps = binary_deps,
        tags = tags,
        # Against the shared libraries, as the tests are: the GPU self-test's bundle then packs
        # the GPU code once (statically linked, 11 MB of it in each binary).
        linkstatic = False,
    )
    native.sh_test(
        name = name,
        size = size,
        srcs = ["//common/parallel/tests:mpirun_test.sh"],
        args = ["$(location :%s_ranks)" % name] + [str(r) for r in ranks],
        data = [":%s_ranks" % name],
        tags = tags,
    )
