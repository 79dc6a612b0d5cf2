"""Per-layer benchmark: tf.nn.conv2d vs the tf.signal FFT conv vs tf_fftconv.fft_conv2d, in one run.

    python -m tf_fftconv.bench                      # default cases on the GPU (CPU if none)
    python -m tf_fftconv.bench --cases mathieu --modes train --tf32 on
    python -m tf_fftconv.bench --quick --device cpu # small shapes: a smoke run

Every implementation is timed in the same process on the same inputs: the ratios are what matters.
Timing: each step is a tf.function; after warm-up, a timed sample is a batch of N calls between two
device synchronisations (tf.test.experimental.sync_devices, no copy of the output to the host),
rotating over a few input sets; the reported time is the median per-call time over the samples.
See docs/benchmarking.md.
"""

import argparse
import dataclasses
import datetime
import importlib
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

from tf_fftconv.reference import signal_fft_conv2d

SCHEMA = "tf_fftconv.bench/1"
IMPLS = ("conv2d", "signal", "fft")
IMPL_LABELS = {
    "conv2d": "tf.nn.conv2d",
    "signal": "tf.signal FFT conv (tf_fftconv.reference.signal_fft_conv2d)",
    "fft": "tf_fftconv.fft_conv2d",
}
SHORT_LABELS = {"conv2d": "tf.nn.conv2d", "signal": "tf.signal FFT conv", "fft": "tf_fftconv"}
MODES = ("forward", "train")  # train: forward and the gradients wrt input and weights
MODE_LABELS = {"forward": "forward", "train": "forward + both gradients"}


@dataclasses.dataclass(frozen=True)
class Case:
    """One convolution layer: stride 1, square input and kernel."""

    batch: int
    in_channels: int
    out_channels: int
    size: int  # H = W
    kernel: int  # kh = kw
    padding: str  # "VALID" or "SAME"

    @property
    def name(self):
        return (f"{self.batch}x{self.in_channels}->{self.out_channels} "
                f"{self.size}x{self.size} k{self.kernel} {self.padding}")

    @property
    def spec(self):
        return (f"{self.batch}:{self.in_channels}:{self.out_channels}:{self.size}:"
                f"{self.kernel}:{self.padding.lower()}")

    @property
    def out_size(self):
        return self.size if self.padding == "SAME" else self.size - self.kernel + 1

    def spatial_gflop(self, mode):
        """GFLOP (2 x multiply-adds) of direct convolution; three times that with both gradients."""
        forward = (2 * self.batch * self.in_channels * self.out_channels
                   * self.out_size ** 2 * self.kernel ** 2)
        return forward * (3 if mode == "train" else 1) / 1e9


PRESETS = {
    # Mathieu et al.'s layer over kernel sizes: FFT cost is flat in k, spatial cost grows as k^2.
    "mathieu": [Case(128, 96, 256, 32, k, "VALID") for k in (3, 5, 7, 9, 11, 13)],
    # The two convolutions of LeNet-5 (MNIST padded to 32x32).
    "lenet": [Case(128, 1, 6, 32, 5, "VALID"), Case(128, 6, 16, 14, 5, "VALID")],
    # A SAME layer of a wider network.
    "same": [Case(64, 64, 64, 64, 3, "SAME")],
    # Small shapes for a CPU smoke run; two kernel sizes of one layer so that the plot has a line.
    "quick": [Case(2, 3, 4, 12, 3, "VALID"), Case(2, 3, 4, 12, 5, "VALID"),
              Case(2, 2, 3, 10, 3, "SAME")],
}
PRESETS["all"] = PRESETS["mathieu"] + PRESETS["lenet"] + PRESETS["same"]
DEFAULT_CASES = "all"

_CASE_RE = re.compile(r"^(\d+):(\d+):(\d+):(\d+):(\d+)(?::(valid|same))?$", re.IGNORECASE)


def parse_cases(text):
    """Comma-separated preset names and case specs `BATCH:CIN:COUT:SIZE:K[:valid|same]`."""
    cases = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item.lower() in PRESETS:
            cases.extend(PRESETS[item.lower()])
            continue
        match = _CASE_RE.match(item)
        if not match:
            raise ValueError(
                f"bad case {item!r}: expected a preset ({', '.join(sorted(PRESETS))}) or "
                "BATCH:CIN:COUT:SIZE:K[:valid|same], e.g. 128:96:256:32:7:valid")
        batch, cin, cout, size, kernel = (int(g) for g in match.groups()[:5])
        padding = (match.group(6) or "valid").upper()
        if min(batch, cin, cout, size, kernel) < 1:
            raise ValueError(f"bad case {item!r}: sizes must be positive")
        if padding == "VALID" and kernel > size:
            raise ValueError(f"bad case {item!r}: kernel larger than the input with VALID")
        cases.append(Case(batch, cin, cout, size, kernel, padding))
    if not cases:
        raise ValueError("no cases given")
    return list(dict.fromkeys(cases))  # keep order, drop repeats


def parse_list(text, allowed, what):
    items = [part.strip().lower() for part in text.split(",") if part.strip()]
    for item in items:
        if item not in allowed:
            raise ValueError(f"unknown {what} {item!r}: choose from {', '.join(allowed)}")
    return [a for a in allowed if a in items]


# ---------------------------------------------------------------------------------------------
# Timing: the one function every measurement goes through.

def sync_devices():
    """Blocks until every queued op on every device has finished; copies nothing to the host."""
    tf.test.experimental.sync_devices()


def time_per_call(fn, arg_sets, *, warmup, repeats, calls, target_sample_s=0.02, max_calls=1000):
    """Per-call times (seconds) of `fn`, one per repeat.

    `warmup` calls first (tracing, autotuning, allocation; at least one per input set). Each sample
    then times `calls` calls between two device synchronisations and divides by `calls`; the calls
    rotate over `arg_sets` so that no input stays in cache from the call before. `calls=None`
    calibrates: enough calls for a sample of about `target_sample_s`, a multiple of len(arg_sets).

    Returns (samples in seconds, calls per sample).
    """
    sets = len(arg_sets)
    for i in range(max(warmup, sets)):
        fn(*arg_sets[i % sets])
    sync_devices()
    if calls is None:
        start = time.perf_counter()
        for args in arg_sets:
            fn(*args)
        sync_devices()
        per_call = max((time.perf_counter() - start) / sets, 1e-7)
        calls = min(max(math.ceil(target_sample_s / per_call), sets), max_calls)
        calls = sets * math.ceil(calls / sets)
    samples = []
    call = 0
    for _ in range(repeats):
        sync_devices()
        start = time.perf_counter()
        for _ in range(calls):
            fn(*arg_sets[call % sets])
            call += 1
        sync_devices()
        samples.append((time.perf_counter() - start) / calls)
    return samples, calls


def summarize(samples, calls):
    ms = [s * 1e3 for s in samples]
    median = statistics.median(ms)
    return {
        "median_ms": median,
        "min_ms": min(ms),
        "max_ms": max(ms),
        "mean_ms": statistics.fmean(ms),
        "stdev_ms": statistics.stdev(ms) if len(ms) > 1 else 0.0,
        "spread_pct": 100.0 * (max(ms) - min(ms)) / median if median > 0 else 0.0,
        "calls_per_sample": calls,
        "samples_ms": ms,
    }


# ---------------------------------------------------------------------------------------------
# The implementations and the timed steps.

def load_fft_conv2d():
    """(tf_fftconv.fft_conv2d, None) or (None, why it cannot run). Imported only when asked for."""
    try:
        package = importlib.import_module("tf_fftconv")
        fft_conv2d = getattr(package, "fft_conv2d")
    except Exception as error:  # a missing or stale op library shows up in many forms
        return None, f"tf_fftconv.fft_conv2d unavailable: {_first_line(error)}"
    library_path = getattr(package, "library_path", None)
    if callable(library_path):
        try:
            path = library_path()
        except Exception as error:
            return None, f"op library unavailable: {_first_line(error)}"
        if path and not os.path.exists(str(path)):
            return None, f"op library not built ({path} missing; run `make build`)"
    load_library = getattr(package, "load_library", None)
    if callable(load_library):  # fails here, once, rather than in every case
        try:
            load_library()
        except Exception as error:
            return None, f"op library does not load: {_first_line(error)}"
    return fft_conv2d, None


def conv_function(impl, padding, data_format, fft_conv2d=None):
    if impl == "conv2d":
        return lambda x, w: tf.nn.conv2d(x, w, strides=1, padding=padding, data_format=data_format)
    if impl == "signal":
        return lambda x, w: signal_fft_conv2d(x, w, padding=padding, data_format=data_format)
    if impl == "fft":
        return lambda x, w: fft_conv2d(x, w, padding=padding, data_format=data_format)
    raise ValueError(impl)


def make_step(conv, mode):
    """A tf.function of (x, w, dy) returning (y,), or (y, dx, dw) for the output gradient dy."""
    if mode == "forward":
        @tf.function
        def forward(x, w, dy):
            del dy
            return (conv(x, w),)
        return forward

    @tf.function
    def train(x, w, dy):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = conv(x, w)
        dx, dw = tape.gradient(y, [x, w], output_gradients=dy)
        return y, dx, dw
    return train


def make_inputs(case, data_format, count, generator):
    """`count` fresh (x, w, dy) sets, normal random, float32, on the current device."""
    b, cin, cout, h, k, ho = (case.batch, case.in_channels, case.out_channels, case.size,
                              case.kernel, case.out_size)
    x_shape = (b, h, h, cin) if data_format == "NHWC" else (b, cin, h, h)
    y_shape = (b, ho, ho, cout) if data_format == "NHWC" else (b, cout, ho, ho)
    w_scale = 1.0 / math.sqrt(cin * k * k)
    return [(generator.normal(x_shape, dtype=tf.float32),
             generator.normal((k, k, cin, cout), stddev=w_scale, dtype=tf.float32),
             generator.normal(y_shape, dtype=tf.float32))
            for _ in range(count)]


def max_rel_diff(outputs, reference):
    """max |a - b| / max |b| per output (y, dx, dw), computed on the device."""
    names = ("y", "dx", "dw")
    diffs = {}
    for name, a, b in zip(names, outputs, reference):
        scale = tf.reduce_max(tf.abs(b))
        diff = tf.reduce_max(tf.abs(a - b))
        value = float(diff / scale) if float(scale) > 0 else float(diff)
        diffs[name] = value if math.isfinite(value) else str(value)  # JSON has no NaN
    return diffs


def _first_line(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def run_case(case, mode, impls, args, device, generator, fft_conv2d, fft_reason, progress):
    """Times every implementation on one case and mode; returns the JSON record."""
    record = {"case": {**dataclasses.asdict(case), "name": case.name, "spec": case.spec,
                       "out_size": case.out_size},
              "mode": mode, "spatial_gflop": case.spatial_gflop(mode),
              "timings": {}, "skipped": {}, "max_rel_diff": {}}
    with tf.device(device):
        arg_sets = make_inputs(case, args.data_format, args.input_sets, generator)
        reference, reference_impl = None, None
        for impl in impls:
            progress.status(f"{case.name} {mode}: {impl}")
            if impl == "fft" and fft_conv2d is None:
                record["skipped"][impl] = fft_reason
                continue
            step = make_step(conv_function(impl, case.padding, args.data_format, fft_conv2d), mode)
            try:
                outputs = step(*arg_sets[0])
                if reference is None:
                    reference, reference_impl = outputs, impl
                else:
                    record["max_rel_diff"][impl] = max_rel_diff(outputs, reference)
                del outputs
                samples, calls = time_per_call(step, arg_sets, warmup=args.warmup,
                                               repeats=args.repeats, calls=args.iters)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as error:  # OOM, no kernel for this layout on this device, ...
                record["skipped"][impl] = _first_line(error)
                continue
            record["timings"][impl] = summarize(samples, calls)
        record["max_rel_diff_against"] = reference_impl
        del reference, arg_sets
    medians = {impl: t["median_ms"] for impl, t in record["timings"].items()}
    record["ratios"] = {
        f"{a}/{b}": (medians[a] / medians[b] if a in medians and b in medians else None)
        for a, b in (("fft", "conv2d"), ("fft", "signal"), ("signal", "conv2d"))}
    record["fastest"] = min(medians, key=medians.get) if medians else None
    return record


# ---------------------------------------------------------------------------------------------
# Environment (hostname-free).

def resolve_device(text):
    gpus = tf.config.list_logical_devices("GPU")
    if text in (None, "", "auto"):
        return "/GPU:0" if gpus else "/CPU:0"
    match = re.match(r"^/?(?:device:)?(cpu|gpu)(?::(\d+))?$", text.strip(), re.IGNORECASE)
    if not match:
        raise ValueError(f"bad --device {text!r}: use auto, cpu, gpu, or /GPU:N")
    kind, index = match.group(1).upper(), int(match.group(2) or 0)
    if kind == "GPU" and index >= len(gpus):
        raise ValueError(f"--device {text}: this machine has {len(gpus)} visible GPU(s)")
    return f"/{kind}:{index}"


def git_commit():
    """HEAD of the source tree; TF_FFTCONV_COMMIT names it where the tree has no .git (a copy)."""
    if os.environ.get("TF_FFTCONV_COMMIT"):
        return os.environ["TF_FFTCONV_COMMIT"], None
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                text=True, timeout=10)
        if commit.returncode != 0:
            return "unknown", None
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                cwd=root, capture_output=True, text=True, timeout=10)
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        return commit.stdout.strip(), dirty
    except (OSError, subprocess.SubprocessError):
        return "unknown", None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device, fft_reason):
    build = dict(tf.sysconfig.get_build_info())
    commit, dirty = git_commit()
    env = {
        "device": device,
        "device_kind": device.split(":")[0].strip("/"),
        "gpu_name": None,
        "compute_capability": None,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "tf_version": tf.__version__,
        "python_version": platform.python_version(),
        "numpy_version": np.__version__,
        "platform": f"{platform.system()}-{platform.machine()}",
        "is_cuda_build": bool(build.get("is_cuda_build", False)),
        "cuda_version": build.get("cuda_version"),
        "cudnn_version": build.get("cudnn_version"),
        "cuda_compute_capabilities": build.get("cuda_compute_capabilities"),
        "tf32_enabled": bool(tf.config.experimental.tensor_float_32_execution_enabled()),
        "git_commit": commit,
        "git_dirty": dirty,
        "fft_conv2d_available": fft_reason is None,
        "fft_conv2d_unavailable_reason": fft_reason,
    }
    if env["device_kind"] == "GPU":
        index = int(device.split(":")[1])
        details = tf.config.experimental.get_device_details(
            tf.config.list_physical_devices("GPU")[index])
        env["gpu_name"] = details.get("device_name")
        capability = details.get("compute_capability")
        env["compute_capability"] = ".".join(map(str, capability)) if capability else None
    return env


def default_json_path(env):
    tag = env["gpu_name"] if env["gpu_name"] else "cpu"
    tag = re.sub(r"[^a-z0-9]+", "-", tag.lower()).strip("-") or "gpu"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    repo_results = Path(__file__).resolve().parent.parent / "benchmarks"
    base = repo_results if repo_results.is_dir() else Path.cwd() / "benchmarks"
    return base / "results" / f"bench-{tag}-{stamp}.json"


# ---------------------------------------------------------------------------------------------
# Output: table, plot, progress.

def _cell_ms(timing):
    if timing is None:
        return "-"
    return f"{timing['median_ms']:.3f} ±{timing['spread_pct']:.0f}%"


def _cell_ratio(value):
    return "-" if value is None else f"{value:.2f}x"


def format_table(report):
    impls = report["settings"]["impls"]
    header = (["case", "mode"] + [f"{impl} ms" for impl in impls]
              + ["fft/conv2d", "fft/signal", "fastest"])
    rows = []
    for record in report["results"]:
        timings = record["timings"]
        rows.append([record["case"]["name"], record["mode"]]
                    + [_cell_ms(timings.get(impl)) for impl in impls]
                    + [_cell_ratio(record["ratios"]["fft/conv2d"]),
                       _cell_ratio(record["ratios"]["fft/signal"]),
                       record["fastest"] or "-"])
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip()
             for row in [header, ["-" * width for width in widths]] + rows]
    return "\n".join(lines)


def format_report(report):
    env, settings = report["environment"], report["settings"]
    device = env["gpu_name"] or env["cpu_model"]
    lines = [
        f"tf_fftconv bench: {device} ({env['device']}), TF {env['tf_version']}, "
        f"built with CUDA {env['cuda_version']}, cuDNN {env['cudnn_version']}, "
        f"TF32 {'on' if env['tf32_enabled'] else 'off'}, {settings['data_format']} float32, "
        f"commit {env['git_commit'][:12]}",
        f"ms per call: median over {settings['repeats']} samples of N calls between device syncs "
        f"({settings['input_sets']} rotating input sets, {settings['warmup']} warm-up calls); "
        "±: (max - min) / median",
        "",
        format_table(report),
    ]
    notes = []
    skipped = {}  # (impl, reason) -> the steps it applies to
    for record in report["results"]:
        for impl, reason in record["skipped"].items():
            step = f"{record['case']['name']} {record['mode']}"
            skipped.setdefault((impl, reason), []).append(step)
    for (impl, reason), steps in skipped.items():
        where = "every case" if len(steps) == len(report["results"]) else "; ".join(steps)
        notes.append(f"{impl} skipped in {where}: {reason}")
    for record in report["results"]:
        for impl, diffs in record["max_rel_diff"].items():
            worst = max(float(value) for value in diffs.values())
            if not worst <= 1e-2:
                notes.append(f"{record['case']['name']} {record['mode']}: {impl} differs from "
                             f"{record['max_rel_diff_against']} by {worst:.2e} (max rel)")
    if notes:
        unique = list(dict.fromkeys(notes))
        lines += [""] + (unique if len(unique) <= 12 else unique[:12] + [
            f"... and {len(unique) - 12} more notes in the JSON file"])
    return "\n".join(lines)


def write_plot(report, path):
    """Median ms vs kernel size, one line per implementation, one panel per layer shape and mode.

    Plots every layer (batch, channels, size, padding) measured at two kernel sizes or more: the
    96->256 series of the default cases. Returns the path, or None with a note when there is nothing
    to plot or matplotlib is missing.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: matplotlib is not installed; plot skipped (pip install matplotlib)",
              file=sys.stderr)
        return None
    series = {}
    for record in report["results"]:
        c = record["case"]
        layer = (c["batch"], c["in_channels"], c["out_channels"], c["size"], c["padding"])
        series.setdefault(layer, {}).setdefault(record["mode"], []).append(record)
    layers = [layer for layer, modes in series.items()
              if any(len({r["case"]["kernel"] for r in recs}) >= 2 for recs in modes.values())]
    if not layers:
        print("note: no layer was measured at two kernel sizes or more; plot skipped",
              file=sys.stderr)
        return None
    modes = [m for m in MODES if any(m in series[layer] for layer in layers)]
    env = report["environment"]
    figure, axes = plt.subplots(len(layers), len(modes), squeeze=False,
                                figsize=(5.5 * len(modes), 4 * len(layers)))
    for row, layer in enumerate(layers):
        for col, mode in enumerate(modes):
            ax = axes[row][col]
            records = sorted(series[layer].get(mode, []), key=lambda r: r["case"]["kernel"])
            for impl in report["settings"]["impls"]:
                points = [(r["case"]["kernel"], r["timings"][impl]) for r in records
                          if impl in r["timings"]]
                if not points:
                    continue
                ks = [k for k, _ in points]
                med = [t["median_ms"] for _, t in points]
                err = [[t["median_ms"] - t["min_ms"] for _, t in points],
                       [t["max_ms"] - t["median_ms"] for _, t in points]]
                ax.errorbar(ks, med, yerr=err, marker="o", capsize=3, label=SHORT_LABELS[impl])
            b, cin, cout, size, padding = layer
            ax.set_title(f"{b}x{cin}->{cout} {size}x{size} {padding}: {MODE_LABELS[mode]}",
                         fontsize=10)
            ax.set_xticks(sorted({r["case"]["kernel"] for r in records}))
            ax.set_xlabel("kernel size k")
            ax.set_ylabel("ms per call (median; bars min..max)")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
    figure.suptitle(f"{env['gpu_name'] or env['cpu_model']}, TF {env['tf_version']}, "
                    f"TF32 {'on' if env['tf32_enabled'] else 'off'}, "
                    f"{report['settings']['data_format']}", fontsize=11)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


class Progress:
    """A progress bar over (case, mode) steps on stderr: tqdm when installed, else a text line."""

    def __init__(self, total, enabled=True):
        self.total, self.done, self.enabled, self.bar = total, 0, enabled, None
        self.interactive = sys.stderr.isatty()
        self.last = ""
        if enabled and self.interactive:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, unit="case", file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                self.bar = None

    def status(self, text):
        if not self.enabled:
            return
        self.last = text
        if self.bar is not None:
            self.bar.set_description_str(text)
        elif self.interactive:
            sys.stderr.write(f"\r[{self.done}/{self.total}] {text}".ljust(78)[:78])
            sys.stderr.flush()

    def advance(self):
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        elif self.enabled and not self.interactive:  # a log: one line per finished step
            step = self.last.rsplit(":", 1)[0]
            sys.stderr.write(f"[{self.done}/{self.total}] {step} done\n")
            sys.stderr.flush()

    def close(self):
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.close()
        elif self.interactive:
            sys.stderr.write(f"\r[{self.done}/{self.total}] done".ljust(78) + "\n")
            sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# Command line.

def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m tf_fftconv.bench",
        description="Times tf.nn.conv2d, the tf.signal FFT conv and tf_fftconv.fft_conv2d "
                    "per layer.")
    parser.add_argument(
        "--cases", default=None,
        help="comma-separated presets (" + ", ".join(sorted(PRESETS)) + ") and specs "
             "BATCH:CIN:COUT:SIZE:K[:valid|same]; default 'all' ('quick' with --quick)")
    parser.add_argument("--impl", default=",".join(IMPLS),
                        help="implementations to time, comma-separated from: " + ", ".join(IMPLS))
    parser.add_argument("--modes", default=",".join(MODES),
                        help="forward, train (forward + gradients wrt input and weights), or both")
    parser.add_argument("--data-format", default="NHWC", type=str.upper, choices=("NHWC", "NCHW"))
    parser.add_argument("--tf32", default=None, choices=("on", "off"),
                        help="TensorFloat-32 for float32 matmuls and convolutions; default: leave "
                             "TensorFlow's setting (on)")
    parser.add_argument("--device", default="auto", help="auto (GPU if present), cpu, gpu, /GPU:N")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed samples per measurement (default 20; 3 with --quick)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="untimed calls first, at least 3 (default 5; 3 with --quick)")
    parser.add_argument("--iters", default=None,
                        help="calls per timed sample, or 'auto' to fill about 20 ms "
                             "(default auto; 3 with --quick)")
    parser.add_argument("--input-sets", type=int, default=3,
                        help="input sets rotated over between calls (default 3)")
    parser.add_argument("--seed", type=int, default=None, help="input seed (default: fresh)")
    parser.add_argument("--quick", action="store_true",
                        help="small shapes and few repeats: a smoke run that fits a CPU")
    parser.add_argument("--json", default=None,
                        help="results file "
                             "(default benchmarks/results/bench-<gpu|cpu>-<date>.json)")
    parser.add_argument("--no-json", action="store_true", help="write no results file")
    parser.add_argument("--plot", default=None,
                        help="PNG of time vs kernel size (needs matplotlib)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    args.command = " ".join(["python -m tf_fftconv.bench"]
                            + list(sys.argv[1:] if argv is None else argv))

    try:
        args.cases = parse_cases(args.cases or ("quick" if args.quick else DEFAULT_CASES))
        args.impls = parse_list(args.impl, IMPLS, "implementation")
        args.modes = parse_list(args.modes, MODES, "mode")
        if not args.impls or not args.modes:
            raise ValueError("--impl and --modes need at least one entry")
    except ValueError as error:
        parser.error(str(error))
    args.repeats = args.repeats if args.repeats is not None else (3 if args.quick else 20)
    args.warmup = args.warmup if args.warmup is not None else (3 if args.quick else 5)
    if args.iters is None:
        args.iters = 3 if args.quick else None
    elif str(args.iters).lower() == "auto":
        args.iters = None
    else:
        try:
            args.iters = int(args.iters)
        except ValueError:
            parser.error(f"--iters must be a positive integer or 'auto', got {args.iters!r}")
    if args.repeats < 1 or args.warmup < 3 or args.input_sets < 1 or (
            args.iters is not None and args.iters < 1):
        parser.error("--repeats, --iters and --input-sets must be >= 1, --warmup >= 3")
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "little") >> 1
    return args


def run(args):
    """Runs the benchmark described by parsed `args`; returns the report (the JSON document)."""
    if args.tf32 is not None:
        tf.config.experimental.enable_tensor_float_32_execution(args.tf32 == "on")
    device = resolve_device(args.device)
    fft_conv2d, fft_reason = (load_fft_conv2d() if "fft" in args.impls
                              else (None, "not selected (--impl)"))
    if "fft" in args.impls and fft_conv2d is None:
        print(f"note: {fft_reason}; the fft column is skipped", file=sys.stderr)
    report = {
        "schema": SCHEMA,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "environment": environment(device, fft_reason),
        "settings": {
            "command": args.command,
            "cases": [case.spec for case in args.cases],
            "impls": args.impls,
            "impl_labels": {impl: IMPL_LABELS[impl] for impl in args.impls},
            "modes": args.modes,
            "data_format": args.data_format,
            "dtype": "float32",
            "repeats": args.repeats,
            "warmup": args.warmup,
            "calls_per_sample": args.iters if args.iters is not None else "auto",
            "input_sets": args.input_sets,
            "seed": args.seed,
            "sync": "tf.test.experimental.sync_devices",
            "statistic": "median of per-call times over repeats",
        },
        "results": [],
    }
    with tf.device(device):
        generator = tf.random.Generator.from_seed(args.seed)
    progress = Progress(len(args.cases) * len(args.modes), enabled=not args.no_progress)
    try:
        for case in args.cases:
            for mode in args.modes:
                report["results"].append(run_case(case, mode, args.impls, args, device,
                                                  generator, fft_conv2d, fft_reason, progress))
                progress.advance()
    finally:
        progress.close()
    return report


def main(argv=None):
    args = parse_args(argv)
    report = run(args)
    print(format_report(report))
    if not args.no_json:
        path = Path(args.json) if args.json else default_json_path(report["environment"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=1) + "\n")
        print(f"\nresults: {path}")
    if args.plot:
        plot_path = write_plot(report, args.plot)
        if plot_path:
            print(f"plot: {plot_path}")
    measured = any(record["timings"] for record in report["results"])
    return 0 if measured else 1


if __name__ == "__main__":
    sys.exit(main())
