"""Baseline vs FFT vs automatic LeNet-5: the table of the MNIST reproduction, remeasured.

    python -m tf_fftconv.reproduce [--dataset mnist] [--epochs 10] [--batch-size 128] [--seed 0]
                                   [--limit-train N] [--limit-test N] [--seeds K]
                                   [--json PATH]

Trains LeNet-5 with spatial convolutions (keras.layers.Conv2D, the baseline), with
frequency-domain convolutions (tf_fftconv.FFTConv2D, algorithm="fft": the FFT path always) and
with tf_fftconv.FFTConv2D choosing per layer (algorithm="auto") from the same initial weights
(one model is built, its weights copied into the others) on the same batches in the same order,
on the GPU when there is one, then prints

| Experiment | Description | Avg epoch time | Wall time | Acc |

where
  Avg epoch time  mean training time of epochs 2..N; epoch 1 (which includes tracing the
                  training step) is left out and reported separately; with a single epoch it
                  is that epoch's time;
  Wall time       `model.fit` from call to return, all epochs (tracing included);
  Acc             accuracy on the test split after the last epoch.
The models' epochs alternate (every model's epoch 1, then every model's epoch 2, ...: one
`model.fit` call per epoch), so that a change in the machine's speed during the run reaches all
models alike; `--order sequential` trains one model after the other.
All models are compiled with Keras' defaults besides optimizer, loss and metrics
(`jit_compile="auto"`: XLA for no model on CPU, for all on a GPU, the FFT layers through
the ops' XLA custom calls; each run records and prints which path each model took).
Before timing, one training step of each model type runs on throwaway copies, so one-time
process costs (library handles, kernel loading) fall on no timed run. The notes under the
table say what `algorithm="auto"` chose for each layer.

`--seeds K` (also spelt `--baseline-seeds K`) trains K-1 more pairs of baseline and FFT models
with seeds seed+1 .. seed+K-1, each pair again from one set of initial weights on one order of
batches, and reports the mean and range of the K accuracies of each model and the K paired
differences: the FFT accuracy judged against run-to-run noise, like for like.

The data set comes from `tf_fftconv.experiments.data.load`: MNIST when it can be had quickly,
otherwise Fashion-MNIST, otherwise synthetic data, always announced and named in the table's rows.
`--json PATH` writes per-epoch times, losses and accuracies, each model's plans (per
convolution layer: algorithm, frame, tiling; also printed under the table), the device, the
TensorFlow version and the data set actually used.
"""

import argparse
import contextlib
import json
import statistics
import time
import warnings
from pathlib import Path

BASELINE_DESCRIPTION = "Baseline"
FFT_DESCRIPTION = "Frequency domain convolutions (tf_fftconv)"
AUTO_DESCRIPTION = "Automatic choice per layer (tf_fftconv, algorithm=\"auto\")"
# The timed models: result["runs"] key, the `conv` of the model's builder (models.lenet5 or
# models.largekernel).
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")
MODELS = (("baseline", "spatial"), ("fft", "fft"), ("auto", "auto"))
# How the models' epochs follow one another (train_all).
ORDERS = ("interleaved", "sequential")
# --model: the architecture, and the name of its rows (baseline, FFT, auto).
ARCHITECTURES = {"lenet5": ("LeNet", "Mathieu LeNet", "LeNet, auto"),
                 "largekernel": ("large-kernel ConvNet", "large-kernel ConvNet, FFT",
                                 "large-kernel ConvNet, auto")}
TABLE_HEADER = ("| Experiment | Description | Avg epoch time | Wall time | Acc |\n"
                "|---|---|---|---|---|")


def _epoch_logger(label, epochs, progress):
    import keras

    class EpochLog(keras.callbacks.Callback):
        """Per-epoch training time (begin to end of the epoch, metrics fetched), loss, accuracy."""

        def __init__(self):
            super().__init__()
            self.times, self.loss, self.accuracy = [], [], []

        def on_epoch_begin(self, epoch, logs=None):
            self._start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            elapsed = time.perf_counter() - self._start
            logs = logs or {}
            self.times.append(elapsed)
            self.loss.append(float(logs.get("loss", float("nan"))))
            self.accuracy.append(float(logs.get("accuracy", float("nan"))))
            progress(f"[{label}] epoch {epoch + 1}/{epochs}: {elapsed:.3f} s, "
                     f"loss {self.loss[-1]:.4f}, train accuracy {100 * self.accuracy[-1]:.3f}%")

    return EpochLog()


def _build(conv, info, fft_size=None, architecture="lenet5"):
    from tf_fftconv.experiments import models

    data_format = "channels_first" if info.image_shape[0] == 1 else "channels_last"
    if architecture == "largekernel":  # its FFT layers take their frames from the cost model
        return models.largekernel(conv, input_shape=info.image_shape,
                                  num_classes=info.num_classes, data_format=data_format)
    return models.lenet5(conv, input_shape=info.image_shape, num_classes=info.num_classes,
                         data_format=data_format, fft_size=fft_size)


def _warm_up(batches, info, fft_size, jit_compile="auto", steps_per_execution=1,
             architecture="lenet5"):
    """One training step of each model type on throwaway models, before anything is timed.

    `batches` must not be a timed run's training pipeline: iterating it would move that
    pipeline on to its next epoch's order.
    """
    from tf_fftconv.experiments import models

    images, labels = next(iter(batches.take(1)))
    for _, conv in MODELS:
        model = models.compile_lenet(_build(conv, info, fft_size, architecture), jit_compile=jit_compile,
                                     steps_per_execution=steps_per_execution)
        model.train_on_batch(images, labels)


def _from_one_initialisation(convs, info, fft_size, seed, compile_options, architecture="lenet5"):
    """Compiled models of `architecture` for `convs` ("spatial" first), all with the initial
    weights that the first one draws after `keras.utils.set_random_seed(seed)`."""
    import keras

    from tf_fftconv.experiments import models

    keras.utils.set_random_seed(seed)
    first = models.compile_lenet(_build(convs[0], info, fft_size, architecture), **compile_options)
    built = [first]
    for conv in convs[1:]:
        model = _build(conv, info, fft_size, architecture)
        model.set_weights(first.get_weights())
        built.append(models.compile_lenet(model, **compile_options))
    return built


class TimedRun:
    """One model's training, an epoch (one ``model.fit`` call) at a time, so that the epochs of
    several models can alternate; then its evaluation and record."""

    def __init__(self, model, label, train, test, epochs, seed, progress):
        self.model, self.label, self.train, self.test = model, label, train, test
        self.epochs, self.seed = epochs, seed
        self.log = _epoch_logger(label, epochs, progress)
        self.wall = 0.0

    def fit_epoch(self, epoch):
        import keras

        if epoch == 0:
            keras.utils.set_random_seed(self.seed)
        start = time.perf_counter()
        self.model.fit(self.train, initial_epoch=epoch, epochs=epoch + 1, verbose=0,
                       callbacks=[self.log], shuffle=False)  # data pre-shuffled
        self.wall += time.perf_counter() - start

    def record(self):
        """Evaluates the trained model; the run's record."""
        start = time.perf_counter()
        scores = self.model.evaluate(self.test, verbose=0, return_dict=True)
        eval_time = time.perf_counter() - start
        times = self.log.times
        later = times[1:] or times
        return {
            "label": self.label,
            "seed": self.seed,
            "epochs": self.epochs,
            "epoch_times_s": times,
            "first_epoch_time_s": times[0],
            "avg_epoch_time_s": statistics.fmean(later),
            "avg_epoch_time_excludes_first": len(times) > 1,
            "avg_epoch_time_all_s": statistics.fmean(times),
            "wall_time_s": self.wall,
            "train_loss": self.log.loss,
            "train_accuracy": self.log.accuracy,
            "test_loss": float(scores["loss"]),
            "test_accuracy": float(scores["accuracy"]),
            "eval_time_s": eval_time,
            "jit_compile": bool(self.model.jit_compile),
            "plans": model_plans(self.model),
        }


def _check_order(order):
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")


def train_all(timed_runs, epochs, order):
    """Trains every run: "interleaved" runs epoch 1 of each, then epoch 2 of each, ..., so that a
    drift of the host's speed during the run reaches every model alike; "sequential" trains one
    model after the other. Returns their records, in order."""
    _check_order(order)
    if order == "interleaved":
        for epoch in range(epochs):
            for timed in timed_runs:
                timed.fit_epoch(epoch)
    else:
        for timed in timed_runs:
            for epoch in range(epochs):
                timed.fit_epoch(epoch)
    return [timed.record() for timed in timed_runs]


def _plan_record(plan):
    """One plan as the result records it: the algorithm, and for the FFT path its frame size and
    tiling ("single", "TxT tiles of HxW", or "run-time" where the sizes were unknown while
    tracing). None is a keras.layers.Conv2D: the spatial convolution."""
    if plan is None or plan.algorithm != "fft":
        return {"algorithm": "spatial", "frame": None, "tiling": None}
    if plan.config is None:
        return {"algorithm": "fft", "frame": None, "tiling": "run-time"}
    tiles = plan.config.tiles
    tiling = ("single" if not tiles.tiled else
              f"{tiles.tiles_h}x{tiles.tiles_w} tiles of {tiles.tile_h}x{tiles.tile_w}")
    return {"algorithm": "fft", "frame": tiles.fft_size, "tiling": tiling}


def model_plans(model):
    """What each convolution layer of `model` with a kernel larger than 1x1 ran (1x1 layers are
    Keras' Conv2D in every model): layer name -> the distinct records (`_plan_record`) of the
    plans its traces followed."""
    import keras

    from tf_fftconv.layers import FFTConv2D, FFTDepthwiseConv2D

    plans = {}
    for layer in model.layers:
        if isinstance(layer, (FFTConv2D, FFTDepthwiseConv2D)):
            records = [_plan_record(plan) for plan in layer.explain_plans()]
        elif (isinstance(layer, (keras.layers.Conv2D, keras.layers.DepthwiseConv2D))
              and tuple(layer.kernel_size) != (1, 1)):
            records = [_plan_record(None)]
        else:
            continue
        plans[layer.name] = [dict(items) for items in sorted({tuple(r.items()) for r in records},
                                                             key=str)]
    return plans


def _describe_plans(plans):
    """`model_plans` in words: "c1 fft S=32 single, c3 spatial"."""
    def one(record):
        if record["algorithm"] != "fft":
            return record["algorithm"]
        return " ".join(str(v) for v in ("fft", record["frame"] and f"S={record['frame']}",
                                         record["tiling"]) if v)
    return ", ".join(f"{layer} {' / '.join(one(r) for r in records)}"
                     for layer, records in plans.items())


def _auto_choices(model):
    """What each FFT layer of `model` followed: layer name -> the plan labels of its traces."""
    from tf_fftconv.layers import FFTConv2D, FFTDepthwiseConv2D

    return {layer.name: sorted({plan.label for plan in layer.explain_plans()})
            for layer in model.layers if isinstance(layer, (FFTConv2D, FFTDepthwiseConv2D))}


@contextlib.contextmanager
def dtype_policy(name):
    """Keras' global dtype policy set to `name` inside, restored after."""
    import keras

    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(name)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def run(dataset="mnist", epochs=10, batch_size=128, seed=0, limit_train=None, limit_test=None,
        seeds=1, fallback=True, data_dir=None, data_format=None, fft_size=None,
        warm_up=True, jit_compile="auto", xla_auto_clustering=False, steps_per_execution=1,
        precision="float32", order="interleaved", model="lenet5", progress=print):
    """Trains the baseline, the FFT and the automatic LeNet-5, or large-kernel ConvNet with
    `model="largekernel"` (and `seeds` - 1 more pairs of baseline and FFT models); returns the
    results dict.

    jit_compile: passed to model.compile for every model ("auto": Keras' default; False: no XLA for
    any, so the convolutions are compared on equal terms).
    precision: the Keras dtype policy of every model while they are built and trained
    ("float32", "mixed_float16" or "mixed_bfloat16"; the policy in force before is restored).
    steps_per_execution: passed to model.compile for every model (1, Keras' default: one call of
    the train function per batch; more amortises the host's work per call over that many steps).
    order: "interleaved" (default) trains every model's first epoch, then every model's second,
    ...; "sequential" one model after the other (train_all).
    xla_auto_clustering: turn on TensorFlow's XLA auto-clustering, which compiles the parts of a
    graph XLA supports and leaves the custom ops outside (the FFT model's dense layers, pooling and
    optimizer then get fused kernels too).
    """
    import keras
    import tensorflow as tf

    from tf_fftconv.experiments import data, environment

    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    _check_order(order)
    if model not in ARCHITECTURES:
        raise ValueError(f"model must be one of {', '.join(ARCHITECTURES)}, got {model!r}")
    with dtype_policy(precision):
        arrays = data.load_arrays(dataset, data_dir=data_dir, fallback=fallback)

        def pipelines(s):
            return data.pipelines(arrays, batch_size, seed=s, limit_train=limit_train,
                                  limit_test=limit_test, data_format=data_format, requested=dataset)

        train, test, info = pipelines(seed)
        env = environment.capture()
        progress(f"data: {info.display_name}, {info.source} ({info.num_train} train, "
                 f"{info.num_test} test images, batch {batch_size}); {env['description']}; "
                 f"TensorFlow {env['tf_version']}")
        if xla_auto_clustering:
            tf.config.optimizer.set_jit("autoclustering")
        if warm_up:
            _warm_up(test, info, fft_size, jit_compile, steps_per_execution, model)

        # Same initial weights: build the baseline, copy its weights into the other models.
        compile_options = {"jit_compile": jit_compile, "steps_per_execution": steps_per_execution}
        keys, convs = zip(*MODELS)
        trained = dict(zip(keys, _from_one_initialisation(convs, info, fft_size, seed,
                                                          compile_options, model)))
        timed_runs = []
        for key in keys:
            # A pipeline per model with the same seed: the same batches in the same order.
            model_train, model_test = (train, test) if key == "baseline" else pipelines(seed)[:2]
            timed_runs.append(TimedRun(trained[key], key, model_train, model_test, epochs, seed,
                                       progress))
        # Each further seed: a baseline and an FFT model from one initialisation, on that seed's
        # batches.
        pairs = [(seed + k, _from_one_initialisation(("spatial", "fft"), info, fft_size,
                                                     seed + k, compile_options, model))
                 for k in range(1, seeds)]
        extra_runs = [TimedRun(pair[i], f"{label} seed {s}", *pipelines(s)[:2], epochs, s,
                               progress)
                      for i, label in enumerate(("baseline", "fft")) for s, pair in pairs]
        records = train_all(timed_runs + extra_runs, epochs, order)
        runs = dict(zip(keys, records))
        runs["baseline_extra_seeds"] = records[len(keys):len(keys) + len(pairs)]
        runs["fft_extra_seeds"] = records[len(keys) + len(pairs):]

        result = {
            "dataset": info.to_dict(),
            "environment": env,
            "settings": {"model": model, "dataset": dataset, "epochs": epochs, "batch_size": batch_size,
                         "seed": seed, "limit_train": limit_train, "limit_test": limit_test,
                         "seeds": seeds, "fft_size": fft_size,
                         "data_format": data_format or keras.config.image_data_format(),
                         "warm_up": warm_up, "jit_compile": jit_compile,
                         "xla_auto_clustering": xla_auto_clustering,
                         "steps_per_execution": steps_per_execution, "precision": precision,
                         "order": order},
            "runs": runs,
            "auto_choices": _auto_choices(trained["auto"]),
        }
        if seeds > 1:
            result.update(_accuracy_over_seeds(runs, [seed + k for k in range(seeds)]))
        result["table"] = format_table(result)
        return result


def _spread(seeds, accuracies):
    return {"seeds": seeds, "accuracies": accuracies, "mean": statistics.fmean(accuracies),
            "stdev": statistics.stdev(accuracies), "min": min(accuracies),
            "max": max(accuracies)}


def _accuracy_over_seeds(runs, seeds):
    """The test accuracies of the baseline and of the FFT model over `seeds` (mean and spread of
    each), and their paired differences (FFT - baseline, same seed: same initial weights, same
    batches)."""
    baseline, fft = ([runs[key]["test_accuracy"]]
                     + [r["test_accuracy"] for r in runs[f"{key}_extra_seeds"]]
                     for key in ("baseline", "fft"))
    return {"baseline_accuracy_over_seeds": _spread(seeds, baseline),
            "fft_accuracy_over_seeds": _spread(seeds, fft),
            "paired_accuracy_differences": [f - b for f, b in zip(fft, baseline)]}


def format_table(result):
    """The markdown table (as in the design document) and the notes that define its columns."""
    info, runs = result["dataset"], result["runs"]
    name = info["display_name"]
    rows = [TABLE_HEADER]
    base, fft, auto = runs["baseline"], runs["fft"], runs.get("auto")
    names = ARCHITECTURES[result.get("settings", {}).get("model", "lenet5")]
    for experiment, description, r in zip((f"{name} {n}" for n in names),
                                          (BASELINE_DESCRIPTION, FFT_DESCRIPTION, AUTO_DESCRIPTION),
                                          (base, fft, auto)):
        if r is not None:
            rows.append(f"| {experiment} | {description} | {r['avg_epoch_time_s']:.5f} s | "
                        f"{r['wall_time_s']:.1f} s | {100 * r['test_accuracy']:.5f}% |")
    settings = result.get("settings", {})
    timed = [("baseline", base), ("FFT", fft)] + ([("auto", auto)] if auto else [])
    if base["avg_epoch_time_excludes_first"]:
        epoch_note = (f"Avg epoch time: epochs 2..{base['epochs']} (epoch 1, with tracing: "
                      + ", ".join(f"{label} {r['first_epoch_time_s']:.3f} s"
                                  for label, r in timed) + ").")
    else:
        epoch_note = "Avg epoch time: the single epoch, tracing included."
    notes = [
        "",
        epoch_note + " Wall time: model.fit, all epochs"
        + (", epochs of the models alternating" if settings.get("order") == "interleaved"
           else "") + ". "
        f"Acc: test accuracy on {info['num_test']} images after the last epoch.",
        f"FFT / baseline epoch time: {fft['avg_epoch_time_s'] / base['avg_epoch_time_s']:.2f}x; "
        f"accuracy difference (FFT - baseline): "
        f"{100 * (fft['test_accuracy'] - base['test_accuracy']):+.3f} points. "
        f"XLA (jit_compile={settings.get('jit_compile', 'auto')!r}): "
        + ", ".join(f"{label} {'on' if r['jit_compile'] else 'off'}" for label, r in timed)
        + f"{'; XLA auto-clustering on' if settings.get('xla_auto_clustering') else ''}"
        + (f"; {settings['steps_per_execution']} steps per call of the train function"
           if settings.get("steps_per_execution", 1) != 1 else "")
        + (f"; dtype policy {settings['precision']}"
           if settings.get("precision", "float32") != "float32" else "") + ".",
    ]
    if all("plans" in r for _, r in timed):   # older results have no plans
        notes.append("Convolutions run (per layer: algorithm, frame, tiling): " + "; ".join(
            f"{label} {_describe_plans(r['plans'])}" for label, r in timed) + ".")
    if auto is not None:
        choices = result.get("auto_choices", {})
        notes.append(
            f"auto / baseline epoch time: "
            f"{auto['avg_epoch_time_s'] / base['avg_epoch_time_s']:.2f}x; auto chose "
            + (", ".join(f"{layer}: {' / '.join(labels)}" for layer, labels in choices.items())
               or "nothing recorded") + ".")
    spread = result.get("baseline_accuracy_over_seeds")
    fft_spread = result.get("fft_accuracy_over_seeds")
    if spread and fft_spread:
        differences = result["paired_accuracy_differences"]
        where = ("below" if fft_spread["mean"] < spread["min"] else
                 "above" if fft_spread["mean"] > spread["max"] else "within")
        notes.append(
            f"Over {len(spread['seeds'])} seeds ({', '.join(map(str, spread['seeds']))}; each "
            f"seed's baseline and FFT model from the same initial weights on the same batches): "
            f"baseline mean {100 * spread['mean']:.3f}%, range "
            f"{100 * spread['min']:.3f}-{100 * spread['max']:.3f}%, stdev "
            f"{100 * spread['stdev']:.3f} points; FFT mean {100 * fft_spread['mean']:.3f}%, range "
            f"{100 * fft_spread['min']:.3f}-{100 * fft_spread['max']:.3f}%, "
            f"{where} the baseline's range; FFT - baseline per seed: "
            + ", ".join(f"{100 * d:+.2f}" for d in differences)
            + f" points (mean {100 * statistics.fmean(differences):+.3f}).")
    env = result["environment"]
    notes.append(f"Data: {name} ({info['source']}), {info['num_train']} training images, "
                 f"batch {info['batch_size']}. Device: {env['description']}. "
                 f"TensorFlow {env['tf_version']}, Keras {env['keras_version']}.")
    if info.get("fallback_reason"):
        notes.append(f"NOTE: {info['requested']!r} was asked for but {name} was used "
                     f"({info['fallback_reason']}).")
    return "\n".join(rows + notes)


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m tf_fftconv.reproduce",
        description="Train LeNet-5 with spatial convolutions, with FFT convolutions and with the "
                    "automatic choice; print the table.")
    parser.add_argument("--dataset", default="mnist",
                        help="mnist (default; falls back to fashion_mnist, then synthetic, "
                             "announced), fashion_mnist, idx:DIR or synthetic")
    parser.add_argument("--epochs", type=_positive_int, default=10)
    parser.add_argument("--batch-size", type=_positive_int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit-train", type=_positive_int, default=None,
                        help="use only the first N training images")
    parser.add_argument("--limit-test", type=_positive_int, default=None,
                        help="use only the first N test images")
    parser.add_argument("--seeds", "--baseline-seeds", type=_positive_int, default=1,
                        help="train the baseline and the FFT model with K seeds (seed .. "
                             "seed+K-1; each pair from the same initial weights) and report both "
                             "accuracy spreads and the paired differences")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    parser.add_argument("--no-fallback", action="store_true",
                        help="fail instead of substituting another data set")
    parser.add_argument("--data-dir", help="tensorflow-datasets data directory")
    parser.add_argument("--data-format", choices=("channels_last", "channels_first"),
                        help="default: keras.config.image_data_format()")
    parser.add_argument("--fft-size", type=_positive_int, default=None,
                        help="FFT frame size for the FFT and auto models (default: chosen by "
                             "fft_conv2d; given, the auto model takes the FFT path too)")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="skip the untimed warm-up step before the timed runs")
    parser.add_argument("--jit-compile", choices=("auto", "off"), default="auto",
                        help="model.compile's jit_compile for all models (default: Keras' "
                             "\"auto\"; \"off\": no XLA for any)")
    parser.add_argument("--steps-per-execution", type=_positive_int, default=1,
                        help="model.compile's steps_per_execution for all models (default 1, "
                             "Keras' default; more runs that many steps per call, which takes "
                             "the host's per-step work off a small model's step time)")
    parser.add_argument("--precision", choices=PRECISIONS, default="float32",
                        help="Keras dtype policy of every model (default float32; the mixed "
                             "policies run FFTConv2D's half-precision kernels and conv2d in the "
                             "same half type)")
    parser.add_argument("--model", choices=tuple(ARCHITECTURES), default="lenet5",
                        help="lenet5 (default): Mathieu's LeNet-5, its two convolutions Conv2D or "
                             "FFTConv2D; largekernel: a RepLKNet-style ConvNet whose depthwise "
                             "27x27, 13x13 and 7x7 layers are DepthwiseConv2D or FFTDepthwiseConv2D")
    parser.add_argument("--order", choices=ORDERS, default="interleaved",
                        help="interleaved (default): every model's epoch 1, then every model's "
                             "epoch 2, ..., so that a change in the machine's speed during the "
                             "run reaches all models alike; sequential: one model after another")
    parser.add_argument("--xla-auto-clustering", action="store_true",
                        help="turn on TensorFlow's XLA auto-clustering (XLA for everything but "
                             "the custom ops)")
    return parser


def parse_args(argv=None, parser=None):
    """The arguments, with the data set name checked (a usage error, not a traceback, when bad)."""
    from tf_fftconv.experiments import data

    parser = parser or build_parser()
    args = parser.parse_args(argv)
    try:
        data.check_name(args.dataset)
    except (ValueError, data.DatasetUnavailableError) as error:
        parser.error(f"--dataset: {error}")
    return args


def main(argv=None):
    from tf_fftconv.experiments import data

    parser = build_parser()
    args = parse_args(argv, parser)
    # The data loader's substitution banner is on stderr already; skip the warning's echo.
    warnings.filterwarnings("ignore", message=data.ANNOUNCE_PREFIX, category=UserWarning)
    try:
        result = run(dataset=args.dataset, epochs=args.epochs, batch_size=args.batch_size,
                     seed=args.seed, limit_train=args.limit_train, limit_test=args.limit_test,
                     seeds=args.seeds, fallback=not args.no_fallback,
                     data_dir=args.data_dir, data_format=args.data_format,
                     fft_size=args.fft_size, warm_up=not args.no_warm_up,
                     jit_compile="auto" if args.jit_compile == "auto" else False,
                     xla_auto_clustering=args.xla_auto_clustering,
                     steps_per_execution=args.steps_per_execution, precision=args.precision,
                     order=args.order, model=args.model,
                     progress=lambda line: print(line, flush=True))
    except (data.DatasetUnavailableError, data.IdxFormatError) as error:
        # What --dataset (or --no-fallback) asked for cannot be had or read here.
        parser.error(f"--dataset {args.dataset}: {error}")
    print()
    print(result["table"], flush=True)
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2))
        print(f"\nresults written to {path}")
    return 0
