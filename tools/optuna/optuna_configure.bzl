"""The Python with Optuna that setup.sh installs (a virtual environment of the project's own,
$COURSE_OPTUNA_HOME, else ~/.cache/course/optuna-<version>): `@optuna//:python` runs it, for the
tests that open the course's exports with Optuna itself. Where there is none, `python` says so
and exits 1, so such a test fails naming the fix instead of passing untested."""

def _optuna_configure_impl(rctx):
    home = rctx.os.environ.get("COURSE_OPTUNA_HOME", "")
    if not home:
        home = rctx.os.environ.get("HOME", "/root") + "/.cache/course/optuna-" + rctx.attr.version
    python = rctx.path(home + "/bin/python3")
    if python.exists:
        script = "#!/bin/sh\nexec %s \"$@\"\n" % python
    else:
        script = ("#!/bin/sh\necho \"no Python with Optuna at %s: run ./setup.sh (or set " +
                  "COURSE_OPTUNA_HOME to a virtual environment with optuna==%s)\" >&2\nexit 1\n") % (
            home,
            rctx.attr.version,
        )
    rctx.file("python", script, executable = True)
    rctx.file("BUILD", 'exports_files(["python"], visibility = ["//visibility:public"])\n')

optuna_configure = repository_rule(
    implementation = _optuna_configure_impl,
    attrs = {"version": attr.string(mandatory = True)},
    environ = ["COURSE_OPTUNA_HOME", "HOME"],
    local = True,
)
