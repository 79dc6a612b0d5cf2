"""tf_fftconv: fast FFT convolution ops for TensorFlow.

The op library is compiled by the Makefile (the one place its flags live) against the TensorFlow
that is already installed, so install with build isolation off:

    pip install --no-build-isolation .
"""

import os
import subprocess
import sys

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildOpsWithMake(build_py):
    """Runs `make build` before collecting the package, so the .so ships inside tf_fftconv/."""

    def run(self):
        try:
            import tensorflow  # noqa: F401
        except ImportError:
            sys.exit("tf_fftconv compiles against the TensorFlow already installed, but this Python "
                     "cannot import tensorflow. Install TensorFlow first, then run "
                     "`pip install --no-build-isolation .` (build isolation would hide it).")
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call(["make", "build", "PYTHON=" + sys.executable, "-j" + jobs], cwd=HERE)
        super().run()


class BinaryDistribution(Distribution):
    """The package carries a compiled library: wheels are platform wheels."""

    def has_ext_modules(self):
        return True


setup(
    name="tf_fftconv",
    version="0.1.0",
    description="Fast FFT convolution for TensorFlow: custom FFT, spectral matmul and inverse ops",
    long_description=open(os.path.join(HERE, "README.md")).read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["tf_fftconv", "tf_fftconv.*"]),
    package_data={"tf_fftconv": ["_fftconv_ops.so", "_build_info.json"]},
    python_requires=">=3.9",
    # A range, not a pin: the package builds against the TensorFlow a machine already has (Keras 3
    # era); development and CI pin 2.21 in requirements-dev.txt.
    install_requires=["tensorflow>=2.16", "numpy"],
    extras_require={
        "data": ["tensorflow-datasets", "importlib_resources"],
        "bench": ["matplotlib", "tqdm"],
    },
    cmdclass={"build_py": BuildOpsWithMake},
    distclass=BinaryDistribution,
    zip_safe=False,
)
