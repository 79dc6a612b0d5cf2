"""Training steps of ``keras.applications`` models against their ``tf_fftconv.to_fft`` versions
(``python -m tf_fftconv.bench --models``).

Each application is built once with Keras' layers (``weights=None``: nothing is downloaded) and
converted by ``to_fft`` with each algorithm asked for, so every version starts from the same
weights. Every version is compiled as a user would compile it (Adam, sparse categorical
cross-entropy, Keras' default ``jit_compile``) and trained on one fixed batch of random images.
After each version's warm-up, the versions' samples are taken in turns (``measure.in_turns``), so
that a drift of the machine reaches all of them alike; the time is the median per step.
"""

import math

import keras
import tensorflow as tf

from tf_fftconv.experiments.bench import measure
# Keras' dtype policies, as the reproduction takes them (--precision).
from tf_fftconv.experiments.reproduce import PRECISIONS, dtype_policy  # noqa: F401

# The algorithms of to_fft that can be timed (the bench's --impl names); Keras' own model is
# always timed, as the baseline of the ratios.
IMPLS = ("fft", "auto")
DEFAULT_IMPLS = ("auto",)
BASELINE = "keras"
# Image side and batch by device kind: ImageNet's 224 on a GPU; 64 on a CPU, where a step of
# ConvNeXt-Tiny at 224 takes many seconds.
DEFAULT_IMAGE_SIZE = {"GPU": 224, "CPU": 64}
DEFAULT_BATCH = {"GPU": 32, "CPU": 8}
CLASSES = 10


def _builders():
    """Lower-case name without underscores -> the keras.applications builder's name."""
    return {name.lower(): name for name in dir(keras.applications)
            if name[:1].isupper() and callable(getattr(keras.applications, name))}


def resolve_models(text):
    """Comma-separated application names, in Keras' spelling (``ConvNeXtTiny``) or in lower case
    with or without underscores (``convnext_tiny``) -> Keras' names, in the order given.
    ValueError for a name keras.applications does not have."""
    builders = _builders()
    names = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key = item.replace("_", "").replace("-", "").lower()
        if key not in builders:
            raise ValueError(f"unknown --models entry {item!r}: keras.applications has "
                             + ", ".join(sorted(builders.values())))
        names.append(builders[key])
    if not names:
        raise ValueError("--models names no model")
    return list(dict.fromkeys(names))


def build(name, image_size):
    """keras.applications' `name` with its classifier, random weights, `image_size` RGB images."""
    return getattr(keras.applications, name)(weights=None, input_shape=(image_size, image_size, 3),
                                             classes=CLASSES)


def fft_layers(model):
    """The FFT layers of `model`, those of nested models included."""
    from tf_fftconv.layers import FFTConv2D, FFTDepthwiseConv2D  # noqa: PLC0415

    found = []
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            found.extend(fft_layers(layer))
        elif isinstance(layer, (FFTConv2D, FFTDepthwiseConv2D)):
            found.append(layer)
    return found


def _compile(model):
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")


def run_application(name, impls, *, image_size, batch, precision, device, warmup, repeats, calls,
                    seed, unavailable=None, status=lambda text: None):
    """Times a training step of application `name` with Keras' layers and after
    ``to_fft(model, algorithm)`` for each of `impls`; returns the JSON record. `unavailable` maps
    an algorithm that cannot run here to the reason (recorded as skipped)."""
    from tf_fftconv.convert import to_fft  # noqa: PLC0415  (loads the op library)

    unavailable = unavailable or {}
    record = {"model": name, "image_size": image_size, "batch": batch, "precision": precision,
              "device": device, "timings": {}, "skipped": {}, "compiled_with_xla": {},
              "mean_loss": {}}
    timers = {}
    with dtype_policy(precision), tf.device(device):
        rng = tf.random.Generator.from_seed(seed)
        x = rng.normal((batch, image_size, image_size, 3))
        y = rng.uniform((batch,), maxval=CLASSES, dtype=tf.int32)
        status(f"{name}: building")
        keras_model = build(name, image_size)
        record["parameters"] = keras_model.count_params()
        models = {BASELINE: keras_model}
        for impl in impls:
            if impl in unavailable:
                record["skipped"][impl] = unavailable[impl]
                continue
            status(f"{name}: to_fft(algorithm={impl!r})")
            try:
                models[impl] = to_fft(keras_model, algorithm=impl)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as error:
                record["skipped"][impl] = measure.first_line(error)
        for version, model in models.items():
            status(f"{name}: {version} warm-up")
            try:
                _compile(model)
                timers[version] = measure.CallTimer(measure.keras_train_step(model, x, y), [()],
                                                    warmup=warmup, calls=calls)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as error:   # a graph TensorFlow refuses, out of memory, ...
                record["skipped"][version] = measure.first_line(error)
                continue
            record["compiled_with_xla"][version] = bool(model.jit_compile)
        converted = [models[impl] for impl in impls if impl in models]
        if converted:
            record["layers_converted"] = len(fft_layers(converted[0]))
        status(f"{name}: {', '.join(timers)} in turns")
        for version, timer in measure.in_turns(timers, repeats):
            try:
                timer.sample()
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as error:
                record["skipped"][version] = measure.first_line(error)
                del timers[version]
        for version, timer in timers.items():
            record["timings"][version] = measure.summarize(timer.samples, timer.calls,
                                                           timer.dispatch)
            # Keras' logs after one more step: the mean loss over every step the version took
            # (its loss tracker is reset only where fit starts an epoch). Finite where the version
            # trains; JSON has no NaN.
            loss = float(timer.fn()["loss"])
            record["mean_loss"][version] = loss if math.isfinite(loss) else str(loss)
            if version != BASELINE:
                # The plans the converted layers followed in the timed steps: how many took the
                # FFT path (with "auto", the others run TensorFlow's convolution).
                record[f"{version}_layers_on_fft_path"] = sum(
                    any(plan.algorithm == "fft" for plan in layer.explain_plans())
                    for layer in fft_layers(models[version]))
    medians = {version: timing["median_ms"] for version, timing in record["timings"].items()}
    record["ratios"] = {f"{impl}/{BASELINE}": (medians[impl] / medians[BASELINE]
                                               if impl in medians and BASELINE in medians
                                               else None)
                        for impl in impls}
    return record
