"""fft_conv2d with strides, dilations and groups, against a float64 NumPy reference written from
the definition (tests/strided_reference.py), gradients included; the argument checks; FFTConv2D
with them.

The combinations (stride 1-4, dilation 1-8, groups 1, 2, 4, both paddings and data formats, the
argument forms) are drawn afresh each run (the seed is printed), a fixed number per test.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import strided_reference as reference
import tf_fftconv as fc
from tf_fftconv import planning

TOLERANCE = {tf.float32: 2e-5, tf.float64: 1e-11, tf.float16: 1e-2}


def _nchw(t):
    return np.transpose(t, [0, 3, 1, 2])


def _nhwc(t):
    return np.transpose(t, [0, 2, 3, 1])


def _max_relative(got, want):
    return np.max(np.abs(np.asarray(got, np.float64) - want)) / np.max(np.abs(want))


def check_case(case, rng, conv, dtype=tf.float32, jit=False, tolerance=None):
    """``conv(x, w)`` (NHWC or NCHW per ``case``) and its gradients against the reference, to
    ``tolerance`` (default: the dtype's) of each result's scale."""
    x = rng.standard_normal(case["x_shape"])
    w = rng.standard_normal(case["w_shape"])
    k_h, k_w, _, multiplier = case["w_shape"]
    depthwise = case.get("depthwise", False)
    out_channels = case["x_shape"][3] * multiplier if depthwise else multiplier
    dy = rng.standard_normal(reference.output_shape(
        case["x_shape"], k_h, k_w, out_channels, case["strides"], case["padding"],
        case["dilations"]))
    def expected(x, w, dy):
        return reference.of_case(case, x, w, dy)

    want = expected(x, w, dy)
    # The scale of each result's rounding: the same sums of the magnitudes, and at least one
    # term's (where every window reads padding alone the result is 0 exactly, and the FFT
    # path's rounding comes from the rest of the frame).
    largest = {name: np.max(np.abs(t), initial=0.0) for name, t in (("x", x), ("w", w),
                                                                      ("dy", dy))}
    scales = [max(np.max(m, initial=0.0), largest[a] * largest[b]) for m, (a, b) in zip(
        expected(np.abs(x), np.abs(w), np.abs(dy)), (("x", "w"), ("dy", "w"), ("x", "dy")))]
    nchw = case["data_format"] == "NCHW"
    x_in, dy_in = (_nchw(x), _nchw(dy)) if nchw else (x, dy)

    def step(x, w, dy):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = conv(x, w)
        return (y,) + tuple(tape.gradient(y, [x, w], output_gradients=dy))

    if jit:
        step = tf.function(step, jit_compile=True)
    y, dx, dw = (t.numpy() for t in step(*(tf.constant(t, dtype) for t in (x_in, w, dy_in))))
    if nchw:
        y, dx = _nhwc(y), _nhwc(dx)
    for name, got, exact, scale in zip(("y", "dx", "dw"), (y, dx, dw), want, scales):
        assert got.shape == exact.shape, (name, case)
        error = np.max(np.abs(got.astype(np.float64) - exact), initial=0.0) / max(scale, 1e-30)
        assert error < (tolerance or TOLERANCE[dtype]), (name, error, case)


# The library's refusal of algorithm="spatial" where TensorFlow refuses the spatial path
# (``planning.spatial_refusal``).
SPATIAL_REFUSED = r'algorithm="spatial" cannot compute .*Use algorithm="fft" or "auto"'


def spatial_refusal(case):
    """``planning.spatial_refusal`` of ``case`` on the current device: what TensorFlow refuses in
    its spatial path here, or None."""
    x_shape = case["x_shape"]
    if case["data_format"] == "NCHW":
        x_shape = (x_shape[0], x_shape[3], x_shape[1], x_shape[2])
    return planning.spatial_refusal(planning.make_problem(
        x_shape, case["w_shape"], case["padding"], case["data_format"], strides=case["strides"],
        dilations=case["dilations"], depthwise=case.get("depthwise", False)))


def spatial_case(draw, spatial_conv):
    """A case from ``draw()`` whose spatial path TensorFlow computes and differentiates here. Each
    drawn before it that TensorFlow refuses is checked to be refused by the library at the call:
    ``spatial_conv(case)`` (a function of x and w with algorithm="spatial") raises."""
    while True:
        case = draw()
        if spatial_refusal(case) is None:
            return case
        x_shape = case["x_shape"]
        if case["data_format"] == "NCHW":
            x_shape = (x_shape[0], x_shape[3], x_shape[1], x_shape[2])
        with pytest.raises(tf.errors.InvalidArgumentError, match=SPATIAL_REFUSED):
            spatial_conv(case)(tf.zeros(x_shape), tf.zeros(case["w_shape"]))


def _fft_conv2d(case, rng, **options):
    strides = reference.argument_form(rng, case["strides"], case["data_format"])
    dilations = reference.argument_form(rng, case["dilations"], case["data_format"])
    groups = case["groups"] if rng.random() < 0.5 else None    # explicit or inferred
    return lambda x, w: fc.fft_conv2d(x, w, case["padding"], case["data_format"],
                                      strides=strides, dilations=dilations, groups=groups,
                                      **options)


def test_fft_path_matches_reference(rng, device):
    for _ in range(24):
        case = reference.random_case(rng)
        check_case(case, rng, _fft_conv2d(case, rng, algorithm="fft"))


def test_fft_path_float64_and_half(rng, device):
    for dtype in (tf.float64, tf.float16, tf.float64, tf.float16):
        case = reference.random_case(rng)
        check_case(case, rng, _fft_conv2d(case, rng, algorithm="fft"), dtype)


def test_grouped_half_spectra(rng, device):
    """float16 and bfloat16 spectra ([F, B, C, 2] pairs) moved to and from group-major order: the
    half-precision products, forced (the CPU's cost model keeps float32 spectra)."""
    for dtype, tolerance in ((tf.float16, 1e-2), (tf.bfloat16, 6e-2)):
        case = dict(reference.random_case(rng), groups=2, x_shape=(2, 13, 11, 4),
                    w_shape=(3, 3, 2, 6), padding="SAME")
        conv = lambda x, w: fc.fft_conv2d(  # noqa: E731
            x, w, case["padding"], case["data_format"], strides=case["strides"],
            dilations=case["dilations"], algorithm="fft", half_spectra=True)
        check_case(case, rng, conv, dtype, tolerance=tolerance)
        _, made = fc.conv.conv2d_with_plan(
            tf.zeros(case["x_shape"] if case["data_format"] == "NHWC" else (2, 4, 13, 11),
                     dtype), tf.zeros(case["w_shape"], dtype), case["padding"],
            case["data_format"], algorithm="fft", half_spectra=True, strides=case["strides"],
            dilations=case["dilations"])
        assert made.config.spectra == "native"   # the half-precision spectra, not float32 ones


def test_spatial_and_auto_match_reference(rng, device):
    """Spatial convolution on cases TensorFlow computes here (those it refuses, refused by the
    library: ``spatial_case``); auto on any case."""
    for algorithm in ("spatial", "auto") * 3:
        case = reference.random_case(rng) if algorithm == "auto" else spatial_case(
            lambda: reference.random_case(rng),
            lambda case: _fft_conv2d(case, rng, algorithm="spatial"))
        check_case(case, rng, _fft_conv2d(case, rng, algorithm=algorithm))


def test_under_xla(rng, device):
    for algorithm in ("fft", "fft", "fft", "auto"):
        case = reference.random_case(rng)
        check_case(case, rng, _fft_conv2d(case, rng, algorithm=algorithm), jit=True)


def test_tiled_and_recomputed(rng, device):
    """A forced small frame tiles the stride-1 output; a memory budget of one byte recomputes
    the spectra in pieces: both with strides, dilations and groups."""
    case = dict(x_shape=(3, 30, 27, 4), w_shape=(3, 2, 2, 6), strides=(2, 3), dilations=(3, 2),
                padding="SAME", groups=2, data_format="NHWC")
    check_case(case, rng, lambda x, w: fc.fft_conv2d(
        x, w, "SAME", strides=(2, 3), dilations=(3, 2), algorithm="fft", fft_size=16))
    check_case(case, rng, lambda x, w: fc.fft_conv2d(
        x, w, "SAME", strides=(2, 3), dilations=(3, 2), algorithm="fft", memory_budget=1))


def test_sizes_unknown_while_tracing(rng):
    """Height and width unknown while tracing: the frame and the kept outputs are computed in the
    graph."""
    x = rng.standard_normal((2, 17, 14, 4))
    w = rng.standard_normal((3, 3, 2, 4))
    dy = rng.standard_normal(reference.output_shape(x.shape, 3, 3, 4, (3, 2), "SAME", (2, 2)))
    want = reference.conv2d(x, w, dy, (3, 2), "SAME", (2, 2), 2)

    @tf.function(input_signature=[tf.TensorSpec([None, None, None, 4], tf.float32),
                                  tf.TensorSpec([3, 3, 2, 4], tf.float32),
                                  tf.TensorSpec([None, None, None, 4], tf.float32)])
    def step(x, w, dy):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = fc.fft_conv2d(x, w, "SAME", strides=[3, 2], dilations=2, algorithm="fft")
        return (y,) + tuple(tape.gradient(y, [x, w], output_gradients=dy))

    for got, expected in zip(step(*(tf.constant(t, tf.float32) for t in (x, w, dy))), want):
        assert _max_relative(got.numpy(), expected) < 2e-5


@pytest.mark.parametrize("arguments, message", [
    (dict(strides=0), "strides must be >= 1, got 0"),
    (dict(strides=[1, 2, 3]), r"strides must be an integer or a list of 1, 2 or 4 integers, "
                              r"got \[1, 2, 3\]"),
    (dict(strides=1.5), "strides must be an integer or a list of 1, 2 or 4 integers, got 1.5"),
    (dict(strides=[2, 2, 2, 1]), r"strides must be 1 in the batch and channel dimensions "
                                 r"\(NHWC\), got \[2, 2, 2, 1\]"),
    (dict(strides=[1, 2, 2, 1], data_format="NCHW"),
     r"strides must be 1 in the batch and channel dimensions \(NCHW\), got \[1, 2, 2, 1\]"),
    (dict(dilations=[2, 0]), r"dilations must be >= 1, got \[2, 0\]"),
    (dict(dilations=True), "dilations must be an integer or a list of 1, 2 or 4 integers, "
                           "got True"),
    (dict(groups=0), "groups must be None or a positive integer, got 0"),
    (dict(groups="2"), "groups must be None or a positive integer, got '2'"),
    (dict(groups=4), "groups 4 does not fit x's 4 input channels and w"),
    (dict(w_shape=(3, 3, 3, 6)), "x has 4 input channels but w is"),
    (dict(w_shape=(3, 3, 1, 6)), "make 4 groups, which must divide w's 6 output channels"),
    (dict(dilations=5, padding="VALID"), "with VALID padding the kernel"),
])
def test_invalid_arguments_are_named(arguments, message):
    arguments = dict(arguments)
    w_shape = arguments.pop("w_shape", (3, 3, 2, 6))
    x = tf.zeros([1, 4, 9, 9] if arguments.get("data_format") == "NCHW" else [1, 9, 9, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        fc.fft_conv2d(x, tf.zeros(w_shape), **arguments)


def test_explain_says_how_each_option_is_computed():
    text = fc.explain([8, 32, 32, 16], [5, 5, 4, 32], strides=2, dilations=3, padding="SAME",
                      algorithm="fft")
    assert "strides 2x2, dilations 3x3, groups 4" in text
    assert "the 13x13 dilated kernel (zeros between the 5x5 taps)" in text
    assert "computes the 32x32 stride-1 outputs and keeps 16x16 of them" in text
    assert "groups 4: the per-bin product is block-diagonal, one 4 x 8 matmul per group" in text


def test_cost_model_counts_groups_strides_and_dilations():
    """Groups divide both paths' work; strides shrink spatial convolution's work but not the FFT
    path's stride-1 one; dilation grows the FFT path's frame but not spatial's taps."""
    from tf_fftconv import planning  # noqa: PLC0415
    from tf_fftconv.problem import Problem  # noqa: PLC0415

    def estimates(**options):
        problem = planning.make_problem([32, 64, 64, 64], options.pop("w", [7, 7, 64, 64]),
                                        "SAME", device="GPU", **options)
        made = planning.plan(problem, "auto")
        spatial = made.candidate("spatial").estimate
        fft = next(c for c in made.candidates if c.config is not None).estimate
        return spatial, fft, made

    dense_spatial, dense_fft, _ = estimates()
    grouped_spatial, grouped_fft, _ = estimates(w=[7, 7, 16, 64])
    assert grouped_spatial.flops == pytest.approx(dense_spatial.flops / 4)
    assert grouped_fft.flops < dense_fft.flops
    strided_spatial, strided_fft, _ = estimates(strides=2)
    assert strided_spatial.flops == pytest.approx(dense_spatial.flops / 4)
    assert strided_fft.time_s >= dense_fft.time_s
    dilated_spatial, dilated_fft, made = estimates(dilations=4, w=[3, 3, 64, 64])
    plain_spatial, _, _ = estimates(w=[3, 3, 64, 64])
    assert dilated_spatial.flops == pytest.approx(plain_spatial.flops)
    assert made.candidates and all(
        c.config.tiles.k_h == 9 for c in made.candidates if c.config is not None)
    assert isinstance(made.problem, Problem)


@pytest.mark.parametrize("options", [dict(strides=2), dict(strides=(3, 1), padding="valid"),
                                     dict(dilation_rate=(2, 3)), dict(groups=2),
                                     dict(dilation_rate=2, groups=4, padding="same")])
def test_fft_conv2d_layer_options(rng, options):
    """FFTConv2D with Conv2D's strides, dilation_rate and groups: the same outputs and weight
    gradients as Conv2D with the same weights, moved both ways with set_weights."""
    x = tf.constant(rng.standard_normal((2, 19, 17, 8)), tf.float32)
    ours = fc.FFTConv2D(8, 3, algorithm="fft", **options)
    theirs = keras.layers.Conv2D(8, 3, **options)
    check_drop_in(rng, ours, theirs, x)


def check_drop_in(rng, ours, theirs, x, theirs_call=None):
    """Fresh weights moved from Keras' layer to ours, then others from ours to Keras' (with
    set_weights, unchanged): each time the same outputs and kernel gradients; ours' config
    round-trips. ``theirs_call``: how to call Keras' layer (default: the layer; one built
    already keeps its build)."""
    theirs_call = theirs_call or theirs
    for layer in (ours, theirs):
        if not layer.built:
            layer.build(x.shape)
    for source, target in ((theirs, ours), (ours, theirs)):
        source.set_weights([rng.standard_normal(v.shape) for v in source.get_weights()])
        target.set_weights(source.get_weights())
        with tf.GradientTape(persistent=True) as tape:
            y_ours, y_theirs = ours(x), theirs_call(x)
        np.testing.assert_allclose(y_ours, y_theirs, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(tape.gradient(y_ours, ours.kernel),
                                   tape.gradient(y_theirs, theirs.kernel), rtol=1e-4, atol=1e-3)
    restored = type(ours).from_config(ours.get_config())
    assert restored.get_config() == ours.get_config()


def test_fft_conv2d_layer_refuses_what_conv2d_refuses():
    for options in (dict(strides=2, dilation_rate=2), dict(groups=3)):
        with pytest.raises(ValueError):
            keras.layers.Conv2D(6, 3, **options).build((1, 8, 8, 4))
        with pytest.raises(ValueError):
            fc.FFTConv2D(6, 3, **options).build((1, 8, 8, 4))
