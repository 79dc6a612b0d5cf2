"""The benchmark's output: the table on stdout, the plot, and the progress bar on stderr."""

import sys
from pathlib import Path

from tf_fftconv.experiments.bench.measure import (DIFF_NOTE_THRESHOLD, MODES, PLANNED_IMPLS,
                                                  worst_diff)

SHORT_LABELS = {"conv2d": "tf.nn.conv2d", "signal": "tf.signal FFT conv", "fft": "tf_fftconv",
                "model": "tf_fftconv auto, cost model", "auto": "tf_fftconv auto",
                "tuned": "tf_fftconv auto, tuned"}
MODEL_LABELS = {"conv2d": "Conv2D", "fft": "FFTConv2D fft", "auto": "FFTConv2D auto"}
MODE_LABELS = {"forward": "forward", "train": "forward + both gradients"}
# Issue 10: auto at most this many times the faster of conv2d and fft.
AUTO_BOUND = 1.05
# A column whose calls took the host at least this share of their time to issue is marked
# host-bound: the device waited on the host between calls.
HOST_BOUND_SHARE = 0.9


def _cell_ms(timing):
    if timing is None:
        return "-"
    return f"{timing['median_ms']:.3f} ±{timing['spread_pct']:.0f}%"


def _cell_ratio(value):
    return "-" if value is None else f"{value:.2f}x"


def _cell_plan(plan):
    """The plan's label, marked where a timing on the device decided it rather than the model."""
    if plan is None:
        return "-"
    return plan["label"] + (" (timed)" if plan["source"].startswith("timing") else "")


def _cell_mb(value):
    return "-" if value is None else f"{value / 1e6:.0f}"


def _floor_cells(floor):
    if floor is None:
        return ["-", "-"]
    percent = floor["percent_of_floor"]
    return [f"{floor['floor_ms']:.3f}", "-" if percent is None else f"{percent:.0f}%"]


def format_table(report):
    impls = report["settings"]["impls"]
    planned = [impl for impl in PLANNED_IMPLS if impl in impls]
    with_memory = any(value is not None for record in report["results"]
                      for value in record.get("peak_memory_bytes", {}).values())
    with_floors = any("fft_floor" in record for record in report["results"])
    header = (["case", "mode"] + [f"{impl} ms" for impl in impls]
              + (["fft floor ms", "% of floor"] if with_floors else [])
              + ["fft/conv2d", "fft/signal"]
              + [cell for impl in planned for cell in (f"{impl}/best", f"{impl} chose")]
              + ([f"{impl} MB" for impl in impls] if with_memory else []) + ["fastest"])
    rows = []
    for record in report["results"]:
        timings = record["timings"]
        memory = record.get("peak_memory_bytes", {})
        rows.append([record["case"]["name"], record["mode"]]
                    + [_cell_ms(timings.get(impl)) for impl in impls]
                    + (_floor_cells(record.get("fft_floor")) if with_floors else [])
                    + [_cell_ratio(record["ratios"]["fft/conv2d"]),
                       _cell_ratio(record["ratios"]["fft/signal"])]
                    + [cell for impl in planned for cell in (
                        _cell_ratio(record["ratios"].get(f"{impl}/best")),
                        _cell_plan(record.get(f"{impl}_plan")))]
                    + ([_cell_mb(memory.get(impl)) for impl in impls] if with_memory else [])
                    + [record["fastest"] or "-"])
    return _layout(header, rows)


def _layout(header, rows):
    """The rows under the header, each column as wide as its widest cell."""
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip()
             for row in [header, ["-" * width for width in widths]] + rows]
    return "\n".join(lines)


def format_applications(report):
    """The --models run: a row per application, Keras' step against each to_fft version's."""
    env, settings = report["environment"], report["settings"]
    impls = settings["impls"]
    onednn = (f", oneDNN {'on' if env['onednn_enabled'] else 'off'}"
              if env["device_kind"] == "CPU" else "")
    lines = [
        f"tf_fftconv bench, training steps of keras.applications models: "
        f"{env['gpu_name'] or env['cpu_model']} ({env['device']}{onednn}), TF {env['tf_version']}, "
        f"Keras {env['keras_version']}, commit {env['git_commit'][:12]}",
        f"ms per step: median over {settings['repeats']} samples of N steps between device syncs "
        f"({settings['warmup']} warm-up steps; a model's versions sampled in turns), "
        f"{settings['compile']}; ±: (max - min) / median; converted: the layers to_fft made FFT "
        "layers; on FFT: those of them whose step took the FFT path",
        "",
    ]
    header = (["model", "image", "batch", "precision", "device", "keras ms"]
              + [cell for impl in impls for cell in (f"{impl} ms", f"{impl}/keras",
                                                     f"{impl} on FFT")]
              + ["converted"])
    rows = []
    for record in report["applications"]:
        timings = record["timings"]
        rows.append([record["model"], f"{record['image_size']}x{record['image_size']}",
                     record["batch"], record["precision"], record["device"],
                     _cell_ms(timings.get("keras"))]
                    + [cell for impl in impls for cell in (
                        _cell_ms(timings.get(impl)), _cell_ratio(record["ratios"][impl + "/keras"]),
                        record.get(f"{impl}_layers_on_fft_path", "-"))]
                    + [record.get("layers_converted", "-")])
    lines.append(_layout(header, rows))
    notes = [f"{record['model']}: {version} skipped: {reason}"
             for record in report["applications"]
             for version, reason in record["skipped"].items()]
    return "\n".join(lines + ([""] + notes if notes else []))


def format_auto_summary(results):
    """Issue 10's criterion over the run: in how many results auto is within AUTO_BOUND of the
    faster of conv2d and fft, then each miss with its ratio and the spreads of the two columns'
    samples, so that a reader sees whether a miss is noise. None where no result has the ratio."""
    compared = [record for record in results if record["ratios"].get("auto/best") is not None]
    if not compared:
        return None
    misses = [record for record in compared if record["ratios"]["auto/best"] > AUTO_BOUND]
    what = "cases" if len({record["mode"] for record in compared}) == 1 else "cases and modes"
    line = (f"auto within {AUTO_BOUND:.2f}x of the faster of conv2d and fft in "
            f"{len(compared) - len(misses)} of {len(compared)} {what}")
    if not misses:
        return line
    lines = [line + "; the misses (auto/best, the spread of auto's samples and of the faster's):"]
    for record in misses:
        timings = record["timings"]
        faster = min((impl for impl in ("conv2d", "fft") if impl in timings),
                     key=lambda impl: timings[impl]["median_ms"])
        auto, best = timings["auto"], timings[faster]
        lines.append(f"  {record['case']['name']} {record['mode']}: "
                     f"{record['ratios']['auto/best']:.2f}x, auto ±{auto['spread_pct']:.0f}%, "
                     f"{faster} ±{best['spread_pct']:.0f}%"
                     + ("; their samples overlap" if auto["min_ms"] <= best["max_ms"] else ""))
    return "\n".join(lines)


def format_host_bound(results, device_kind, unit="call"):
    """The columns of a GPU run whose time is the host's: where issuing the calls (`dispatch_ms`,
    the median over the samples) took at least HOST_BOUND_SHARE of the median time per call (per
    step: `unit`), a faster kernel would not show in the column. None where no column is so, and
    on a CPU, whose ops compute as they are issued."""
    if device_kind != "GPU":
        return None
    marked = []
    for record in results:
        cells = [f"{impl} {timing['dispatch_ms']:.3f} of {timing['median_ms']:.3f} ms"
                 for impl, timing in record["timings"].items()
                 if "dispatch_ms" in timing
                 and timing["dispatch_ms"] >= HOST_BOUND_SHARE * timing["median_ms"]]
        if cells:
            marked.append(f"  {record['case']['name']} {record['mode']}: " + ", ".join(cells))
    if not marked:
        return None
    return "\n".join([f"host-bound (issuing the calls took at least {HOST_BOUND_SHARE:.0%} of "
                      f"their time, so the device waited on the host; issue ms of ms per {unit}):"]
                     + marked)


def timed_unit(settings):
    """What one time of the tables is for: a call, or a step where a call runs several
    (--steps-per-call)."""
    return "step" if settings.get("steps_per_call", 1) > 1 else "call"


def _timing_description(settings):
    """What each time in the table is, and how it was taken."""
    if timed_unit(settings) == "call":
        return (f"ms per call: median over {settings['repeats']} samples of N calls between "
                "device syncs")
    steps = settings["steps_per_call"]
    return (f"ms per step: median over {settings['repeats']} samples of N calls between device "
            f"syncs, each call {steps} steps one after the other on their own inputs, divided "
            f"by {steps}")


def format_report(report):
    if "applications" in report:
        return format_applications(report)
    env, settings = report["environment"], report["settings"]
    device = env["gpu_name"] or env["cpu_model"]
    interleaved = any(record.get("samples_interleaved") for record in report["results"])
    lines = [
        f"tf_fftconv bench: {device} ({env['device']}), TF {env['tf_version']}, "
        f"built with CUDA {env['cuda_version']}, cuDNN {env['cudnn_version']}, "
        f"TF32 {'on' if env['tf32_enabled'] else 'off'}, "
        f"{settings['data_format']} {settings.get('dtype', 'float32')}, "
        f"{'every step under XLA (jit_compile=True), ' if settings.get('xla') else ''}"
        f"commit {env['git_commit'][:12]}",
        _timing_description(settings) +
        f" ({settings['input_sets']} rotating input sets, {settings['warmup']} warm-up calls"
        f"{'; the samples of a case and mode taken in turns' if interleaved else ''}); "
        "±: (max - min) / median; auto/best (model/best, tuned/best): auto as FFTConv2D plans it "
        "(from the cost model alone, after tf_fftconv.autotune) against the faster of conv2d and "
        "fft; "
        "MB: peak device memory of each call, inputs included (GPU only)"
        + (f"; fft floor: the bytes the FFT path's ops move (train mode: each op reading its "
           f"inputs and writing its outputs once) at the copy bandwidth measured in this run, "
           f"{report['copy_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s; % of floor: floor / fft time"
           if "copy_bandwidth_bytes_per_s" in report else ""),
        "",
        format_table(report),
    ]
    for record in report.get("fft_ops", []):
        if "skipped" in record:
            lines += ["", f"tf_fftconv train step of {record['case']['name']}, each op alone: "
                          f"not timed ({record['skipped']})"]
            continue
        lines += ["", f"tf_fftconv train step of {record['case']['name']}, each op alone "
                      f"(sum {record['sum_ms']:.3f} ms; each includes a tf.function call, "
                      f"{record['call_overhead']['median_ms']:.3f} ms without work):"]
        for name, timing in record["timings"].items():
            share = 100 * timing["median_ms"] / record["sum_ms"] if record["sum_ms"] else 0
            lines.append(f"  {name:24s} {_cell_ms(timing):>14s}  {share:4.0f}%")
    for step in report.get("model_steps", []):
        model, timings = step["model"], step["timings"]
        lines += ["", f"Keras train step of {model['name']} (batch {model['batch']}, "
                      f"{model['size']}x{model['size']}x{model['in_channels']}, channels "
                      f"{'->'.join(str(c) for c in model['channels'])}, k{model['kernel']} "
                      f"{'VALID' if model.get('architecture') == 'lenet' else 'SAME'}; "
                      f"jit_compile={step['jit_compile']}):"]
        for impl, timing in timings.items():
            lines.append(f"  {MODEL_LABELS[impl]:14s} {timing['median_ms']:8.3f} ms  (XLA "
                         f"{'on' if step['compiled_with_xla'][impl] else 'off'})")
        for impl in ("fft", "auto"):
            if step.get(f"ratio_{impl}_conv2d") is not None:
                lines.append(f"  {MODEL_LABELS[impl]} / Conv2D: "
                             f"{step[f'ratio_{impl}_conv2d']:.3f}")
        for impl, reason in step["skipped"].items():
            lines.append(f"  {impl} skipped: {reason}")
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
        against64 = record.get("max_rel_diff_float64", {})
        for impl, diffs in record["max_rel_diff"].items():
            if not worst_diff(diffs) <= DIFF_NOTE_THRESHOLD:
                reference = record["max_rel_diff_against"]
                note = (f"{record['case']['name']} {record['mode']}: {impl} differs from "
                        f"{reference} by {worst_diff(diffs):.2e} (max rel)")
                if impl in against64 and reference in against64:
                    note += (f"; against conv2d in float64: {reference} "
                             f"{worst_diff(against64[reference]):.2e}, "
                             f"{impl} {worst_diff(against64[impl]):.2e}")
                notes.append(note)
    if notes:
        unique = list(dict.fromkeys(notes))
        lines += [""] + (unique if len(unique) <= 12 else unique[:12] + [
            f"... and {len(unique) - 12} more notes in the JSON file"])
    for summary in (format_host_bound(report["results"], env["device_kind"], timed_unit(settings)),
                    format_auto_summary(report["results"])):
        if summary:
            lines += ["", summary]
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
            ax.set_ylabel(f"ms per {timed_unit(report['settings'])} (median; bars min..max)")
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
