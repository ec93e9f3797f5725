"""`cuda_library`: a cc_library whose `.cu` sources are compiled by nvcc.

Each `.cu` file becomes one position-independent object (`nvcc -c`, one SASS per architecture
plus PTX of the newest for forward compatibility) that is linked into an ordinary cc_library.
Without a CUDA toolkit, or with `--config=cpu` (`--define=cuda=off`), the `.cu` files are
skipped and only the C++ sources are built, so the same target serves both configurations.
"""

load("@local_cuda//:defs.bzl", "CUDA_FOUND", "DEFAULT_ARCHS", "NVCC")

def _include_flags(contexts):
    dirs = {".": None}
    for cc in contexts:
        for d in cc.includes.to_list() + cc.quote_includes.to_list() + cc.system_includes.to_list():
            dirs[d] = None
    return ["-I" + d for d in dirs]

def _cuda_objects_impl(ctx):
    if not ctx.attr.enabled:
        return [DefaultInfo(files = depset())]
    contexts = [dep[CcInfo].compilation_context for dep in ctx.attr.deps]
    headers = depset(transitive = [cc.headers for cc in contexts])
    defines = {}
    for cc in contexts:
        for d in cc.defines.to_list():
            defines[d] = None
    archs = ctx.attr.archs
    flags = ["-std=c++20", "-O3", "-Xcompiler", "-fPIC", "--expt-relaxed-constexpr"]
    flags += ["-gencode=arch=compute_%s,code=sm_%s" % (a, a) for a in archs]
    flags.append("-gencode=arch=compute_%s,code=compute_%s" % (archs[-1], archs[-1]))
    flags += ["-D" + d for d in defines] + _include_flags(contexts) + ctx.attr.copts
    objects = []
    for src in ctx.files.srcs:
        stem = src.basename[:-len(src.extension) - 1]
        obj = ctx.actions.declare_file("_cuda_objs/%s/%s.pic.o" % (ctx.label.name, stem))
        ctx.actions.run(
            executable = ctx.executable._wrapper,
            arguments = [ctx.attr.nvcc, src.path, obj.path] + flags,
            inputs = depset([src], transitive = [headers]),
            outputs = [obj],
            mnemonic = "NvccCompile",
            progress_message = "nvcc %s (sm_%s)" % (src.short_path, ",".join(archs)),
            use_default_shell_env = True,
        )
        objects.append(obj)
    return [DefaultInfo(files = depset(objects))]

_cuda_objects = rule(
    implementation = _cuda_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
        "archs": attr.string_list(),
        "nvcc": attr.string(),
        "enabled": attr.bool(default = True),
        "_wrapper": attr.label(
            default = "//tools/cuda:nvcc_wrapper.sh",
            allow_single_file = True,
            executable = True,
            cfg = "exec",
        ),
    },
)

def cuda_library(name, srcs = [], cuda_srcs = [], hdrs = [], deps = [], **kwargs):
    """A cc_library with C++ `srcs` and CUDA `cuda_srcs`, the latter compiled only with CUDA.

    Args:
      name: the cc_library's name.
      srcs: C++ sources.
      cuda_srcs: `.cu` sources; they may include `hdrs` and the headers of `deps`.
      hdrs: public headers.
      deps: cc dependencies of both the C++ and the CUDA sources.
      **kwargs: passed on to the cc_library.
    """
    deps = deps + ["//tools/cuda:config"]
    objects = []
    if CUDA_FOUND and cuda_srcs:
        # The select is written twice on purpose: in srcs so the CPU build links no object, and
        # in `enabled` so `bazel build --config=cpu //...` does not run nvcc for this target.
        native.cc_library(name = name + "_cuda_headers", hdrs = hdrs, deps = deps)
        _cuda_objects(
            name = name + "_cuda_objects",
            srcs = cuda_srcs,
            deps = [":" + name + "_cuda_headers"],
            archs = DEFAULT_ARCHS,
            nvcc = NVCC,
            enabled = select({
                "//tools/cuda:forced_off": False,
                "//conditions:default": True,
            }),
        )
        objects = [":" + name + "_cuda_objects"]
    native.cc_library(
        name = name,
        srcs = srcs + select({
            "//tools/cuda:forced_off": [],
            "//conditions:default": objects,
        }),
        hdrs = hdrs,
        deps = deps,
        **kwargs
    )
