"""``python -m tf_fftconv.bench``: per-layer timings of tf.nn.conv2d, the tf.signal FFT conv and
tf_fftconv.fft_conv2d (the FFT path, and algorithm="auto"), in one run.

    python -m tf_fftconv.bench                      # default cases on the GPU (CPU if none)
    python -m tf_fftconv.bench --cases mathieu --modes train --tf32 on --json bench.json
    python -m tf_fftconv.bench --quick --device cpu # small shapes: a smoke run
    python -m tf_fftconv.bench --xla --model convnet7 # every step inside jit_compile=True, and
                                                      # Keras train steps of a small convnet
    python -m tf_fftconv.bench --cases grid --modes train --impl conv2d,fft,auto
                                                      # where auto must hold up (issue 10)
    python -m tf_fftconv.bench --cases 128:96:256:32:7:same --modes train --impl conv2d,fft \
        --fft-size 48                                 # force the fft frame
    python -m tf_fftconv.bench --models convnext_tiny,resnet50 --precision mixed_float16
                                                      # training steps of keras.applications
                                                      # models against their to_fft versions

Prints the table; writes the JSON report (--json) and the plot (--plot) only when asked to.
"""

import argparse
import datetime
import dataclasses
import json
import os
import sys
from pathlib import Path

import tensorflow as tf

from tf_fftconv._loader import load_library
from tf_fftconv.experiments import environment
from tf_fftconv.experiments.bench import applications, measure
from tf_fftconv.geometry import FFT_SIZES
from tf_fftconv.experiments.bench.report import Progress, format_report, write_plot

SCHEMA = "tf_fftconv.bench/1"


def parse_list(text, allowed, what):
    items = [part.strip().lower() for part in text.split(",") if part.strip()]
    for item in items:
        if item not in allowed:
            raise ValueError(f"unknown {what} {item!r}: choose from {', '.join(allowed)}")
    return [a for a in allowed if a in items]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m tf_fftconv.bench",
        description="Times tf.nn.conv2d, the tf.signal FFT conv and tf_fftconv.fft_conv2d "
                    "(algorithm fft and auto) per layer.")
    parser.add_argument(
        "--cases", default=None,
        help="comma-separated presets (" + ", ".join(sorted(measure.PRESETS)) + ") and specs "
             "BATCH:CIN:COUT:SIZE:K[:valid|same]; default 'all' ('quick' with --quick)")
    parser.add_argument("--impl", default=None,
                        help="implementations to time, comma-separated from: "
                             + ", ".join(measure.IMPLS) + " (default "
                             + ",".join(measure.DEFAULT_IMPLS) + "); with --models, the "
                             "algorithms of to_fft: " + ", ".join(applications.IMPLS)
                             + " (default " + ",".join(applications.DEFAULT_IMPLS) + ")")
    parser.add_argument("--modes", default=",".join(measure.MODES),
                        help="forward, train (forward + gradients wrt input and weights), or both")
    parser.add_argument("--data-format", default="NHWC", type=str.upper, choices=("NHWC", "NCHW"))
    parser.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"),
                        help="dtype of inputs, weights and outputs, the same for every "
                             "implementation (float16 / bfloat16: tf.nn.conv2d in that dtype "
                             "against the half-precision kernels; the tf.signal peer has no "
                             "half-precision FFT and is skipped)")
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
    parser.add_argument("--steps-per-call", type=int, default=1, metavar="K",
                        help="steps per timed call: each call of the timed tf.function runs the "
                             "forward or train step K times, on K input sets, each after the "
                             "one before, and the times are per step. The call's own host cost "
                             "(tens to hundreds of microseconds) is then shared by K steps, as in "
                             "a model whose step holds several layers (default 1)")
    parser.add_argument("--seed", type=int, default=None, help="input seed (default: fresh)")
    parser.add_argument("--quick", action="store_true",
                        help="small shapes and few repeats: a smoke run that fits a CPU")
    parser.add_argument("--json", metavar="PATH", default=None,
                        help="write the results file there (default: none)")
    parser.add_argument("--plot", metavar="PATH", default=None,
                        help="PNG of time vs kernel size (needs matplotlib; default: none)")
    parser.add_argument("--xla", action="store_true",
                        help="compile every timed step with XLA (tf.function(jit_compile=True)), "
                             "as Keras compiles a train step: conv2d is then XLA's convolution and "
                             "tf_fftconv runs through its custom calls")
    parser.add_argument("--model", default=None,
                        help="also time Keras train steps of a model whose convolutions dominate "
                             "the step, Conv2D against FFTConv2D (algorithm fft and auto), all "
                             "under XLA unless --model-jit off: "
                             + ", ".join(sorted(measure.MODEL_CASES)))
    parser.add_argument("--ops", action="store_true",
                        help="also time each op of tf_fftconv's train step alone, per case "
                             "(where the step's time goes)")
    parser.add_argument("--model-jit", default="on", choices=("on", "off"),
                        help="jit_compile of the --model steps (default on)")
    parser.add_argument("--model-batch", type=int, default=None,
                        help="batch of the --model steps (default: the model's own; a small batch "
                             "shows what a step costs the host) and of the --models steps "
                             "(default " + ", ".join(f"{n} on a {kind}" for kind, n in
                                                      applications.DEFAULT_BATCH.items()) + ")")
    parser.add_argument("--models", default=None, metavar="NAMES",
                        help="instead of layers, time a training step (Keras' defaults: "
                             "jit_compile, Adam, sparse categorical cross-entropy) of these "
                             "keras.applications models (weights=None, 10 classes), "
                             "comma-separated (convnext_tiny or ConvNeXtTiny), against their "
                             "tf_fftconv.to_fft versions (--impl: to_fft's algorithms)")
    parser.add_argument("--image-size", type=int, default=None, metavar="N",
                        help="image side of the --models steps (default " + ", ".join(
                            f"{n} on a {kind}" for kind, n in
                            applications.DEFAULT_IMAGE_SIZE.items()) + ")")
    parser.add_argument("--precision", default=None, choices=applications.PRECISIONS,
                        help="Keras dtype policy of the --models (default float32; the layers' "
                             "bench takes --dtype)")
    parser.add_argument("--fft-size", type=int, default=None, metavar="N",
                        help="force the frame of the fft implementation (an fft_size of the ops: "
                             "a power of two in [2, 128], 3 * 2^k in [6, 96] or 5 * 2^k in "
                             "[10, 80]); default: the cost model's. auto is not affected")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    args.command = " ".join(["python -m tf_fftconv.bench"]
                            + list(sys.argv[1:] if argv is None else argv))

    try:
        args.device = environment.resolve_device(args.device)
        if args.models is not None:
            parse_models_args(args)
        elif args.image_size is not None or args.precision is not None:
            raise ValueError("--image-size and --precision need --models")
        args.cases = measure.parse_cases(
            args.cases or ("quick" if args.quick else measure.DEFAULT_CASES))
        if args.models is None:
            args.impls = parse_list(args.impl or ",".join(measure.DEFAULT_IMPLS), measure.IMPLS,
                                    "implementation")
        args.modes = parse_list(args.modes, measure.MODES, "mode")
        if not args.impls or not args.modes:
            raise ValueError("--impl and --modes need at least one entry")
        if args.model is not None and args.model not in measure.MODEL_CASES:
            raise ValueError(f"unknown --model {args.model!r}: choose from "
                             + ", ".join(sorted(measure.MODEL_CASES)))
        if args.model_batch is not None and ((args.model is None and args.models is None)
                                             or args.model_batch < 1):
            raise ValueError("--model-batch needs --model or --models, and a batch >= 1")
        if args.fft_size is not None and args.fft_size not in FFT_SIZES:
            raise ValueError("--fft-size must be one of " + ", ".join(map(str, FFT_SIZES)))
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
    if args.repeats < 1 or args.warmup < 3 or args.input_sets < 1 or args.steps_per_call < 1 or (
            args.iters is not None and args.iters < 1):
        parser.error("--repeats, --iters, --input-sets and --steps-per-call must be >= 1, "
                     "--warmup >= 3")
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "little") >> 1
    return args


# Options of the layers' bench that a --models run has no use for (each is None or False unless
# given).
LAYER_OPTIONS = ("cases", "model", "ops", "xla", "plot", "fft_size", "quick")


def parse_models_args(args):
    """Checks and completes the options of a --models run in `args` (device resolved)."""
    given = [f"--{name.replace('_', '-')}" for name in LAYER_OPTIONS if getattr(args, name)]
    if given:
        raise ValueError(f"--models times whole models; {', '.join(given)} apply to the layers' "
                         "bench")
    args.models = applications.resolve_models(args.models)
    args.impls = parse_list(args.impl or ",".join(applications.DEFAULT_IMPLS), applications.IMPLS,
                            "to_fft algorithm")
    kind = args.device.split(":")[0].strip("/")
    if args.image_size is None:
        args.image_size = applications.DEFAULT_IMAGE_SIZE[kind]
    if args.model_batch is None:
        args.model_batch = applications.DEFAULT_BATCH[kind]
    args.precision = args.precision or "float32"
    if args.image_size < 32 or args.model_batch < 1:
        raise ValueError("--image-size must be at least 32 (keras.applications' smallest) and "
                         "--model-batch at least 1")


def fft_unavailable_reason():
    """None when the op library loads, else why (the fft and auto columns are then skipped, not
    crashed on)."""
    try:
        load_library()
    except ImportError as error:
        return measure.first_line(error)
    return None


def run(args, save=None):
    """Runs the benchmark described by parsed `args`; returns the report (the JSON document).
    `save(report)`, if given, is called after each (case, mode) and each case's op timings, with
    `report["finished"]` false, so that a run cut short keeps what it measured."""
    if args.tf32 is not None:
        tf.config.experimental.enable_tensor_float_32_execution(args.tf32 == "on")
    library_impls = [impl for impl in measure.LIBRARY_IMPLS if impl in args.impls]
    fft_reason = fft_unavailable_reason() if library_impls else "not selected (--impl)"
    if library_impls and fft_reason:
        print(f"note: {fft_reason}; the {' and '.join(library_impls)} columns are skipped",
              file=sys.stderr)
    report = {
        "schema": SCHEMA,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "environment": {**environment.capture(args.device),
                        "fft_conv2d_available": fft_reason is None,
                        "fft_conv2d_unavailable_reason": fft_reason},
    }
    unavailable = {impl: fft_reason for impl in library_impls} if fft_reason else {}
    if args.models is not None:
        return run_applications(args, report, unavailable, save)
    report.update({
        "settings": {
            "command": args.command,
            "cases": [case.spec for case in args.cases],
            "impls": args.impls,
            "impl_labels": {impl: measure.IMPL_LABELS[impl] for impl in args.impls},
            "modes": args.modes,
            "data_format": args.data_format,
            "dtype": args.dtype,
            "xla": args.xla,
            "fft_size": args.fft_size,
            "model": args.model,
            "model_batch": args.model_batch,
            "ops": args.ops,
            "repeats": args.repeats,
            "warmup": args.warmup,
            "calls_per_sample": args.iters if args.iters is not None else "auto",
            "input_sets": args.input_sets,
            "steps_per_call": args.steps_per_call,
            "seed": args.seed,
            "sync": "tf.test.experimental.sync_devices",
            "statistic": ("median of per-call times over repeats" if args.steps_per_call == 1
                          else "median of per-step times (per-call times / steps_per_call) over "
                               "repeats"),
        },
        "results": [],
        "finished": False,
    })
    with tf.device(args.device):
        generator = tf.random.Generator.from_seed(args.seed)
    with_ops = args.ops and "fft" in args.impls and "fft" not in unavailable
    progress = Progress(len(args.cases) * (len(args.modes) + with_ops) + (args.model is not None),
                        enabled=not args.no_progress)
    with_floors = "fft" in args.impls and "fft" not in unavailable and "train" in args.modes
    try:
        if with_floors:
            progress.status("copy bandwidth")
            report["copy_bandwidth_bytes_per_s"] = measure.copy_bandwidth(
                args.device, warmup=args.warmup, repeats=args.repeats)
        for case in args.cases:
            for mode in args.modes:
                record = measure.run_case(
                    case, mode, args.impls, device=args.device, generator=generator,
                    data_format=args.data_format, input_sets=args.input_sets,
                    warmup=args.warmup, repeats=args.repeats, calls=args.iters,
                    jit_compile=args.xla, unavailable=unavailable, status=progress.status,
                    dtype=tf.as_dtype(args.dtype), fft_size=args.fft_size,
                    steps_per_call=args.steps_per_call)
                if with_floors and mode == "train":
                    with tf.device(args.device):
                        moved = measure.fft_bytes_moved(case, args.data_format,
                                                        tf.as_dtype(args.dtype), args.fft_size,
                                                        compiled=args.xla)
                    measure.add_floor(record, moved, report["copy_bandwidth_bytes_per_s"])
                report["results"].append(record)
                progress.advance()
                if save:
                    save(report)
            if with_ops:
                report.setdefault("fft_ops", []).append(measure.run_fft_ops(
                    case, device=args.device, generator=generator, data_format=args.data_format,
                    input_sets=args.input_sets, warmup=args.warmup, repeats=args.repeats,
                    calls=args.iters, status=progress.status, dtype=tf.as_dtype(args.dtype),
                    fft_size=args.fft_size))
                progress.advance()
                if save:
                    save(report)
        if args.model is not None:
            model_impls = [impl for impl in ("conv2d", "fft", "auto")
                           if impl in args.impls and impl not in unavailable]
            model_case = measure.MODEL_CASES[args.model]
            if args.model_batch is not None:
                model_case = dataclasses.replace(model_case, batch=args.model_batch)
            report["model_steps"] = [measure.run_model_step(
                model_case, model_impls, device=args.device,
                jit_compile=args.model_jit == "on", warmup=args.warmup, repeats=args.repeats,
                calls=args.iters, seed=args.seed, status=progress.status)]
            progress.advance()
        report["finished"] = True
    finally:
        progress.close()
    return report


def run_applications(args, report, unavailable, save=None):
    """The --models run: `report` (schema, time, environment) completed with its settings and a
    record per application (applications.run_application), saved after each as `run` does."""
    report.update({
        "settings": {
            "command": args.command,
            "models": args.models,
            "impls": args.impls,
            "image_size": args.image_size,
            "batch": args.model_batch,
            "precision": args.precision,
            "compile": "optimizer='adam', loss='sparse_categorical_crossentropy', Keras' default "
                       "jit_compile",
            "repeats": args.repeats,
            "warmup": args.warmup,
            "calls_per_sample": args.iters if args.iters is not None else "auto",
            "seed": args.seed,
            "sync": "tf.test.experimental.sync_devices",
            "statistic": "median of per-step times over repeats; the versions of a model sampled "
                         "in turns",
        },
        "applications": [],
        "finished": False,
    })
    progress = Progress(len(args.models), enabled=not args.no_progress)
    try:
        for name in args.models:
            report["applications"].append(applications.run_application(
                name, args.impls, image_size=args.image_size, batch=args.model_batch,
                precision=args.precision, device=args.device, warmup=args.warmup,
                repeats=args.repeats, calls=args.iters, seed=args.seed, unavailable=unavailable,
                status=progress.status))
            progress.advance()
            if save:
                save(report)
        report["finished"] = True
    finally:
        progress.close()
    return report


def write_json(path, report):
    """Writes `report` to `path` whole: to a file beside it, then renamed over it, so that a run
    killed while writing leaves the last complete document."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".writing")
    partial.write_text(json.dumps(report, indent=1) + "\n")
    os.replace(partial, path)


def main(argv=None):
    args = parse_args(argv)
    # With --json, the file holds every finished (case, mode) as the run goes ("finished": false
    # until the end), so that a run stopped by a time limit or an interrupt keeps its timings.
    report = run(args, save=(lambda partial: write_json(args.json, partial)) if args.json else None)
    print(format_report(report))
    if args.json:
        write_json(args.json, report)
        print(f"\nresults: {args.json}")
    if args.plot:
        plot_path = write_plot(report, args.plot)
        if plot_path:
            print(f"plot: {plot_path}")
    measured = any(record["timings"]
                   for record in report.get("results", []) + report.get("applications", []))
    return 0 if measured else 1
