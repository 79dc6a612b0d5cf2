"""Tiled FFT convolution (overlap-save, tf_fftconv/geometry.py) against float64 tf.nn.conv2d:
forward, input gradient and weight gradient, eagerly, in tf.function and under XLA."""

import time

import numpy as np
import pytest
import tensorflow as tf

import tf_fftconv as fc
from conftest import assert_second_order_gradient_as_conv2d, rel_error
from test_conv import check_against_conv2d
from tf_fftconv import execute, geometry, planning


def _plan(x_shape, w_shape, padding, data_format="NHWC", **options):
    problem = planning.make_problem(x_shape, w_shape, padding, data_format, "float32")
    return planning.plan(problem, options.pop("algorithm", "fft"), **options)


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_images_larger_than_the_largest_frame(rng, device, padding, data_format):
    x_shape = (2, 150, 140, 3) if data_format == "NHWC" else (2, 3, 150, 140)
    assert _plan(x_shape, (5, 5, 3, 4), padding, data_format).config.tiles.tiled
    check_against_conv2d(rng, (2, 150, 140, 3, 4, 5, 5), padding, data_format, np.float32, 5e-6)


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_forced_frames_and_tiles_float64(rng, device, padding):
    for _ in range(6):
        k_h, k_w = int(rng.integers(1, 8)), int(rng.integers(1, 8))
        height, width = int(rng.integers(max(k_h, 9), 40)), int(rng.integers(max(k_w, 9), 40))
        case = (int(rng.integers(1, 4)), height, width, int(rng.integers(1, 5)),
                int(rng.integers(1, 5)), k_h, k_w)
        fft_size = int(rng.choice([8, 16]))
        while fft_size < max(k_h, k_w):
            fft_size *= 2
        check_against_conv2d(rng, case, padding, "NHWC", np.float64, 1e-11, fft_size=fft_size)
        tile = int(rng.integers(1, 9))
        check_against_conv2d(rng, case, padding, "NCHW", np.float64, 1e-11, tile=tile)
        check_against_conv2d(rng, case, padding, "NHWC", np.float64, 1e-11, tile=tile,
                             memory_budget=1)   # nothing fits: recompute in the most pieces


@pytest.mark.parametrize("memory", ["keep", "recompute"])
def test_tiled_gradients_numerically(rng, memory):
    x = tf.constant(rng.standard_normal((2, 11, 9, 2)))
    w = tf.constant(rng.standard_normal((3, 4, 2, 3)))
    chosen = _plan(x.shape, w.shape, "SAME", fft_size=8,
                   memory_budget=None if memory == "keep" else 1)
    assert chosen.config.tiles.tiled and chosen.config.memory == memory
    theoretical, numerical = tf.test.compute_gradient(
        lambda a, b: fc.fft_conv2d(a, b, "SAME", fft_size=8, algorithm="fft",
                                   memory_budget=None if memory == "keep" else 1), [x, w])
    for t, n in zip(theoretical, numerical):
        assert np.max(np.abs(t - n)) < 1e-7


def test_second_order_gradient_through_tiles(rng):
    x = tf.constant(rng.standard_normal((1, 12, 10, 2)))
    w = tf.constant(rng.standard_normal((3, 3, 2, 2)))
    assert_second_order_gradient_as_conv2d(
        lambda a, b: fc.fft_conv2d(a, b, "SAME", fft_size=8, algorithm="fft"), x, w)


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("memory_budget", [None, 1])
def test_tiled_under_xla(rng, data_format, memory_budget):
    shape = (3, 40, 37, 2) if data_format == "NHWC" else (3, 2, 40, 37)
    x = tf.constant(rng.standard_normal(shape).astype(np.float32))
    w = tf.constant(rng.standard_normal((5, 5, 2, 3)).astype(np.float32))
    options = dict(padding="SAME", data_format=data_format, fft_size=16, algorithm="fft",
                   memory_budget=memory_budget)

    def loss_and_grads(x, w):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = fc.fft_conv2d(x, w, **options)
            loss = tf.reduce_sum(y * y)
        return (y,) + tuple(tape.gradient(loss, [x, w]))

    compiled = tf.function(loss_and_grads, jit_compile=True)
    got = compiled(x, w)
    eager = loss_and_grads(x, w)
    for a, b in zip(got, eager):
        assert rel_error(a.numpy(), b.numpy()) <= 1e-6
    x_nhwc = x if data_format == "NHWC" else tf.transpose(x, [0, 2, 3, 1])
    y_nhwc = got[0] if data_format == "NHWC" else tf.transpose(got[0], [0, 2, 3, 1])
    assert rel_error(y_nhwc.numpy(), tf.nn.conv2d(x_nhwc, w, 1, "SAME").numpy()) <= 1e-5
    hlo = compiled.experimental_get_compiler_ir(x, w)(stage="hlo")
    assert 'custom_call_target="tf_fftconv_rfft2d"' in hlo and "convolution(" not in hlo


def test_dynamic_batch_in_tf_function(rng):
    w = tf.constant(rng.standard_normal((3, 3, 2, 4)))
    for budget in (None, 1):
        fn = tf.function(
            lambda x, budget=budget: fc.fft_conv2d(x, w, "SAME", tile=6, algorithm="fft",
                                                   memory_budget=budget),
            input_signature=[tf.TensorSpec([None, 20, 17, 2], tf.float64)])
        for batch in (1, 3, 0):
            x = rng.standard_normal((batch, 20, 17, 2))
            assert fn(x).shape == (batch, 20, 17, 4)
            if batch:
                assert rel_error(fn(x).numpy(), tf.nn.conv2d(x, w, 1, "SAME").numpy()) <= 1e-12


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_cut_tiles_against_numpy(rng, data_format):
    tiles = geometry.tile_geometry(13, 11, 4, 3, "SAME", 8)
    assert (tiles.tiles_h, tiles.tiles_w, tiles.tile_h, tiles.tile_w) == (3, 2, 5, 6)
    x = rng.standard_normal((2, 13, 11, 3))
    # The padded input of the tiles: SAME's padding before, zeros after.
    padded = np.zeros((2, 3 * 5 + 3, 2 * 6 + 2, 3))
    padded[:, 1:14, 1:12] = x
    expected = np.stack([padded[b, 5 * i:5 * i + 8, 6 * j:6 * j + 8]
                         for b in range(2) for i in range(3) for j in range(2)])
    to = (lambda a: a) if data_format == "NHWC" else (lambda a: np.transpose(a, (0, 3, 1, 2)))
    got = execute.cut_tiles(tf.constant(to(x)), tiles, data_format).numpy()
    np.testing.assert_array_equal(got, to(expected))
    # join_tiles puts tiles side by side and crops: with k = 1 the tiles are the image.
    ones = geometry.tile_geometry(13, 11, 1, 1, "VALID", 4)
    y = tf.constant(to(x))
    np.testing.assert_array_equal(
        execute.join_tiles(execute.cut_tiles(y, ones, data_format), ones, data_format).numpy(),
        to(x))


def test_one_frame_beats_tiles_where_it_holds_the_image(rng):
    """64x64 SAME with k = 3 needs S = 80 in one frame (128 with powers of two only). Tiles of 8
    or 16 move fewer bytes but run more ops and TensorFlow's copies to cut and join them. On the
    H200 the tiled path took 3.017 ms (the run at 9ae4f9b, 64 images, 64 channels) where one 80
    frame took 1.887 ms (at ffb53bd); on 2 CPU cores 23.4 ms in 16 tiles against 7.6 ms in the 80
    frame (at 4eef031). The model ranks them so on both. Those runs are in git at 856306e."""
    for device in ("GPU", "CPU"):
        problem = planning.make_problem((8, 64, 64, 16), (3, 3, 16, 16), "SAME", device=device)
        found = planning.candidates(problem, "fft")
        single = next(c for c in found if not c.config.tiles.tiled and c.config.memory == "keep")
        assert single.config.tiles.fft_size == 80
        forced = planning.candidates(problem, "fft", fft_size=128)[0]   # the 128 frame
        assert found[0].estimate.time_s < 0.5 * forced.estimate.time_s, device
        tiled16 = planning.candidates(problem, "fft", fft_size=16)[0]
        assert tiled16.config.tiles.tiled
        assert found[0] is single or found[0].config.tiles == single.config.tiles, device
        assert tiled16.estimate.time_s > single.estimate.time_s, device
        assert planning.plan(problem).algorithm == "spatial", device
    check_against_conv2d(rng, (8, 64, 64, 16, 16, 3, 3), "SAME", "NHWC", np.float32, 5e-6)


def test_224_images_64_channels_k7(rng):
    """The large case of issue 10, batch 1: tiled, and correct in value and gradients."""
    start = time.perf_counter()
    chosen = _plan((1, 224, 224, 64), (7, 7, 64, 64), "SAME")
    assert chosen.config.tiles.tiled
    check_against_conv2d(rng, (1, 224, 224, 64, 64, 7, 7), "SAME", "NHWC", np.float32, 5e-6)
    print("224x224 64->64 k7: %.1f s" % (time.perf_counter() - start))
