"""Repository rule that exposes the installed pip TensorFlow to Bazel.

It asks Python for tf.sysconfig's include and library directories and the defines of its compile
flags (as the Makefile uses them), links the directories into the external repository, and writes a
BUILD file with the header library, libtensorflow_framework and libtensorflow_cc.
"""

def _python(repository_ctx):
    return repository_ctx.os.environ.get("TF_PYTHON", "python3")

def _ask(repository_ctx, expression):
    result = repository_ctx.execute([
        _python(repository_ctx),
        "-c",
        "import tensorflow as tf; print(%s)" % expression,
    ])
    if result.return_code != 0:
        fail("tf_configure: cannot import tensorflow with %s: %s" % (_python(repository_ctx), result.stderr))
    return result.stdout.strip().splitlines()[-1]

def _tf_configure_impl(repository_ctx):
    include_dir = _ask(repository_ctx, "tf.sysconfig.get_include()")
    lib_dir = _ask(repository_ctx, "tf.sysconfig.get_lib()")
    defines = [d for d in _ask(
        repository_ctx,
        "' '.join(f[2:] for f in tf.sysconfig.get_compile_flags() if f.startswith('-D'))",
    ).split(" ") if d]
    repository_ctx.symlink(include_dir, "include")
    repository_ctx.symlink(lib_dir + "/libtensorflow_framework.so.2", "libtensorflow_framework.so.2")
    repository_ctx.symlink(lib_dir + "/libtensorflow_cc.so.2", "libtensorflow_cc.so.2")
    repository_ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "tf_header_lib",
    hdrs = glob(["include/**"]),
    # The tf2xla headers of the XLA lowering need two of TensorFlow's bundled header trees too.
    includes = ["include", "include/external/highwayhash", "include/external/farmhash_archive/src"],
    defines = %s,
)

cc_import(
    name = "libtensorflow_framework",
    shared_library = "libtensorflow_framework.so.2",
)

# The tf2xla symbols of the XLA lowering.
cc_import(
    name = "libtensorflow_cc",
    shared_library = "libtensorflow_cc.so.2",
)
""" % repr(defines))

tf_configure = repository_rule(
    implementation = _tf_configure_impl,
    environ = ["TF_PYTHON"],
    local = True,
)
