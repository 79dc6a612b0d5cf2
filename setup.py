"""tf_fftconv: fast FFT convolution ops for TensorFlow.

The op library is compiled by the Makefile (the one place its flags live) against the TensorFlow
that is already installed, so install with build isolation off:

    pip install --no-build-isolation .
"""

import importlib.util
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Commands that make metadata, build or install: pip runs `dist_info` first, and with setuptools
# older than 70.1 that already needs the `wheel` package.
_BUILD_COMMANDS = {"dist_info", "egg_info", "bdist_wheel", "bdist_egg", "build", "build_py",
                   "build_ext", "install", "develop", "editable_wheel"}


def _importable(module):
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or the module blocked
        return False


def _check_build_environment(argv):
    """Stops with what to do, before setuptools or pip report the same lack less clearly."""
    if not _BUILD_COMMANDS & set(argv):
        return
    problems = []
    if not (_importable("wheel") or _importable("setuptools.command.bdist_wheel")):
        problems.append("building needs the `wheel` package (or setuptools >= 70.1), which this "
                        "Python lacks: `python -m pip install wheel`.")
    if not _importable("tensorflow"):
        problems.append("the op library compiles against the TensorFlow already installed "
                        "(2.18 to 2.21), but this Python cannot import tensorflow: install "
                        "TensorFlow first. (Build isolation would hide it: keep "
                        "--no-build-isolation.)")
    if problems:
        sys.exit("tf_fftconv: " + "\n".join(problems)
                 + "\nThen run `pip install --no-build-isolation .` again.")


_check_build_environment(sys.argv[1:])

from setuptools import find_packages, setup  # noqa: E402  (after the check, which says more)
from setuptools.command.build_py import build_py  # noqa: E402
from setuptools.dist import Distribution  # noqa: E402

try:  # setuptools >= 70.1 carries bdist_wheel; older ones take it from the `wheel` package
    from setuptools.command.bdist_wheel import bdist_wheel  # noqa: E402
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel  # noqa: E402
    except ImportError:  # only commands that build no wheel get here (the check above)
        bdist_wheel = None


class BuildOpsWithMake(build_py):
    """Runs `make build` before collecting the package, so the .so ships inside tf_fftconv/."""

    def run(self):
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call(["make", "build", "PYTHON=" + sys.executable, "-j" + jobs], cwd=HERE)
        super().run()


def _tensorflow_version():
    """The TensorFlow the library compiles against (the one this Python imports)."""
    done = subprocess.run([sys.executable, "-c", "import tensorflow as tf; print(tf.__version__)"],
                          capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else None


def _package_version():
    """0.1.0+tf2.21.0: the local label names the TensorFlow the library was built against, which is
    the one it loads under (the loader refuses another with a "rebuild" message)."""
    with open(os.path.join(HERE, "tf_fftconv", "__init__.py")) as f:
        version = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)
    tensorflow = _tensorflow_version() if _BUILD_COMMANDS & set(sys.argv[1:]) else None
    return version + ("+tf" + tensorflow if tensorflow else "")


COMMANDS = {"build_py": BuildOpsWithMake}
if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        """py3-none-<platform>: the library uses no Python C API, only TensorFlow's, so one wheel
        serves every Python that runs the TensorFlow it was built against."""

        def get_tag(self):
            _, _, platform = super().get_tag()
            return "py3", "none", platform

    COMMANDS["bdist_wheel"] = PlatformWheel


class BinaryDistribution(Distribution):
    """The package carries a compiled library: wheels are platform wheels."""

    def has_ext_modules(self):
        return True


setup(
    name="tf_fftconv",
    version=_package_version(),
    description="Fast FFT convolution for TensorFlow: custom FFT, spectral matmul and inverse ops",
    long_description=open(os.path.join(HERE, "README.md")).read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["tf_fftconv", "tf_fftconv.*"]),
    package_data={"tf_fftconv": ["_fftconv_ops.so", "_build_info.json"]},
    python_requires=">=3.9",
    # No TensorFlow here: the library is built against the TensorFlow a machine already has (2.18
    # to 2.21 build and pass) and installing it must never install or replace one; the loader
    # names the version it needs. NumPy comes with every TensorFlow.
    install_requires=["numpy"],
    extras_require={
        "data": ["tensorflow-datasets"],
        "bench": ["matplotlib", "tqdm"],
    },
    cmdclass=COMMANDS,
    distclass=BinaryDistribution,
    zip_safe=False,
)
