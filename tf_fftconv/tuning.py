"""One-time timing of a convolution's best candidates on the device (``tf_fftconv.autotune``).

The cost model (``cost_model``, through ``planning``) ranks the candidates; this times spatial
convolution and the best FFT configurations by the model, forward + both gradients, each as its
own ``tf.function`` called from eager Python (never inside a function being traced; compiled by
XLA for a problem that XLA compiles, ``Problem.compiled``), the calls rotating over input sets
as a training step meets a new batch each time (a small problem's calls running 16 steps each, on
16 sets, so that they time the device's work rather than the host's issue of one call), their
samples taken in turns, and stores the medians per problem (``timing_cache``: in the process,
and in ``$TF_FFTCONV_AUTOTUNE_CACHE`` when set). Later plans for that problem take the fastest
timed candidate within the memory budget.

When it runs: ``tf_fftconv.autotune(...)`` before training; ``TF_FFTCONV_AUTOTUNE=1`` to time
every problem an eager ``fft_conv2d(algorithm="auto")`` call meets for the first time; and, unless
``TF_FFTCONV_AUTOTUNE=0``, ``FFTConv2D`` on a GPU times its problem once when it is built if the
cost model calls it close (``planning.is_close_call``: the FFT and spatial estimates within a
factor ``planning.CLOSE_CALL_FACTOR``), since the model's error can flip such a choice. A timing
runs each candidate several times at full size, costing about a second per layer and device
memory, so clear choices are left to the model; ``fft_conv2d`` itself never times unasked.
"""

import contextlib
import dataclasses
import logging
import math
import statistics
import time

import tensorflow as tf

from tf_fftconv import cost_model
from tf_fftconv import execute
from tf_fftconv import planning
from tf_fftconv import timing_cache
from tf_fftconv.problem import ASSUMED_BATCH, Plan
from tf_fftconv.errors import invalid_argument as _invalid

# A timed sample: calls of the step between two device syncs, enough to last about SAMPLE_S.
SAMPLE_S = 0.01
MAX_CALLS_PER_SAMPLE = 50
# Input sets the calls rotate over, where one set is at most ROTATE_BELOW_BYTES: more than the L2
# cache of any GPU today (60 MB on an H200), so a larger set is out of the cache by its next call.
INPUT_SETS = 3
ROTATE_BELOW_BYTES = 128 << 20
# A small problem is timed CHAINED_STEPS steps per call, one after the other, each on its own
# input set, where the sets together are at most CHAINED_BELOW_BYTES. A model's step issues all its
# layers in one call, so one layer's share of the call's host cost is small; a call of a small
# layer alone times the host issuing it. On an H100 under XLA, LeNet's layers took 0.21-0.27 ms
# per call of one step (at batch 256, nearly all of it the host's), and 0.08-0.11 ms per step at
# batch 128 in calls of 16; a timing of single calls let that host noise pick a tiling that made
# the model's step slower.
CHAINED_STEPS = 16
CHAINED_BELOW_BYTES = 64 << 20


def _sync():
    tf.test.experimental.sync_devices()


def chained(one_step, steps_per_call=1, jit_compile=None):
    """A ``tf.function`` of ``one_step(x, w, dy)`` (compiled by XLA where ``jit_compile``).
    ``steps_per_call`` K > 1: it takes K input sets one after the other, (x1, w1, dy1, x2, ...),
    and runs the step on each, every step's ops after the outputs of the step before (as the
    layers of a sequential model follow each other), returning the K steps' outputs in order, so
    that one call's host cost is shared by K steps, as in a model whose step holds several layers.
    Each step has its own inputs: steps on the same tensors would be merged into one. The one
    rule for this timing and the bench's."""
    if steps_per_call == 1:
        return tf.function(one_step, jit_compile=jit_compile)

    @tf.function(jit_compile=jit_compile)
    def steps(*inputs):
        if len(inputs) != 3 * steps_per_call:
            raise ValueError(f"{steps_per_call} steps take {3 * steps_per_call} tensors, got "
                             f"{len(inputs)}")
        outputs, previous = (), ()
        for first in range(0, len(inputs), 3):
            with tf.control_dependencies(previous):
                previous = one_step(*inputs[first:first + 3])
            outputs += previous
        return outputs
    return steps


def _train_step(timed_plan, steps_per_call=1):
    """Forward + both gradients of ``timed_plan`` as a training step runs them, y returned with the
    gradients (as the bench's step returns it): a function drops the ops its outputs do not need,
    and the gradients of the spatial path do not need y, so with y unused its forward convolution
    went untimed, while the FFT path's gradients still read the spectra its forward computes.
    A problem without the input gradient (``Problem.input_gradient``) is timed without it, as
    training runs it; a problem compiled by XLA (``Problem.compiled``) is timed compiled.
    ``steps_per_call``: steps per call, each on its own input set (``chained``)."""
    input_gradient = timed_plan.problem.input_gradient

    def step(x, w, dy):
        with tf.GradientTape() as tape:
            tape.watch([x, w] if input_gradient else [w])
            y = execute.run_plan(timed_plan, x, w)
        if input_gradient:
            dx, dw = tape.gradient(y, [x, w], output_gradients=dy)
            return y, dx, dw
        return y, tape.gradient(y, w, output_gradients=dy)
    return chained(step, steps_per_call, timed_plan.problem.compiled or None)


def _random_inputs(problem, batch, seed):
    """x, w and dy of ``problem`` at ``batch`` images, random normal (w as ``execute.run_plan``
    takes it: ``[kh, kw, Cin / groups, Cout]``)."""
    out_h, out_w = (axis.out for axis in problem.strided_axes())
    if problem.data_format == "NHWC":
        x_shape = (batch, problem.in_h, problem.in_w, problem.in_channels)
        y_shape = (batch, out_h, out_w, problem.out_channels)
    else:
        x_shape = (batch, problem.in_channels, problem.in_h, problem.in_w)
        y_shape = (batch, problem.out_channels, out_h, out_w)
    generator = tf.random.Generator.from_seed(seed)
    x = generator.normal(x_shape, dtype=problem.dtype)
    w = generator.normal((problem.k_h, problem.k_w, problem.in_channels // problem.groups,
                          problem.out_channels), dtype=problem.dtype)
    dy = generator.normal(y_shape, dtype=problem.dtype)
    return x, w, dy


def calls_per_sample(seconds_per_call, sets, target_s, max_calls):
    """Calls in a timed sample: enough to last about ``target_s`` (a single call of a small layer
    would time the host's launch and the sync more than the device's work), at most about
    ``max_calls``, and a multiple of ``sets``, so that a sample rotating over the input sets starts
    on the first and ends on the last, and the next candidate's sample does not begin on the set
    just read. The one rule for this timing and the bench's."""
    calls = min(max(math.ceil(target_s / max(seconds_per_call, 1e-7)), 1), max_calls)
    return sets * math.ceil(calls / sets)


def _input_sets(problem, batch, seed):
    """The input sets a timing reads (seeds ``seed``, ``seed + 1``, ...): ``CHAINED_STEPS`` of
    them where together they are at most ``CHAINED_BELOW_BYTES`` (a small problem, timed that many
    steps per call: ``_steps_per_call``); else ``INPUT_SETS`` where one set is at most
    ``ROTATE_BELOW_BYTES``, else one. In training each step reads a new batch, so the timing must
    not read the inputs the call before left in the L2 cache (60 MB on an H200), as the bench's
    rotation ensures too; a larger set evicts itself before the next call reads it, and more
    copies of it would only take device memory."""
    sets = [_random_inputs(problem, batch, seed)]
    set_bytes = sum(t.shape.num_elements() * t.dtype.size for t in sets[0])
    count = (CHAINED_STEPS if set_bytes * CHAINED_STEPS <= CHAINED_BELOW_BYTES
             else INPUT_SETS if set_bytes <= ROTATE_BELOW_BYTES else 1)
    for i in range(1, count):
        try:
            sets.append(_random_inputs(problem, batch, seed + i))
        except tf.errors.ResourceExhaustedError:
            break                # a device nearly full: time on the sets it holds
    return sets


def _steps_per_call(input_sets):
    """Steps one timed call runs: all the sets one after the other where there are more than
    ``INPUT_SETS`` (a small problem's, ``_input_sets``), else one, the calls rotating over the
    sets."""
    return len(input_sets) if len(input_sets) > INPUT_SETS else 1


def _candidate_sampler(timed_plan, input_sets):
    """Traces and warms up forward + both gradients of ``timed_plan``; returns a function that
    takes one sample: seconds per step, the calls rotating over ``input_sets`` (or each call
    running a step on every set, ``_steps_per_call``)."""
    steps = _steps_per_call(input_sets)
    step = _train_step(timed_plan, steps)
    # What each call reads: one set, or every set flattened (x1, w1, dy1, x2, ...) for chained
    # steps.
    call_inputs = (list(input_sets) if steps == 1
                   else [tuple(t for inputs in input_sets for t in inputs)])
    sets = len(call_inputs)
    for i in range(max(2, sets)):   # tracing, allocation, autotuning of the libraries underneath
        step(*call_inputs[i % sets])
    _sync()
    start = time.perf_counter()
    for inputs in call_inputs:
        step(*inputs)
    _sync()
    calls = calls_per_sample((time.perf_counter() - start) / sets, sets, SAMPLE_S,
                             MAX_CALLS_PER_SAMPLE)

    def sample():
        start = time.perf_counter()
        for call in range(calls):
            step(*call_inputs[call % sets])
        _sync()
        return (time.perf_counter() - start) / (calls * steps)
    return sample


def _time_in_turns(samplers, repeats):
    """Median seconds per call of each sampler, its samples taken in turns with the others' (one
    of each per round), so that a drift of the device's clock or of the host's load falls on
    every candidate alike instead of on the one timed while it lasted. A candidate the allocator
    refuses during a round is dropped."""
    samples = {label: [] for label in samplers}
    for _ in range(repeats):
        for label in list(samples):
            try:
                samples[label].append(samplers[label]())
            except tf.errors.ResourceExhaustedError:
                del samples[label]
    return {label: statistics.median(values) for label, values in samples.items() if values}


def _one_per_tiling(fft_candidates):
    """The first (fastest by the model) candidate of each frame and tiling: memory modes of one
    tiling differ by the transforms the recomputing ones repeat, which the model counts, so only
    the tilings are worth a timing (and keep, the faster mode, is kept where it fits)."""
    seen, chosen = set(), []
    for candidate in fft_candidates:
        if candidate.config.tiles not in seen:
            seen.add(candidate.config.tiles)
            chosen.append(candidate)
    return chosen


def tune_problem(problem, fft_size=None, tile=None, memory_budget=None, algorithm="auto",
                 batch_size=None, candidates=3, repeats=5, seed=0):
    """Times spatial convolution and the FFT configurations of ``problem`` in the best
    ``candidates - 1`` frames and tilings (within the memory budget), records the medians and
    returns the new plan."""
    if tf.inside_function():
        raise _invalid("autotune times eagerly: call it outside tf.function (plans made while "
                       "tracing use the timings it recorded)")
    if not problem.sizes_known:
        raise _invalid("autotune needs the height and width, got %s" % problem.describe())
    planning.check_algorithm(algorithm)
    if problem.no_channels:      # nothing to compute, so nothing to time
        return planning.plan(problem, algorithm, fft_size, tile, memory_budget)
    budget = planning.resolve_budget(memory_budget)
    batch = problem.batch or batch_size or ASSUMED_BATCH
    concrete = dataclasses.replace(problem, batch=batch)
    found = planning.candidates(concrete, algorithm, fft_size, tile)
    within = planning.within_budget(found, budget)
    ffts = _one_per_tiling([c for c in within if c.config is not None])[:max(candidates - 1, 1)]
    chosen = [c for c in within if c.config is None] + ffts
    try:
        input_sets = _input_sets(concrete, batch, seed)   # the same sets for every candidate
    except tf.errors.ResourceExhaustedError:
        logging.getLogger("tf_fftconv").warning(
            "not timing %s: its inputs do not fit in the device's memory now; the cost model "
            "decides", concrete.describe())
        return planning.plan(problem, algorithm, fft_size, tile, memory_budget)
    samplers = {}
    for candidate in chosen:
        timed_plan = Plan(problem=concrete, algorithm="fft" if candidate.config else "spatial",
                          config=candidate.config, source="autotune", requested=algorithm,
                          budget=budget)
        try:
            samplers[candidate.label] = _candidate_sampler(timed_plan, input_sets)
        except tf.errors.ResourceExhaustedError:
            continue             # does not fit on this device now: not a candidate
    timings = {label: seconds * 1e3 for label, seconds in _time_in_turns(samplers, repeats).items()}
    # The timings hold for the batch they were measured at, and for an unknown batch (a traced
    # layer usually does not know it).
    for key_problem in {problem, concrete}:
        planning.record_timings(key_problem, timings)
    return planning.plan(problem, algorithm, fft_size, tile, memory_budget)


def confirm_close_call(problem, memory_budget=None):
    """Times ``problem``'s candidates if the cost model calls its choice close (and nothing has
    timed it yet), eagerly; returns the plan ``algorithm="auto"`` follows for it."""
    made = planning.plan(problem, "auto", None, None, memory_budget)
    if (tf.inside_function() or not problem.sizes_known or not planning.is_close_call(made)
            or not timing_cache.close_call_timing_enabled()):
        return made
    logging.getLogger("tf_fftconv").info(
        "timing the candidates of %s once: the cost model's FFT and spatial estimates are "
        "within %.1fx (TF_FFTCONV_AUTOTUNE=0 leaves the choice to the model)",
        problem.describe(), planning.CLOSE_CALL_FACTOR)
    return tune_problem(problem, memory_budget=memory_budget)


def _layers(model_or_layer):
    if hasattr(model_or_layer, "tuning_arguments"):
        return [model_or_layer]
    found = []
    for layer in getattr(model_or_layer, "layers", []):
        found.extend(_layers(layer))
    return found


def autotune(layer_or_shape, w_shape=None, *, batch_size=None, input_shape=None,
             padding="VALID", data_format="NHWC", dtype="float32", device=None, algorithm="auto",
             fft_size=None, tile=None, memory_budget=None, candidates=3, repeats=5,
             compiled=None):
    """Times the best candidates of one or more convolutions on the device; returns what
    ``tf_fftconv.explain`` says about them afterwards.

    ``autotune(model_or_layer, batch_size=...)``: every ``FFTConv2D`` in a Keras model (or one
    layer), at the input shape it was built for (``input_shape`` overrides a single layer's);
    ``batch_size`` stands for an unknown batch (default ``problem.ASSUMED_BATCH``).
    ``autotune(x_shape, w_shape, padding=..., ...)``: one problem, arguments as ``explain``.
    ``device``: "CPU" or "GPU" (default: where an op would run here).
    ``compiled``: True times each problem inside ``tf.function(jit_compile=True)``, for the plans
    made while XLA compiles it; False eagerly; None (default) as a compiled Keras model will run
    (its ``jit_compile``), else both ways on a device whose costs differ under XLA
    (``cost_model.COMPILED_COSTS``: the GPU) and eagerly elsewhere.
    """
    if w_shape is None:
        layers = _layers(layer_or_shape)
        if not layers:
            raise _invalid("autotune needs an FFTConv2D layer, a model holding some, or an input "
                           "and a weight shape")
        problems = [layer.tuning_arguments(input_shape, device) for layer in layers]
    else:
        problems = [dict(problem=planning.make_problem(layer_or_shape, w_shape, padding,
                                                        data_format, dtype, device),
                         algorithm=algorithm, fft_size=fft_size, tile=tile,
                         memory_budget=memory_budget)]
    if compiled is not None:
        modes = (bool(compiled),)
    elif getattr(layer_or_shape, "compiled", False) and hasattr(layer_or_shape, "jit_compile"):
        modes = (bool(layer_or_shape.jit_compile),)    # a Keras model after compile()
    else:
        modes = None                                    # per problem, by its device
    texts = []
    for arguments in problems:
        if arguments["algorithm"] == "spatial":
            continue
        problem = arguments["problem"]
        scope = tf.device(device if ":" in device else "/%s:0" % device) if device else (
            contextlib.nullcontext())
        for mode in modes or cost_model.timed_modes(problem):
            with scope:
                made = tune_problem(dataclasses.replace(problem, compiled=mode),
                                    arguments["fft_size"], arguments["tile"],
                                    arguments["memory_budget"], arguments["algorithm"],
                                    batch_size, candidates, repeats)
            texts.append(str(made))
    return "\n".join(texts)

