"""The first run: setup.py speaks first when the build cannot work (no `wheel`, no TensorFlow);
`make setup` keeps a supported TensorFlow and gets the offline data set where apt allows."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _setup_py(argv, blocked=()):
    """Runs setup.py with `argv` in a Python where the `blocked` modules cannot be imported."""
    code = textwrap.dedent(f"""
        import runpy, sys
        for name in {list(blocked)!r}:
            sys.modules[name] = None  # makes `import name` and find_spec(name) fail
        sys.argv = ["setup.py"] + {list(argv)!r}
        runpy.run_path("setup.py", run_name="__main__")
    """)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


NO_WHEEL = ("wheel", "setuptools.command.bdist_wheel")


@pytest.mark.parametrize("command", ["dist_info", "bdist_wheel", "install"])
def test_missing_wheel_and_tensorflow_are_named(command):
    done = _setup_py([command], blocked=NO_WHEEL + ("tensorflow",))
    assert done.returncode == 1
    assert "tf_fftconv: building needs the `wheel` package" in done.stderr
    assert "cannot import tensorflow: install TensorFlow first" in done.stderr
    assert "pip install --no-build-isolation ." in done.stderr
    assert "invalid command" not in done.stderr


def test_missing_wheel_alone(tmp_path):
    done = _setup_py(["bdist_wheel", "--dist-dir", str(tmp_path)], blocked=NO_WHEEL)
    assert done.returncode == 1
    assert "`python -m pip install wheel`" in done.stderr
    assert "tensorflow" not in done.stderr


def test_missing_tensorflow_alone():
    done = _setup_py(["dist_info"], blocked=("tensorflow",))
    assert done.returncode == 1
    assert "cannot import tensorflow" in done.stderr and "wheel" not in done.stderr


def test_commands_that_build_nothing_are_not_stopped():
    done = _setup_py(["--name"], blocked=NO_WHEEL + ("tensorflow",))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "tf_fftconv"


# ----------------------------------------------------------------------------- make setup

def _fake_python(tmp_path, tensorflow):
    """PYTHONPATH entries that stand in for TensorFlow (`tensorflow` a version, or None: broken)
    and for pip (which records its arguments instead of installing)."""
    fake = tmp_path / "fake"
    (fake / "tensorflow").mkdir(parents=True)
    (fake / "pip").mkdir()
    (fake / "tensorflow" / "__init__.py").write_text(
        f"__version__ = {tensorflow!r}\n" if tensorflow else "raise ImportError('no tensorflow')\n")
    (fake / "pip" / "__init__.py").write_text("")
    (fake / "pip" / "__main__.py").write_text(
        "import json, os, sys\n"
        "with open(os.environ['PIP_CALLS'], 'a') as f:\n"
        "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n")
    return fake


def _make_setup(tmp_path, tensorflow, *make_args):
    import json

    calls = tmp_path / "pip_calls"
    env = dict(os.environ, PYTHONPATH=str(_fake_python(tmp_path, tensorflow)),
               PIP_CALLS=str(calls), TF_FFTCONV_FASHION_MNIST_DIR=str(tmp_path))
    done = subprocess.run(["make", "--no-print-directory", "setup", "PYTHON=" + sys.executable,
                           *make_args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = calls.read_text().splitlines() if calls.exists() else []
    return done.stdout, [json.loads(line) for line in lines]


@pytest.mark.parametrize("version", ["2.18.1", "2.20.0", "2.21.0"])
def test_setup_keeps_a_supported_tensorflow(tmp_path, version):
    out, pip_calls = _make_setup(tmp_path, version)
    assert f"keeping the installed TensorFlow {version}" in out
    assert pip_calls == [["install", "-q", "-r", "requirements-dev.txt"]]
    assert f"Fashion-MNIST is in {tmp_path}" in out


@pytest.mark.parametrize("version", [None, "2.17.0", "2.22.0"])
def test_setup_installs_tensorflow_when_none_supported_is_importable(tmp_path, version):
    out, pip_calls = _make_setup(tmp_path, version)
    assert "no supported TensorFlow" in out and (version is None or f"found {version}" in out)
    assert pip_calls == [["install", "-q", "tensorflow==2.21.*"],
                         ["install", "-q", "-r", "requirements-dev.txt"]]


def test_setup_installs_the_tensorflow_it_is_given(tmp_path):
    _, pip_calls = _make_setup(tmp_path, None, "TENSORFLOW=tensorflow==2.20.* keras==3.13.2")
    assert pip_calls[0] == ["install", "-q", "tensorflow==2.20.*", "keras==3.13.2"]


def test_dev_requirements_never_name_tensorflow():
    with open(os.path.join(ROOT, "requirements-dev.txt")) as f:
        names = [line.split("#")[0].strip() for line in f]
    names = [n for n in names if n]
    assert "pytest" in names
    assert not [n for n in names if re.split(r"[<>=!~\[; ]", n)[0].lower() in
                ("tensorflow", "tensorflow-cpu", "tf-nightly", "keras")], names


# ----------------------------------------------------------------------------- Fashion-MNIST

INSTALL_DATA = os.path.join(ROOT, "tools", "install_fashion_mnist.sh")


def _install_data(tmp_path, tools):
    """Runs the data step with a PATH holding only `tools` ({name: shell script body})."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in tools.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body + "\n")
        (bin_dir / name).chmod(0o755)
    target = tmp_path / "datasets" / "fashion-mnist"
    env = {"PATH": str(bin_dir), "TF_FFTCONV_FASHION_MNIST_DIR": str(target),
           "LOG": str(tmp_path / "log")}
    done = subprocess.run(["/bin/sh", INSTALL_DATA], env=env, capture_output=True, text=True,
                          timeout=60)
    log = (tmp_path / "log").read_text().splitlines() if (tmp_path / "log").exists() else []
    return done, target, log


def test_data_step_without_apt_says_how(tmp_path):
    done, _, _ = _install_data(tmp_path, {"id": "echo 0"})
    assert done.returncode == 0
    assert "no apt-get here" in done.stdout and "dataset-fashion-mnist" in done.stdout


def test_data_step_without_root_says_how(tmp_path):
    done, _, log = _install_data(tmp_path, {"id": "echo 1000", "apt-get": 'echo "$@" >> "$LOG"'})
    assert done.returncode == 0 and log == []
    assert "sudo apt-get install dataset-fashion-mnist" in done.stdout


def test_data_step_installs_the_package_as_root(tmp_path):
    apt = ('echo "$@" >> "$LOG"\n'
           'case "$*" in *install*) mkdir -p "$TF_FFTCONV_FASHION_MNIST_DIR";; esac')
    done, target, log = _install_data(tmp_path, {"id": "echo 0", "apt-get": apt,
                                                 "mkdir": 'exec /bin/mkdir "$@"'})
    assert done.returncode == 0 and target.is_dir()
    assert log == ["install -y -q dataset-fashion-mnist"]
    assert f"Fashion-MNIST is in {target}" in done.stdout


def test_data_step_updates_package_lists_once_then_gives_up_quietly(tmp_path):
    done, target, log = _install_data(tmp_path, {"id": "echo 0",
                                                 "apt-get": 'echo "$@" >> "$LOG"; exit 100'})
    assert done.returncode == 0 and not target.exists()
    assert log == ["install -y -q dataset-fashion-mnist", "update -q"]
    assert "could not install dataset-fashion-mnist" in done.stdout
