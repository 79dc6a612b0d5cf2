"""The tools that prepare a GPU host's work on a machine without a GPU and run it there:
tools/prebuilt.sh carries builds there byte for byte, tools/gpu_check.sh runs the kernel check's
parts, and tools/kernel_turns.sh times builds in turns."""

import hashlib
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NEEDS_XZ = pytest.mark.skipif(shutil.which("xz") is None, reason="xz is not installed")


def _tree(tmp_path):
    """A scratch tree with tools/prebuilt.sh and stand-ins for the builds it carries."""
    os.makedirs(tmp_path / "tools")
    shutil.copy(os.path.join(ROOT, "tools", "prebuilt.sh"), tmp_path / "tools")
    builds = {
        "tf_fftconv/_fftconv_ops.so": os.urandom(5000),
        "tf_fftconv/_build_info.json": b'{"tensorflow_version": "2.21.0"}',
        "build/kernel_check": os.urandom(3000),
        "build/cpu_kernel_check": os.urandom(2000),
        "build/scratch/kernel_check": os.urandom(4000),
    }
    for path, data in builds.items():
        os.makedirs(os.path.dirname(tmp_path / path), exist_ok=True)
        (tmp_path / path).write_bytes(data)
    return {path: hashlib.md5(data).hexdigest() for path, data in builds.items()}


def _prebuilt(tmp_path, *args):
    return subprocess.run(["bash", str(tmp_path / "tools" / "prebuilt.sh"), *args],
                          capture_output=True, text=True, timeout=120)


@NEEDS_XZ
def test_prebuilt_carries_the_library_the_check_and_named_builds_byte_for_byte(tmp_path):
    digests = _tree(tmp_path)
    extra = ["build/cpu_kernel_check", "build/scratch/kernel_check"]
    packed = _prebuilt(tmp_path, "pack", *extra)
    assert packed.returncode == 0, packed.stderr
    for path in digests:  # what a GPU host's fresh tree lacks
        os.remove(tmp_path / path)
    shutil.rmtree(tmp_path / "build" / "scratch")
    unpacked = _prebuilt(tmp_path, "unpack")
    assert unpacked.returncode == 0, unpacked.stderr
    for path, digest in digests.items():
        assert hashlib.md5((tmp_path / path).read_bytes()).hexdigest() == digest, path
    assert os.access(tmp_path / extra[0], os.X_OK)
    assert os.access(tmp_path / "build" / "kernel_check", os.X_OK)


@NEEDS_XZ
@pytest.mark.parametrize("path, message", [
    ("build/scratch/absent", "is missing: build it first"),
    ("build/../build/kernel_check", "name builds by their path in the tree"),
])
def test_prebuilt_refuses_what_it_cannot_carry_and_keeps_the_last_pack(tmp_path, path, message):
    _tree(tmp_path)
    assert _prebuilt(tmp_path, "pack").returncode == 0
    refused = _prebuilt(tmp_path, "pack", path)
    assert refused.returncode == 2 and message in refused.stderr
    assert (tmp_path / "build" / "prebuilt" / "_fftconv_ops.so.xz").exists()


def test_prebuilt_unpack_without_a_pack_says_so(tmp_path):
    _tree(tmp_path)
    done = _prebuilt(tmp_path, "unpack")
    assert done.returncode == 2 and "nothing packed" in done.stderr


def _kernel_check_tree(tmp_path):
    """A scratch tree with tools/gpu_check.sh, a stand-in kernel check that notes its arguments
    and a stand-in compute-sanitizer that runs the command it is given."""
    os.makedirs(tmp_path / "tools")
    os.makedirs(tmp_path / "build")
    os.makedirs(tmp_path / "bin")
    shutil.copy(os.path.join(ROOT, "tools", "gpu_check.sh"), tmp_path / "tools")
    stand_ins = {
        "build/kernel_check": '#!/bin/sh\necho "$*" >> "$(dirname "$0")/calls"\n'
                              'echo "SUMMARY: 1 passed, 0 failed"\n',
        # compute-sanitizer --tool T --error-exitcode N COMMAND...
        "bin/compute-sanitizer": '#!/bin/sh\nshift 4\nexec "$@"\n',
    }
    for path, text in stand_ins.items():
        (tmp_path / path).write_text(text)
        os.chmod(tmp_path / path, 0o755)
    return tmp_path / "build" / "calls"


@pytest.mark.parametrize("parts, expected", [
    (None, ["", "--time", "--time-fft", "--time-chain", "--half", "--quick"]),
    ("timing", ["--time", "--time-fft", "--time-chain"]),
    ("check half", ["", "--half"]),
    ("sanitize", ["--quick"]),
])
def test_gpu_check_runs_the_parts_it_is_given(tmp_path, parts, expected):
    calls = _kernel_check_tree(tmp_path)
    env = {**os.environ, "SKIP_BUILD": "1", "OUT": str(tmp_path / "logs"),
           "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    env.pop("CHECK_PARTS", None)
    if parts is not None:
        env["CHECK_PARTS"] = parts
    done = subprocess.run(["bash", str(tmp_path / "tools" / "gpu_check.sh")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # Each call's first argument, "" for the whole check (--seed comes first there).
    first = [line.split()[0] if not line.startswith("--seed") else ""
             for line in calls.read_text().splitlines()]
    assert list(dict.fromkeys(first)) == expected
    if parts == "sanitize":   # memcheck, racecheck of three families, synccheck
        assert len(first) == 5


def test_gpu_check_runs_another_build_and_sanitizes_the_families_it_is_given(tmp_path):
    _kernel_check_tree(tmp_path)
    other = tmp_path / "elsewhere" / "kc_new"
    os.makedirs(other.parent)
    shutil.copy(tmp_path / "build" / "kernel_check", other)
    env = {**os.environ, "KERNEL_CHECK": str(other), "CHECK_PARTS": "check sanitize",
           "SAN_FAMILIES": "fft", "OUT": str(tmp_path / "logs"),
           "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(tmp_path / "tools" / "gpu_check.sh")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "build" / "calls").exists()   # nothing built, nothing else run
    calls = (other.parent / "calls").read_text().splitlines()
    sanitized = [line for line in calls if line.startswith("--quick")]
    assert len(calls) == 4 and len(sanitized) == 3       # the check; memcheck, racecheck, synccheck
    assert all("--family fft" in line for line in sanitized)


def _turns_tree(tmp_path):
    """tools/kernel_turns.sh and tools/gpu_check.sh in a scratch tree, and two stand-in kernel-check
    builds that print a timing line carrying their name."""
    _kernel_check_tree(tmp_path)
    shutil.copy(os.path.join(ROOT, "tools", "kernel_turns.sh"), tmp_path / "tools")
    builds = {}
    for name in ("new", "old"):
        path = tmp_path / "build" / f"kc_{name}_built"
        path.write_text('#!/bin/sh\necho "$(basename "$0") $*" >> "$(dirname "$0")/calls"\n'
                        f'echo "TIME rfft2d  f32 NHWC [128,96,32,32] S=32   :   0.0457 ms {name}"\n'
                        f'echo "TIME irfft2d f32 NHWC S=32 -> [128,96,32,32]   :   0.0436 ms {name}"\n'
                        'echo "TIME rfft2d  f32 NHWC [128,96,32,32] S=16   :   0.0300 ms"\n'
                        'echo "TIME rfft2d  f32 NHWC [128,96,32,32] S=32   :   0.0459 ms again"\n'
                        'echo "SUMMARY: 1 passed, 0 failed"\n')
        os.chmod(path, 0o755)
        builds[name] = path
    return builds


def _turns(tmp_path, *args, **env):
    env = {**os.environ, "OUT": str(tmp_path / "logs"),
           "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", **env}
    return subprocess.run(["bash", str(tmp_path / "tools" / "kernel_turns.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=120)


@NEEDS_XZ
def test_kernel_turns_carries_builds_and_times_them_in_turns(tmp_path):
    builds = _turns_tree(tmp_path)
    carried = tmp_path / "build" / "turns"
    packed = _turns(tmp_path, "pack", str(carried), *(f"{n}={p}" for n, p in builds.items()))
    assert packed.returncode == 0, packed.stderr
    for path in builds.values():   # the host has only what was packed
        os.remove(path)
    done = _turns(tmp_path, "run", str(carried), "fft", "check", ROUNDS="2")
    assert done.returncode == 0, done.stderr
    timed = [line.split()[-1] for line in done.stdout.splitlines() if "0.0457 ms" in line]
    assert timed == ["new", "old", "new", "old"]          # round by round, in the packed order
    inverses = [line.split()[-1] for line in done.stdout.splitlines() if "0.0436 ms" in line]
    assert inverses == timed
    # The key lines only, each transform's first time in a round; the log has all.
    assert "S=16" not in done.stdout and "again" not in done.stdout
    log = (tmp_path / "logs" / "timing_fft.log").read_text()
    assert "S=16" in log and "again" in log
    checked = (carried / "calls").read_text().splitlines()
    assert checked.count("kc_new --time-fft") == 2 and checked.count("kc_old --time-fft") == 2
    checks = [line for line in checked if "--time" not in line]   # the build under test's, only
    assert [line.split()[:2] for line in checks] == [["kc_new", "--seed"], ["kc_new", "--half"]]


@NEEDS_XZ
@pytest.mark.parametrize("args, message", [
    (["pack", "DIR", "new"], "is not NAME=<executable>"),
    (["run", "DIR", "bogus"], "unknown part: bogus"),
])
def test_kernel_turns_refuses_what_it_cannot_do(tmp_path, args, message):
    builds = _turns_tree(tmp_path)
    carried = str(tmp_path / "build" / "turns")
    assert _turns(tmp_path, "pack", carried, f"new={builds['new']}").returncode == 0
    done = _turns(tmp_path, *[carried if a == "DIR" else a for a in args])
    assert done.returncode == 2 and message in done.stderr
    if args[0] == "run":   # and the usage, the script's whole header
        assert "pack DIR NAME=BINARY" in done.stderr and "left behind." in done.stderr
