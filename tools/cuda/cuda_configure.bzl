"""Repository rule that finds the CUDA toolkit at build time.

It looks, in order, at $CUDA_HOME, $CUDA_PATH, the `nvcc` on $PATH and /usr/local/cuda. With a
toolkit it exposes the headers as a cc_library target and writes `defs.bzl` with CUDA_FOUND =
True, the nvcc path, the GPU architectures to compile for (COURSE_CUDA_ARCHS, else the
machine's GPUs, else sm_80) and the link options of cudart, cuBLAS(Lt),
cuDNN and NCCL; without one the headers target is empty, so every target still builds for the
CPU. nvJPEG (day 3's GPU decoding) comes from the toolkit when it has it, else from the wheel
setup.sh unpacks ($COURSE_NVJPEG_HOME, else ~/.cache/course/nvjpeg-*): `:nvjpeg` then carries
its header and COURSE_WITH_NVJPEG=1, and its library joins the link options; without it
`:nvjpeg` is empty and the GPU decoder refuses to run, saying why. The cuDNN frontend's headers
(cuDNN's graph API in C++: flash attention) come the same way from the wheel setup.sh unpacks
($COURSE_CUDNN_FRONTEND_HOME, else ~/.cache/course/cudnn-frontend-*): `:cudnn_frontend` carries
them and COURSE_WITH_CUDNN_FRONTEND=1, or is empty and attention keeps the course's kernels.
Set COURSE_CUDA=off (`--repo_env=COURSE_CUDA=off`) to pretend no toolkit is installed.
"""

_LIBS = ["cudart", "cublas", "cublasLt", "cudnn", "nccl"]

def _find_cuda_home(rctx):
    if rctx.os.environ.get("COURSE_CUDA", "") in ["0", "off", "no", "false"]:
        return None
    for var in ["CUDA_HOME", "CUDA_PATH"]:
        home = rctx.os.environ.get(var, "")
        if home and rctx.path(home + "/bin/nvcc").exists:
            return rctx.path(home)
    nvcc = rctx.which("nvcc")
    if nvcc:
        return nvcc.realpath.dirname.dirname
    if rctx.path("/usr/local/cuda/bin/nvcc").exists:
        return rctx.path("/usr/local/cuda").realpath
    return None

def _nvcc_version(rctx, nvcc):
    result = rctx.execute([nvcc, "--version"])
    for line in result.stdout.splitlines():
        if "release" in line:
            # "Cuda compilation tools, release 13.0, V13.0.88"
            return line.split("release ")[1].split(",")[0]
    fail("cannot read the CUDA version from `%s --version`: %s" % (nvcc, result.stderr))

def _visible_gpu_archs(rctx):
    # The compute capabilities of this machine's GPUs ("9.0" -> "90"), none without a driver.
    smi = rctx.which("nvidia-smi")
    if not smi:
        return []
    result = rctx.execute([smi, "--query-gpu=compute_cap", "--format=csv,noheader"])
    if result.return_code != 0:
        return []
    archs = {}
    for line in result.stdout.splitlines():
        if line.strip():
            archs[line.strip().replace(".", "")] = None
    return sorted(archs.keys())

def _default_archs(rctx):
    # The GPUs this machine has: a build on a GPU node compiles for exactly those. Without one
    # (a login node, a laptop, CI): SASS for sm_80 and its PTX, which A100s run as is and the
    # newer GPUs (H100, H200, ...) compile once at load (the driver caches the result). One
    # architecture costs half the compile time of three (README: How the build handles CUDA).
    return _visible_gpu_archs(rctx) or ["80"]

def _compilable_archs(rctx, nvcc):
    # The architectures this nvcc compiles for ("compute_75" -> "75"), None when it cannot say.
    result = rctx.execute([nvcc, "--list-gpu-arch"])
    if result.return_code != 0:
        return None
    return [a.strip()[len("compute_"):] for a in result.stdout.splitlines() if a.strip().startswith("compute_")]

def _check_archs(rctx, archs, nvcc, version):
    # Refuses, with one message, an architecture this nvcc has no compiler for: CUDA 13 dropped
    # Volta, so a V100 (sm_70) build needs a CUDA 12 toolkit.
    compilable = _compilable_archs(rctx, nvcc)
    if compilable == None:
        return
    missing = [a for a in archs if a.rstrip("af") not in compilable]
    if missing:
        fail(("nvcc %s cannot compile for sm_%s (it compiles for sm_%s); V100s (sm_70) need " +
              "CUDA 12.x: load that toolkit, or name other GPUs in COURSE_CUDA_ARCHS") %
             (version, ", sm_".join(missing), ", sm_".join(compilable)))

def _find_nvjpeg(rctx, home):
    # (include dir, lib dir) of nvJPEG, or None.
    candidates = [str(home)]
    if rctx.os.environ.get("COURSE_NVJPEG_HOME", ""):
        candidates.insert(0, rctx.os.environ["COURSE_NVJPEG_HOME"])
    cache = rctx.path(rctx.os.environ.get("HOME", "/nonexistent") + "/.cache/course")
    if cache.exists:
        candidates += sorted([str(d) for d in cache.readdir() if d.basename.startswith("nvjpeg-")])
    for c in candidates:
        for lib in ["lib64", "lib"]:
            if rctx.path(c + "/include/nvjpeg.h").exists and rctx.path(c + "/" + lib).exists:
                for so in rctx.path(c + "/" + lib).readdir():
                    if so.basename.startswith("libnvjpeg.so"):
                        return (c + "/include", c + "/" + lib, so.basename)
    return None

def _find_cudnn_frontend(rctx):
    # The include dir holding cudnn_frontend.h, or None.
    candidates = []
    if rctx.os.environ.get("COURSE_CUDNN_FRONTEND_HOME", ""):
        candidates.append(rctx.os.environ["COURSE_CUDNN_FRONTEND_HOME"])
    cache = rctx.path(rctx.os.environ.get("HOME", "/nonexistent") + "/.cache/course")
    if cache.exists:
        candidates += sorted([str(d) for d in cache.readdir() if d.basename.startswith("cudnn-frontend-")])
    for c in candidates:
        if rctx.path(c + "/include/cudnn_frontend.h").exists:
            return c + "/include"
    return None

def _cudnn_frontend_target(rctx, include_dir):
    if include_dir == None:
        return 'cc_library(name = "cudnn_frontend")\n'
    # In a folder named include: the headers include each other as "../include/...".
    rctx.symlink(include_dir, "cudnn_frontend/include")
    # Header-only; its JSON serialisation keeps plans between processes (plan_store.h). It
    # finds cuDNN's functions (and NVRTC's, for its own engines) at run time: libcudnn is
    # already loaded by then, and NVRTC is needed only by engines the course does not build.
    return """
cc_library(
    name = "cudnn_frontend",
    hdrs = glob(["cudnn_frontend/include/**/*.h", "cudnn_frontend/include/**/*.hpp"]),
    includes = ["cudnn_frontend/include"],
    defines = [
        "COURSE_WITH_CUDNN_FRONTEND=1",
        "NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING",
    ],
    deps = [":headers"],
)
"""

def _nvjpeg_target(rctx, found):
    if found == None:
        return 'cc_library(name = "nvjpeg")\n'
    rctx.symlink(found[0] + "/nvjpeg.h", "nvjpeg_include/nvjpeg.h")
    return """
cc_library(
    name = "nvjpeg",
    hdrs = ["nvjpeg_include/nvjpeg.h"],
    includes = ["nvjpeg_include"],
    defines = ["COURSE_WITH_NVJPEG=1"],
)
"""

def _empty_headers():
    return """
cc_library(name = "headers")
"""

def _cuda_configure_impl(rctx):
    home = _find_cuda_home(rctx)
    build = ['package(default_visibility = ["//visibility:public"])\n']
    if home == None:
        build.append(_empty_headers())
        build.append(_nvjpeg_target(rctx, None))
        build.append(_cudnn_frontend_target(rctx, None))
        rctx.file("BUILD", "".join(build))
        rctx.file("defs.bzl", "CUDA_FOUND = False\nNVCC = None\nCUDA_VERSION = None\n" +
                              "DEFAULT_ARCHS = []\nLINKOPTS = []\n")
        return
    rctx.symlink(str(home) + "/include", "include")
    rctx.symlink(str(home) + "/bin/nvcc", "nvcc")
    lib_dir = str(home) + "/lib64"
    version = _nvcc_version(rctx, str(home) + "/bin/nvcc")
    archs = rctx.os.environ.get("COURSE_CUDA_ARCHS", "")
    archs = archs.split(",") if archs else _default_archs(rctx)
    _check_archs(rctx, archs, str(home) + "/bin/nvcc", version)
    build.append("""
exports_files(["nvcc"])

cc_library(
    name = "headers",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp", "include/**/*.cuh", "include/**/*.inl"]),
    includes = ["include"],
)
""")
    nvjpeg = _find_nvjpeg(rctx, home)
    build.append(_nvjpeg_target(rctx, nvjpeg))
    build.append(_cudnn_frontend_target(rctx, _find_cudnn_frontend(rctx)))
    rctx.file("BUILD", "".join(build))
    linkopts = ["-L" + lib_dir, "-Wl,-rpath," + lib_dir] + ["-l" + lib for lib in _LIBS]
    if nvjpeg != None:
        linkopts += ["-L" + nvjpeg[1], "-Wl,-rpath," + nvjpeg[1], "-l:" + nvjpeg[2]]
    rctx.file("defs.bzl", "\n".join([
        "CUDA_FOUND = True",
        "NVCC = %r" % (str(home) + "/bin/nvcc"),
        "CUDA_HOME = %r" % str(home),
        "CUDA_VERSION = %r" % version,
        "DEFAULT_ARCHS = %r" % archs,
        "LINKOPTS = %r" % linkopts,
        "",
    ]))

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = [
        "COURSE_CUDA",
        "COURSE_CUDA_ARCHS",
        "COURSE_NVJPEG_HOME",
        "COURSE_CUDNN_FRONTEND_HOME",
        "CUDA_HOME",
        "CUDA_PATH",
        "HOME",
        "PATH",
    ],
    local = True,
)
