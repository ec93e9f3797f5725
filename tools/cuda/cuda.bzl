"""`cuda_library`: a cc_library whose CUDA stays inside it.

Its sources come in three kinds:
  srcs       C++ that never sees CUDA: compiled alike in every build, so the CPU-only build and
             the CUDA build share these objects (and Bazel's cache).
  gpu_srcs   C++ with `#if COURSE_WITH_CUDA` parts (the runtime, cuBLAS, cuDNN, NCCL). With CUDA
             they are compiled with COURSE_WITH_CUDA=1 against the toolkit's headers and
             `gpu_deps` (as `cuda_srcs` are), privately: neither the define nor the toolkit's ~1,900 headers reach the
             library's dependents. Without CUDA they are plain C++.
  cuda_srcs  `.cu` files of the single-source kernel families: the bodies, the host side
             (checks and dispatch, `#ifndef __CUDACC__`) and the list of explicit GPU
             instantiations (common/kernels/launch_cuda.cuh). With CUDA, the host compiler
             compiles each as C++ with COURSE_NVCC_INSTANTIATES=1 (the list left empty), and
             nvcc compiles the bodies and the list, a few files per run, to position-independent
             objects (SASS per architecture plus PTX of the newest). Without CUDA they are
             compiled as C++ in which the list instantiates launchers that fail, so launch.h
             calls the launchers with no `#if` (the GPU launchers are chosen at link time) and a
             kernel missing from its list is a link error in both builds.
`hdrs` must not include a CUDA header. "With CUDA" means a toolkit was found and the build is
not `--config=cpu` (`--define=cuda=off`).
"""

load("//tools/cc:grouped_library.bzl", "groups", "interface_library", "interface_objects")
load("@local_cuda//:defs.bzl", "CUDA_FOUND", "DEFAULT_ARCHS", "NVCC")

def _include_flags(contexts):
    dirs = {".": None}
    for cc in contexts:
        for d in cc.includes.to_list() + cc.quote_includes.to_list() + cc.system_includes.to_list():
            dirs[d] = None
    return ["-I" + d for d in dirs]

# Each nvcc run spends about four seconds before its first kernel (cudafe++ and the host
# compiler over the CUDA runtime's headers), whatever the file, so a library's .cu files are
# compiled in groups of at most this many: a generated file includes each group's files in
# order and nvcc compiles it once. Diagnostics still name the file and line of the .cu source.
_CUDA_FILES_PER_NVCC = 8

def _cuda_objects_impl(ctx):
    contexts = [dep[CcInfo].compilation_context for dep in ctx.attr.deps]
    headers = depset(transitive = [cc.headers for cc in contexts])
    archs = ctx.attr.archs
    # nvcc's -O is the host compiler's level alone: cicc and ptxas optimise the device code
    # whatever it is (the PTX is byte-identical at -O0 and -O3). The host side of a .cu file is
    # its kernels' launch stubs: -O1 compiled them 4 s faster per group, but gpt-tiny's
    # launch-bound step on an H200 took 4-7% longer (medians of 4 alternating runs), so -O3.
    flags = ["-std=c++20", "-O3", "-Xcompiler", "-fPIC", "--expt-relaxed-constexpr"]
    flags += ["-gencode=arch=compute_%s,code=sm_%s" % (a, a) for a in archs]
    flags.append("-gencode=arch=compute_%s,code=compute_%s" % (archs[-1], archs[-1]))
    flags += _include_flags(contexts)
    objects = []
    sources = [f for f in ctx.files.srcs if f.extension == "cu"]
    private_headers = [f for f in ctx.files.srcs if f.extension == "h"]
    for index, group in enumerate(groups(sources, _CUDA_FILES_PER_NVCC)):
        stem = "_cuda_objs/%s/group_%d" % (ctx.label.name, index)
        source = ctx.actions.declare_file(stem + ".cu")
        ctx.actions.write(source, "".join(['#include "%s"\n' % src.path for src in group]))
        obj = ctx.actions.declare_file(stem + ".pic.o")
        ctx.actions.run(
            executable = ctx.executable._wrapper,
            arguments = [ctx.attr.nvcc, source.path, obj.path] + flags,
            inputs = depset([source] + group + private_headers, transitive = [headers]),
            outputs = [obj],
            mnemonic = "NvccCompile",
            progress_message = "nvcc %s (sm_%s)" % (
                " ".join([src.short_path for src in group]),
                ",".join(archs),
            ),
            use_default_shell_env = True,
        )
        objects.append(obj)
    return [DefaultInfo(files = depset(objects))]

_cuda_objects = rule(
    implementation = _cuda_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu", ".h"]),
        "deps": attr.label_list(providers = [CcInfo]),
        "archs": attr.string_list(),
        "nvcc": attr.string(),
        "_wrapper": attr.label(
            default = "//tools/cuda:nvcc_wrapper.sh",
            allow_single_file = True,
            executable = True,
            cfg = "exec",
        ),
    },
)

def _with_cuda(cuda_value, cpu_value):
    """cuda_value in a build with CUDA, cpu_value otherwise."""
    if not CUDA_FOUND:
        return cpu_value
    return select({
        "//tools/cuda:forced_off": cpu_value,
        "//conditions:default": cuda_value,
    })

def cuda_library(
        name,
        srcs = [],
        gpu_srcs = [],
        cuda_srcs = [],
        hdrs = [],
        deps = [],
        gpu_deps = [],
        copts = [],
        **kwargs):
    """A cc_library of C++ `srcs`, `gpu_srcs` and `cuda_srcs` (see the file's comment).

    Args:
      name: the cc_library's name.
      srcs: C++ sources that do not see CUDA.
      gpu_srcs: C++ sources with `#if COURSE_WITH_CUDA` parts.
      cuda_srcs: `.cu` files of the kernel families (bodies, host side, GPU instantiations).
      hdrs: public headers (no CUDA header among what they include).
      deps: cc dependencies of every source.
      gpu_deps: further dependencies of `gpu_srcs` and `cuda_srcs` with CUDA (cuda_check.h's
        target).
      copts: compiler options of the C++ sources (gpu_srcs and the host side of cuda_srcs
        included).
      **kwargs: passed on to the cc_library.
    """
    # Every C++ part is compiled in groups (tools/cc/grouped_library.bzl).
    interface_library(name, hdrs, deps)
    common_objects = interface_objects(name, "_objects", srcs, copts) if srcs else []
    with_cuda, without_cuda = [], []
    cuda_deps = ["@local_cuda//:headers"] + gpu_deps
    if gpu_srcs:
        without_cuda += interface_objects(name, "_gpu_srcs_objects", gpu_srcs, copts)
        if CUDA_FOUND:
            with_cuda += interface_objects(
                name,
                "_gpu_objects",
                gpu_srcs,
                copts,
                cuda_deps,
                ["COURSE_WITH_CUDA=1"],
            )
    if cuda_srcs:
        # The .cu files read the library's private headers (those among its sources) too.
        cuda_srcs = cuda_srcs + [s for s in srcs + gpu_srcs if s.endswith(".h")]

        # Without CUDA, the .cu files compile as C++ against the failing stubs.
        without_cuda += interface_objects(name, "_host_and_stubs", cuda_srcs, copts)
        if CUDA_FOUND:
            with_cuda += interface_objects(
                name,
                "_host_side",
                cuda_srcs,
                copts,
                defines = ["COURSE_NVCC_INSTANTIATES=1"],
            )
            # Built only through `name` (manual: the CPU-only build must not compile it).
            _cuda_objects(
                name = name + "_cuda_objects",
                srcs = cuda_srcs,
                deps = [":" + name + "_interface"] + cuda_deps,
                archs = DEFAULT_ARCHS,
                nvcc = NVCC,
                visibility = ["//visibility:private"],
                tags = ["manual"],
            )
            with_cuda.append(":" + name + "_cuda_objects")
    native.cc_library(
        name = name,
        srcs = common_objects + _with_cuda(with_cuda, without_cuda),
        hdrs = hdrs,
        deps = deps + ["//tools/cuda:libraries"],
        **kwargs
    )
