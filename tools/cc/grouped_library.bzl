"""`grouped_cc_library`, `grouped_cc_test`: a library or test whose sources compile a few to one
compiler run.

Each compiler run of this project spends about 2-3 s parsing the standard library's and
common/'s headers before it reaches its own source (C++20's <memory> alone takes 0.8 s), and a
typical source then needs only 1-2 s more. So a library's sources are compiled in groups: a
generated file includes each group's sources in order and the compiler runs once on it (a
"unity" build; common/nn's 32 sources: 110 s one by one, 16 s as one). Diagnostics still name
the source's file and line. Sources of one library therefore share a translation unit: a name
in an anonymous namespace must be unique within its library. A package's test files likewise
make one test binary (`grouped_cc_test`), whose gtest cases are run alone with
`--test_filter='*Suite*'` (a parametrised suite's name has a prefix).

`--define=grouped_sources=off` compiles each source alone (to check that each includes what it
uses).
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

# Sources per compiler run: large enough to pay the headers' parse once for several sources,
# small enough that an edit recompiles a few seconds' worth and that the groups of one library
# still compile in parallel.
FILES_PER_UNIT = 8

def groups(files, most):
    """`files` in order, cut into the fewest groups of at most `most`, of near-equal size."""
    if not files:
        return []
    count = (len(files) + most - 1) // most
    size = (len(files) + count - 1) // count
    return [files[i:i + size] for i in range(0, len(files), size)]

def _grouped_objects_impl(ctx):
    sources = [f for f in ctx.files.srcs if f.extension in ("cc", "cu")]
    units = []
    for index, group in enumerate(groups(sources, ctx.attr.files_per_unit)):
        if len(group) == 1 and group[0].extension == "cc":
            units.append(group[0])  # compiled as itself (a .cu file needs a .cc unit)
            continue

        # A unit of test files is named as one, so that .bazelrc's options for tests apply.
        kind = "_test" if all([f.basename.endswith("_test.cc") for f in group]) else ""
        unit = ctx.actions.declare_file("_grouped/%s/unit_%d%s.cc" % (ctx.label.name, index, kind))
        ctx.actions.write(unit, "".join(['#include "%s"\n' % src.path for src in group]))
        units.append(unit)

    toolchain = find_cpp_toolchain(ctx)
    features = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )

    # The grouped sources (and private headers) are inputs of the compile, as headers are.
    own_files = cc_common.create_compilation_context(headers = depset(ctx.files.srcs))
    _, outputs = cc_common.compile(
        name = ctx.label.name,
        actions = ctx.actions,
        feature_configuration = features,
        cc_toolchain = toolchain,
        srcs = units,
        local_defines = ctx.attr.local_defines,
        # --copt and --cxxopt come with the toolchain. A unit reaches its sources through the
        # include path ".", so __FILE__ would read "./common/..."; the map keeps the workspace's
        # own path in messages (COURSE_CHECK's location, gtest's failures).
        user_compile_flags = ["-fmacro-prefix-map=./="] + ctx.attr.copts,
        compilation_contexts = [own_files] + [dep[CcInfo].compilation_context for dep in ctx.attr.deps],
    )
    return [DefaultInfo(files = depset(outputs.pic_objects + outputs.objects))]

grouped_objects = rule(
    implementation = _grouped_objects_impl,
    doc = "Objects of `srcs` compiled in groups, whose headers and defines go nowhere.",
    attrs = {
        "srcs": attr.label_list(allow_files = [".cc", ".cu", ".h"]),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
        "local_defines": attr.string_list(),
        "files_per_unit": attr.int(default = FILES_PER_UNIT),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)

def files_per_unit():
    """FILES_PER_UNIT, or 1 with `--define=grouped_sources=off`."""
    return select({
        "//tools/cc:grouped_sources_off": 1,
        "//conditions:default": FILES_PER_UNIT,
    })

def interface_library(name, hdrs, deps, testonly = False):
    """`name`_interface: the headers and dependencies `name`'s sources compile against."""
    native.cc_library(
        name = name + "_interface",
        hdrs = hdrs,
        deps = deps,
        testonly = testonly,
        visibility = ["//visibility:private"],
        tags = ["manual"],
    )

def interface_objects(name, suffix, srcs, copts, deps = [], defines = [], testonly = False):
    """[the label of] `srcs`' objects, compiled in groups against `name`'s interface and `deps`.

    Built only through `name` (manual: e.g. `bazel build --config=cpu //...` must not compile
    objects meant for the CUDA build).
    """
    grouped_objects(
        name = name + suffix,
        srcs = srcs,
        deps = [":" + name + "_interface"] + deps,
        copts = copts,
        local_defines = defines,
        files_per_unit = files_per_unit(),
        testonly = testonly,
        visibility = ["//visibility:private"],
        tags = ["manual"],
    )
    return [":" + name + suffix]

def grouped_objects_of(name, srcs, deps, hdrs = [], copts = [], testonly = False):
    """[the label of] the objects of `name`'s `srcs`, compiled in groups against `hdrs` and `deps`."""
    interface_library(name, hdrs, deps, testonly)
    return interface_objects(name, "_objects", srcs, copts, testonly = testonly)

def grouped_cc_library(name, srcs = [], hdrs = [], deps = [], copts = [], **kwargs):
    """A cc_library of `srcs` compiled in groups (see the file's comment).

    Args:
      name: the cc_library's name.
      srcs: its C++ sources and private headers.
      hdrs: its public headers.
      deps: cc dependencies.
      copts: compiler options of the sources.
      **kwargs: passed on to the cc_library (visibility, linkopts, testonly...).
    """
    native.cc_library(
        name = name,
        srcs = grouped_objects_of(name, srcs, deps, hdrs, copts, kwargs.get("testonly", False)),
        hdrs = hdrs,
        deps = deps,
        **kwargs
    )

def grouped_cc_test(name, srcs, deps, **kwargs):
    """A cc_test of several test files compiled in groups (see the file's comment).

    Args:
      name: the test's name.
      srcs: its test files and private headers.
      deps: cc dependencies (a gtest main among them).
      **kwargs: passed on to the cc_test (size, tags, visibility...).
    """
    native.cc_test(
        name = name,
        srcs = grouped_objects_of(name, srcs, deps, testonly = True),
        deps = deps,
        **kwargs
    )
