"""Smoke test of the benchmark harness on the CPU: it runs, its JSON file has the documented
schema, and it writes files only where it is told to.

Speed is measured by `python -m tf_fftconv.bench`, not asserted here.
"""

import functools
import json
import math
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import strided_reference
from tf_fftconv import execute
from tf_fftconv import planning
from tf_fftconv import timing_cache
from tf_fftconv.conv import fft_conv2d
from tf_fftconv.geometry import conv_geometry
from tf_fftconv.experiments import environment
from tf_fftconv.experiments.bench import cli, measure
from tf_fftconv.experiments.bench import report as report_module

REPO = Path(__file__).resolve().parent.parent
TINY_CASES = "1:2:3:8:3,1:2:3:8:5,1:1:2:6:3:same"
TIMING_KEYS = {"median_ms", "min_ms", "max_ms", "mean_ms", "stdev_ms", "spread_pct",
               "calls_per_sample", "samples_ms", "dispatch_ms"}
ENVIRONMENT_KEYS = {"device", "device_kind", "description", "keras_version", "gpu_name",
                    "compute_capability", "cpu_model",
                    "tf_version", "is_cuda_build", "cuda_version", "cudnn_version", "tf32_enabled",
                    "git_commit", "fft_conv2d_available", "fft_conv2d_unavailable_reason"}


def positive(value):
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def check_report(report, cases, modes, repeats):
    """The schema of docs/benchmarking.md; every timing a positive number."""
    assert report["schema"] == cli.SCHEMA
    assert report["finished"] is True
    env = report["environment"]
    assert ENVIRONMENT_KEYS <= set(env), ENVIRONMENT_KEYS - set(env)
    assert env["tf_version"] == tf.__version__
    assert isinstance(env["tf32_enabled"], bool)
    assert isinstance(env["git_commit"], str) and env["git_commit"]
    settings = report["settings"]
    assert settings["impls"] == list(measure.DEFAULT_IMPLS)
    assert settings["modes"] == modes
    assert settings["repeats"] == repeats
    assert settings["cases"] == [case.spec for case in measure.parse_cases(cases)]

    results = report["results"]
    assert len(results) == len(settings["cases"]) * len(modes)
    for record in results:
        where = f"{record['case']['name']} {record['mode']}"
        assert record["mode"] in modes
        assert record["samples_interleaved"] is True
        assert positive(record["spatial_gflop"])
        for impl in ("conv2d", "signal"):  # the two peers always run
            timing = record["timings"][impl]
            assert set(timing) == TIMING_KEYS, where
            assert len(timing["samples_ms"]) == repeats, where
            assert all(positive(t) for t in timing["samples_ms"]), where
            assert all(positive(timing[key]) for key in ("median_ms", "min_ms", "max_ms")), where
            assert timing["min_ms"] <= timing["median_ms"] <= timing["max_ms"], where
        if env["fft_conv2d_available"]:
            assert positive(record["timings"]["fft"]["median_ms"]), where
            assert positive(record["timings"]["auto"]["median_ms"]), where
            assert positive(record["ratios"]["fft/conv2d"]), where
            best = min(record["timings"][impl]["median_ms"] for impl in ("conv2d", "fft"))
            assert record["ratios"]["auto/best"] == pytest.approx(
                record["timings"]["auto"]["median_ms"] / best), where
            assert record["auto_plan"]["label"] == "spatial" or (
                record["auto_plan"]["label"].startswith("fft S=")), where
            assert record["auto_plan"]["compiled"] is False, where     # eager: no --xla
        else:  # the columns are skipped with the reason, not crashed on
            for impl in ("fft", "auto"):
                assert impl not in record["timings"], where
                assert record["skipped"][impl] == env["fft_conv2d_unavailable_reason"], where
            assert record["ratios"]["fft/conv2d"] is None, where
        # Peak memory where TensorFlow tracks it (GPUs), None elsewhere.
        for impl, peak in record["peak_memory_bytes"].items():
            assert (peak is None) == (env["device_kind"] != "GPU"), (where, impl)
        assert record["fastest"] in record["timings"], where
        assert record["max_rel_diff_against"] == "conv2d", where
        # float32 results agree with conv2d (more loosely where TF32 rounds the GPU's matmuls)
        tolerance = 1e-2 if env["tf32_enabled"] and env["device_kind"] == "GPU" else 1e-3
        for impl, diffs in record["max_rel_diff"].items():
            assert set(diffs) == ({"y"} if record["mode"] == "forward" else {"y", "dx", "dw"})
            assert all(isinstance(d, float) and d < tolerance
                       for d in diffs.values()), (where, impl)


def run_main_with_tf32_off(cases, json_path, *extra):
    """cli.main on the CPU, two samples of two calls per case and mode, TF32 off (restored after);
    returns its JSON report, checked against the schema."""
    argv = ["--cases", cases, "--repeats", "2", "--warmup", "3", "--iters", "2",
            "--device", "cpu", "--tf32", "off", "--no-progress", "--json", str(json_path), *extra]
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    try:
        assert cli.main(argv) == 0
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(tf32)
    report = json.loads(json_path.read_text())
    check_report(report, cases, ["forward", "train"], repeats=2)
    return report


def test_main_in_process(tmp_path, capsys):
    json_path, plot_path = tmp_path / "bench.json", tmp_path / "plot.png"
    report = run_main_with_tf32_off(TINY_CASES, json_path, "--plot", str(plot_path))
    assert report["environment"]["tf32_enabled"] is False
    assert report["environment"]["device"] == "/CPU:0"
    out = capsys.readouterr().out
    assert "fft/conv2d" in out and "fastest" in out and str(json_path) in out
    assert "the samples of a case and mode taken in turns" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not plot_path.exists()
    else:
        assert plot_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_xla_mode_and_model_steps(tmp_path, capsys):
    json_path = tmp_path / "bench.json"
    argv = ["--cases", "1:2:3:8:3", "--modes", "train", "--repeats", "2", "--warmup", "3",
            "--iters", "1", "--device", "cpu", "--no-progress", "--xla", "--model", "tiny",
            "--json", str(json_path)]
    assert cli.main(argv) == 0
    report = json.loads(json_path.read_text())
    assert report["settings"]["xla"] is True and report["settings"]["model"] == "tiny"
    assert set(report["results"][0]["timings"]) == {"conv2d", "signal", "fft", "auto"}
    assert max(report["results"][0]["max_rel_diff"]["fft"].values()) < 1e-4
    assert max(report["results"][0]["max_rel_diff"]["auto"].values()) < 1e-4
    assert report["results"][0]["auto_plan"]["compiled"] is True   # planned for XLA
    (step,) = report["model_steps"]
    assert set(step["timings"]) == {"conv2d", "fft", "auto"}
    assert step["compiled_with_xla"] == {"conv2d": True, "fft": True, "auto": True}
    assert positive(step["ratio_fft_conv2d"]) and positive(step["ratio_auto_conv2d"])
    out = capsys.readouterr().out
    assert "every step under XLA" in out and "FFTConv2D fft / Conv2D" in out
    assert "FFTConv2D auto / Conv2D" in out


def test_a_run_cut_short_keeps_the_cases_it_finished(tmp_path, monkeypatch):
    """With --json the file is written after every (case, mode): a run stopped during its second
    case (a time limit, an interrupt) leaves the first one's timings, marked unfinished, and no
    file half written."""
    real_run_case, started = measure.run_case, []

    def run_case(case, *args, **kwargs):
        started.append(case.spec)
        if len(started) == 2:
            raise KeyboardInterrupt
        return real_run_case(case, *args, **kwargs)
    monkeypatch.setattr(measure, "run_case", run_case)
    json_path = tmp_path / "bench.json"
    with pytest.raises(KeyboardInterrupt):
        cli.main(["--cases", "2:3:4:12:5:same,2:3:4:12:3:valid", "--modes", "train", "--impl",
                  "conv2d,fft", "--repeats", "2", "--warmup", "3", "--iters", "1", "--device",
                  "cpu", "--no-progress", "--json", str(json_path)])
    report = json.loads(json_path.read_text())
    assert report["finished"] is False
    assert [record["case"]["spec"] for record in report["results"]] == ["2:3:4:12:5:same"]
    assert report["results"][0]["timings"]["fft"]["median_ms"] > 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bench.json"]


def test_a_difference_to_conv2d_is_measured_against_float64(tmp_path, monkeypatch, capsys):
    """Where an implementation differs from conv2d by more than the note's threshold, both are
    compared with conv2d in float64 on the same inputs, so the note says which side is off."""
    monkeypatch.setattr(measure, "DIFF_NOTE_THRESHOLD", 0.0)
    monkeypatch.setattr(report_module, "DIFF_NOTE_THRESHOLD", 0.0)
    json_path = tmp_path / "bench.json"
    assert cli.main(["--cases", "2:3:4:12:5:same", "--modes", "train", "--impl", "conv2d,fft",
                     "--repeats", "2", "--warmup", "3", "--iters", "1", "--device", "cpu",
                     "--no-progress", "--json", str(json_path)]) == 0
    (record,) = json.loads(json_path.read_text())["results"]
    against64 = record["max_rel_diff_float64"]
    assert set(against64) == {"conv2d", "fft"}
    for impl in ("conv2d", "fft"):
        assert set(against64[impl]) == {"y", "dx", "dw"}
        assert all(0 <= value < 1e-5 for value in against64[impl].values()), impl
    out = capsys.readouterr().out
    assert "fft differs from conv2d by" in out and "against conv2d in float64: conv2d " in out


def test_writes_no_file_unless_told(tmp_path, monkeypatch, capsys):
    results = REPO / "benchmarks" / "results"
    before = sorted(results.rglob("*")) if results.is_dir() else []
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--cases", "1:1:1:4:3", "--modes", "forward", "--impl", "conv2d",
                     "--repeats", "1", "--warmup", "3", "--iters", "1", "--device", "cpu",
                     "--no-progress"]) == 0
    assert "1x1->1 4x4 k3 VALID" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
    assert (sorted(results.rglob("*")) if results.is_dir() else []) == before


def test_cli_quick(tmp_path):
    json_path = tmp_path / "quick.json"
    command = [sys.executable, "-m", "tf_fftconv.bench", "--quick", "--cases", "1:2:2:6:3",
               "--modes", "train", "--json", str(json_path)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "1x2->2 6x6 k3 VALID" in done.stdout
    check_report(json.loads(json_path.read_text()), "1:2:2:6:3", ["train"], repeats=3)


def test_parse_cases():
    assert measure.parse_cases("mathieu") == [
        measure.Case(128, 96, 256, 32, k, "VALID") for k in (3, 5, 7, 9, 11, 13)]
    assert len(measure.parse_cases("all")) == 9
    assert [case.spec for case in measure.parse_cases("cpu")] == [
        "16:32:64:32:7:valid", "16:32:64:32:13:valid", "64:1:6:32:5:valid", "64:6:16:14:5:valid"]
    assert measure.parse_cases("lenet,8:3:16:32:5:SAME,lenet") == measure.PRESETS["lenet"] + [
        measure.Case(8, 3, 16, 32, 5, "SAME")]
    case = measure.parse_cases("64:64:64:64:3:same")[0]
    assert (case.out_size, case.spec, case.name) == (64, "64:64:64:64:3:same",
                                                       "64x64->64 64x64 k3 SAME")
    assert case.spatial_gflop("train") == pytest.approx(3 * case.spatial_gflop("forward"))
    grid = measure.parse_cases("grid")
    assert 24 <= len(grid) <= 48
    core = [c for c in grid if c not in measure.PRESETS["issue10"]]  # these have batch 8 too
    assert {c.padding for c in core} == {"VALID", "SAME"}
    for field, low, high in (("batch", 1, 256), ("in_channels", 1, 512), ("size", 8, 256),
                             ("kernel", 1, 31)):
        values = [getattr(c, field) for c in core]
        assert min(values) == low and max(values) == high, field
    assert max(c.out_channels for c in grid) == 512
    for named in ("128:96:256:32:7:same", "64:64:64:64:3:same", "8:64:64:224:7:same"):
        assert measure.parse_cases(named)[0] in grid
    for bad in ("", "nope", "1:2:3:4", "1:2:3:4:5:full", "1:2:3:4:0", "1:1:1:3:5:valid"):
        with pytest.raises(ValueError):
            measure.parse_cases(bad)


def test_parse_strided_grouped_and_depthwise_cases():
    case = measure.parse_cases("64:128:128:56:31:same:dw")[0]
    assert case == measure.Case(64, 128, 128, 56, 31, "SAME", depthwise=True)
    assert case.name == "64x128->128 56x56 k31 SAME depthwise"
    assert (case.w_shape, case.group_count, case.out_size) == ((31, 31, 128, 1), 128, 56)
    # 2 x B x C x Ho x Wo x k^2: one input channel per output channel.
    assert case.spatial_gflop("forward") == pytest.approx(2 * 64 * 128 * 56 ** 2 * 31 ** 2 / 1e9)
    case = measure.parse_cases("32:64:64:32:9:valid:s2:d2")[0]
    # A dilated 9-tap kernel spans 17 pixels: 16 VALID outputs, every second kept.
    assert (case.stride, case.dilation, case.dilated_kernel, case.out_size) == (2, 2, 17, 8)
    case = measure.parse_cases("32:128:64:28:7:same:s3:g4")[0]
    assert (case.w_shape, case.out_size) == ((7, 7, 32, 64), 10)
    for preset in ("depthwise", "strided"):
        for case in measure.PRESETS[preset]:
            assert measure.parse_cases(case.spec) == [case]
            assert not case.plain
    assert {c.kernel for c in measure.PRESETS["depthwise"]} == {31, 27, 13, 7, 51}
    for bad in ("1:2:4:8:3:same:dw:g2", "2:4:6:8:3:same:dw", "1:3:4:8:3:same:g2",
                "1:2:2:8:3:same:s0", "1:1:1:8:5:valid:d2", "1:2:2:8:3:same:x2"):
        with pytest.raises(ValueError):
            measure.parse_cases(bad)


@pytest.mark.parametrize("spec", ["2:4:8:12:5:same:dw", "2:4:8:12:3:same:s2:d2:g2",
                                  "2:3:3:13:3:valid:s3:dw"])
def test_strided_grouped_and_depthwise_cases_run(spec):
    """TensorFlow's op (tf.nn.depthwise_conv2d for a depthwise case) and the FFT path compute the
    same layer; the tf.signal peer, which has stride 1 only, is skipped with the reason. Where
    TensorFlow's CPU kernels refuse the layer's gradients (``planning.spatial_refusal``: no
    oneDNN), its op is skipped with TensorFlow's error, and the FFT path's step is held to the
    float64 reference instead."""
    case = measure.parse_cases(spec)[0]
    with tf.device("/CPU:0"):
        generator = tf.random.Generator.from_seed(3)
        refused = planning.spatial_refusal(measure._problem(case, "NHWC", tf.float32))
    record = measure.run_case(case, "train", ["conv2d", "signal", "fft"], device="/CPU:0",
                              generator=generator, data_format="NHWC", input_sets=1, warmup=3,
                              repeats=1, calls=1)
    assert "stride 1" in record["skipped"]["signal"]
    assert measure.fft_bytes_moved(case, "NHWC") > 0
    if refused is None:
        assert set(record["timings"]) == {"conv2d", "fft"}
        assert measure.worst_diff(record["max_rel_diff"]["fft"]) < 1e-4
        return
    assert set(record["timings"]) == {"fft"}
    assert record["skipped"]["conv2d"].startswith("InvalidArgumentError")
    with tf.device("/CPU:0"):
        inputs = measure.make_inputs(case, "NHWC", 1, tf.random.Generator.from_seed(3))[0]
        outputs = measure.make_step(measure.conv_function("fft", case.padding, "NHWC", case=case),
                                    "train")(*inputs)
    reference = (strided_reference.depthwise_conv2d if case.depthwise else functools.partial(
        strided_reference.conv2d, groups=case.group_count))
    wanted = reference(*(t.numpy() for t in inputs), strides=(case.stride,) * 2,
                       padding=case.padding, dilations=(case.dilation,) * 2)
    for got, want in zip(outputs, wanted):
        assert np.max(np.abs(got.numpy() - want)) < 1e-4 * np.max(np.abs(want))


@pytest.mark.parametrize("argv", [["--impl", "cudnn"], ["--modes", "backward"],
                                  ["--warmup", "2"], ["--iters", "many"], ["--cases", "1:2"],
                                  ["--device", "tpu"], ["--device", "gpu:64"],
                                  ["--steps-per-call", "0"]])
def test_bad_arguments_exit_with_usage(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.parse_args(argv)
    assert exit_info.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_quick_defaults_and_impl_selection():
    args = cli.parse_args(["--quick", "--impl", "signal,conv2d"])
    assert args.cases == measure.PRESETS["quick"]
    assert args.impls == ["conv2d", "signal"]  # canonical order
    assert (args.repeats, args.warmup, args.iters) == (3, 3, 3)
    assert cli.parse_args(["--iters", "auto"]).iters is None


def test_resolve_device():
    assert environment.resolve_device("cpu") == "/CPU:0"
    assert environment.resolve_device("/device:CPU:0") == "/CPU:0"
    gpus = len(tf.config.list_logical_devices("GPU"))
    assert environment.resolve_device("auto") == ("/GPU:0" if gpus else "/CPU:0")
    with pytest.raises(ValueError, match="GPU"):
        environment.resolve_device(f"gpu:{gpus}")


def test_time_per_call_rotates_inputs_and_calibrates():
    seen = []
    fn = lambda value: seen.append(value)  # noqa: E731
    samples, calls = measure.time_per_call(fn, [(0,), (1,), (2,)], warmup=3, repeats=4, calls=None,
                                         target_sample_s=1e-4)
    assert len(samples) == 4 and all(positive(s) for s in samples)
    assert calls % 3 == 0
    assert seen[:6] == [0, 1, 2, 0, 1, 2]  # warm-up, then calibration, over every set
    assert seen[6:] == [i % 3 for i in range(4 * calls)]


class _FakeClock:
    """measure's clock, moved on only by `spend` (a call's or a sync's work stands in as time
    spent), so that the timer's arithmetic is checked exactly on a machine under any load."""

    def __init__(self):
        self.now = 1000.0

    def perf_counter(self):
        return self.now

    def spend(self, seconds):
        def work(*args):
            self.now += seconds
        return work


@pytest.fixture
def fake_clock(monkeypatch):
    clock = _FakeClock()
    monkeypatch.setattr(measure, "time", clock)
    return clock


def test_call_timer_separates_issuing_the_calls_from_waiting_for_the_device(monkeypatch,
                                                                            fake_clock):
    # The device's work stands in as time spent in the closing sync, the host's as time spent in
    # each call: the sample holds both, the dispatch only the calls.
    device_s, host_s, calls = 0.2, 0.002, 4
    monkeypatch.setattr(measure, "sync_devices", fake_clock.spend(device_s))
    timer = measure.CallTimer(fake_clock.spend(host_s), [()], warmup=1, calls=calls)
    timer.sample()
    (sample,), (dispatch,) = timer.samples, timer.dispatch
    assert dispatch == pytest.approx(host_s)
    assert sample == pytest.approx(host_s + device_s / calls)
    timing = measure.summarize(timer.samples, timer.calls, timer.dispatch)
    assert timing["dispatch_ms"] == pytest.approx(1e3 * host_s)
    assert "dispatch_ms" not in measure.summarize(timer.samples, timer.calls)


def test_call_timer_times_each_step_of_a_call_that_runs_several(monkeypatch, fake_clock):
    monkeypatch.setattr(measure, "sync_devices", lambda: None)
    host_s, steps = 0.004, 4
    timer = measure.CallTimer(fake_clock.spend(host_s), [()], warmup=1, calls=2,
                              steps_per_call=steps)
    timer.sample()
    (sample,), (dispatch,) = timer.samples, timer.dispatch
    assert sample == dispatch == pytest.approx(host_s / steps)


@pytest.mark.parametrize("mode", ["forward", "train"])
def test_steps_per_call_run_one_after_the_other_on_their_own_inputs(mode):
    """K steps in one call give each input set's own step outputs, and every step's ops wait for
    the outputs of the step before it (control inputs), as a sequential model's layers do."""
    case = measure.Case(2, 3, 4, 10, 3, "VALID")
    with tf.device("/CPU:0"):
        generator = tf.random.Generator.from_seed(7)
        sets = measure.make_inputs(case, "NHWC", 3, generator)
        conv = measure.conv_function("conv2d", "VALID", "NHWC")
        one = measure.make_step(conv, mode)
        three = measure.make_step(conv, mode, steps_per_call=3)
        outputs = three(*sum(sets, ()))
        per_step = 1 if mode == "forward" else 3
        assert len(outputs) == 3 * per_step
        for index, arg_set in enumerate(sets):
            for got, want in zip(outputs[index * per_step:(index + 1) * per_step], one(*arg_set)):
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
        graph = three.get_concrete_function(*sum(sets, ())).graph
    convolutions = [op for op in graph.get_operations() if op.type == "Conv2D"]
    assert len(convolutions) == 3
    assert not convolutions[0].control_inputs
    assert all(op.control_inputs for op in convolutions[1:])
    with pytest.raises(ValueError, match="3 steps take 9 tensors"):
        three(*sets[0])


def test_steps_per_call_option(tmp_path, capsys):
    report = run_main_with_tf32_off("1:2:3:8:3", tmp_path / "bench.json", "--steps-per-call", "2")
    assert report["settings"]["steps_per_call"] == 2
    out = capsys.readouterr().out
    assert "ms per step: median over 2 samples of N calls between device syncs, each call 2 " \
           "steps one after the other on their own inputs, divided by 2" in out
    assert report_module.format_host_bound(
        [{"case": {"name": "a"}, "mode": "forward",
          "timings": {"fft": {"median_ms": 0.3, "dispatch_ms": 0.29}}}], "GPU",
        report_module.timed_unit(report["settings"])).splitlines()[0].endswith("ms per step):")


def test_host_bound_columns_are_marked_on_a_gpu_only():
    def timing(median, dispatch):
        return {"median_ms": median, "dispatch_ms": dispatch}
    results = [
        {"case": {"name": "a"}, "mode": "forward",
         "timings": {"conv2d": timing(1.0, 0.2), "fft": timing(0.30, 0.28),
                     "auto": timing(0.31, 0.27)}},                    # 93% and 87%
        {"case": {"name": "a"}, "mode": "train",
         "timings": {"conv2d": timing(2.0, 0.3), "fft": timing(0.7, 0.3)}},
        {"case": {"name": "b"}, "mode": "train",
         "timings": {"conv2d": {"median_ms": 1.0}}},                  # no dispatch: --model steps
    ]
    assert report_module.format_host_bound(results, "GPU").splitlines() == [
        "host-bound (issuing the calls took at least 90% of their time, so the device waited on "
        "the host; issue ms of ms per call):",
        "  a forward: fft 0.280 of 0.300 ms",
    ]
    assert report_module.format_host_bound(results, "CPU") is None
    assert report_module.format_host_bound(results[1:], "GPU") is None


def recording_calls(monkeypatch):
    """Makes every step of run_case note its implementation at each call (in `calls`) and at each
    trace (in `traces`)."""
    calls, traces = [], []
    conv_function = measure.conv_function

    def recording_conv_function(impl, *args):
        conv = conv_function(impl, *args)

        def conv_and_record(x, w):
            traces.append(impl)
            mark = tf.numpy_function(lambda: calls.append(impl) or np.int32(0), [], tf.int32,
                                     stateful=True)
            with tf.control_dependencies([mark]):
                return tf.identity(conv(x, w))
        return conv_and_record

    monkeypatch.setattr(measure, "conv_function", recording_conv_function)
    return calls, traces


@pytest.mark.parametrize("mode", ["forward", "train"])
def test_samples_of_a_case_are_taken_in_turns(monkeypatch, mode):
    """Every implementation is prepared (traced, checked, warmed up) before any is timed; then
    sample i of each is taken before sample i + 1 of any, each step running its first trace."""
    calls, traces = recording_calls(monkeypatch)
    impls = ["conv2d", "signal", "fft", "auto", "tuned"]
    warmup, repeats, calls_per_sample = 3, 4, 2
    with tf.device("/CPU:0"):
        generator = tf.random.Generator.from_seed(1)
    record = measure.run_case(
        measure.Case(2, 3, 4, 12, 5, "VALID"), mode, impls, device="/CPU:0", generator=generator,
        data_format="NHWC", input_sets=2, warmup=warmup, repeats=repeats, calls=calls_per_sample)
    assert list(record["timings"]) == impls and record["samples_interleaved"] is True
    assert all(len(record["timings"][impl]["samples_ms"]) == repeats for impl in impls)
    # The check's call and the warm-up of each in turn (no calibration with calls given) ...
    prepared = [impl for impl in impls for _ in range(1 + warmup)]
    # ... then the samples round-robin.
    sampled = [impl for _ in range(repeats) for impl in impls for _ in range(calls_per_sample)]
    assert calls == prepared + sampled
    # Traced once each, before any sample: what "tuned" runs is the plan it was traced with,
    # though the timings it was planned from are forgotten by then.
    assert traces == impls
    assert not timing_cache.cached_timings(planning.make_problem(
        (2, 12, 12, 3), (5, 5, 3, 4), "VALID", "NHWC", "float32", "CPU"))


def test_in_turns_passes_over_a_timer_that_failed():
    timers = {"a": "timer a", "b": "timer b", "c": "timer c"}
    seen = []
    for name, timer in measure.in_turns(timers, 3):
        seen.append(name)
        if name == "b" and seen.count("b") == 2:
            del timers["b"]
    assert seen == ["a", "b", "c", "a", "b", "c", "a", "c"]


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_op_steps_compose_the_train_step(data_format, padding):
    """The --ops breakdown times the ops fft_conv2d's train step runs, with the same arguments."""
    case = measure.Case(3, 2, 5, 9, 4, padding)
    x, w, dy = measure.make_inputs(case, data_format, 1, tf.random.Generator.from_seed(7))[0]
    steps, arguments = measure.fft_op_steps(case, data_format)
    args = arguments(x, w, dy)
    assert list(args) == list(steps)
    y = steps["irfft y"](*args["irfft y"])
    dx = steps["irfft dx"](*args["irfft dx"])
    dw = steps["irfft dw"](*args["irfft dw"])
    # The breakdown is of the single-frame path in the smallest frame: the same path, forced.
    size = conv_geometry(case.size, case.size, case.kernel, case.kernel, padding).fft_size
    train = measure.make_step(lambda x, w: fft_conv2d(x, w, padding, data_format, fft_size=size),
                              "train")
    for ours, expected in zip((y, dx, dw), train(x, w, dy)):
        np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_ops_breakdown(tmp_path, capsys):
    json_path = tmp_path / "bench.json"
    assert cli.main(["--cases", "1:2:3:8:3", "--modes", "train", "--ops", "--repeats", "2",
                     "--warmup", "3", "--iters", "1", "--device", "cpu", "--no-progress",
                     "--json", str(json_path)]) == 0
    report = json.loads(json_path.read_text())
    (record,) = report["fft_ops"]
    assert len(record["timings"]) == 9 and record["samples_interleaved"] is True
    assert all(positive(t["median_ms"]) for t in record["timings"].values())
    assert positive(record["call_overhead"]["median_ms"])
    assert record["sum_ms"] == pytest.approx(sum(t["median_ms"] for t in record["timings"].values()))
    assert "each op alone" in capsys.readouterr().out


def test_ops_breakdown_skips_a_case_that_needs_tiles(tmp_path, capsys):
    """The breakdown times the single-frame path's ops; an image no single frame holds is named
    as not timed, and the cases around it still are."""
    json_path = tmp_path / "bench.json"
    assert cli.main(["--cases", "1:1:1:130:7:same,1:2:3:8:3", "--modes", "train", "--ops",
                     "--impl", "conv2d,fft", "--repeats", "2", "--warmup", "3", "--iters", "1",
                     "--device", "cpu", "--no-progress", "--json", str(json_path)]) == 0
    tiled, single = json.loads(json_path.read_text())["fft_ops"]
    assert "fft_conv2d tiles such images" in tiled["skipped"] and not tiled["timings"]
    assert len(single["timings"]) == 9
    out = capsys.readouterr().out
    assert "1x1->1 130x130 k7 SAME, each op alone: not timed (" in out


def test_lenet_model_steps_at_another_batch(tmp_path, capsys):
    json_path = tmp_path / "bench.json"
    argv = ["--cases", "1:1:2:8:3", "--modes", "forward", "--impl", "conv2d,fft", "--repeats", "2",
            "--warmup", "3", "--iters", "1", "--device", "cpu", "--no-progress", "--xla",
            "--model", "lenet", "--model-batch", "2", "--json", str(json_path)]
    assert cli.main(argv) == 0
    report = json.loads(json_path.read_text())
    assert report["settings"]["model_batch"] == 2
    (step,) = report["model_steps"]
    assert step["model"]["batch"] == 2 and step["model"]["architecture"] == "lenet"
    assert set(step["timings"]) == {"conv2d", "fft"} and positive(step["ratio_fft_conv2d"])
    assert "Keras train step of lenet (batch 2, 32x32x1, channels 6->16, k5 VALID" in (
        capsys.readouterr().out)


def test_models_time_keras_applications_against_their_to_fft_versions(tmp_path, capsys):
    """--models on the smallest step to trace (VGG16's 13 convolutions): the JSON record of a
    training step with Keras' layers and after to_fft, both positive, with their ratio."""
    json_path = tmp_path / "bench.json"
    argv = ["--models", "vgg16", "--image-size", "32", "--model-batch", "2", "--repeats", "1",
            "--iters", "1", "--warmup", "3", "--device", "cpu", "--no-progress",
            "--json", str(json_path)]
    assert cli.main(argv) == 0
    report = json.loads(json_path.read_text())
    assert report["schema"] == cli.SCHEMA and report["finished"] is True
    assert ENVIRONMENT_KEYS | {"onednn_enabled"} <= set(report["environment"])
    settings = report["settings"]
    assert (settings["models"], settings["impls"], settings["image_size"], settings["batch"],
            settings["precision"], settings["repeats"]) == (["VGG16"], ["auto"], 32, 2,
                                                            "float32", 1)
    (record,) = report["applications"]
    assert (record["model"], record["image_size"], record["batch"]) == ("VGG16", 32, 2)
    assert record["skipped"] == {}
    for version in ("keras", "auto"):
        timing = record["timings"][version]
        assert set(timing) == TIMING_KEYS and len(timing["samples_ms"]) == 1, version
        assert positive(timing["median_ms"]) and math.isfinite(record["mean_loss"][version])
        assert record["compiled_with_xla"][version] is False   # Keras' default on a CPU
    assert record["layers_converted"] == 13
    assert 0 <= record["auto_layers_on_fft_path"] <= 13
    assert record["ratios"]["auto/keras"] == pytest.approx(
        record["timings"]["auto"]["median_ms"] / record["timings"]["keras"]["median_ms"])
    assert keras.mixed_precision.global_policy().name == "float32"
    out = capsys.readouterr().out
    assert "auto/keras" in out and "VGG16" in out and "converted" in out


@pytest.mark.parametrize("argv", [["--models", "nosuchnet"], ["--models", "vgg16", "--cases",
                                                                   "quick"],
                                  ["--models", "vgg16", "--impl", "conv2d"],
                                  ["--precision", "mixed_float16"], ["--image-size", "64"],
                                  ["--models", "vgg16", "--image-size", "16"],
                                  ["--models", "vgg16", "--model-batch", "0"]])
def test_bad_models_arguments_exit_with_usage(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.parse_args(argv)
    assert exit_info.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_model_batch_needs_a_model():
    with pytest.raises(SystemExit):
        cli.parse_args(["--model-batch", "4"])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_op_steps_compose_the_half_precision_train_step(dtype):
    """The --ops breakdown in half precision runs fft_conv2d's ops (weight gain, alpha) exactly."""
    case = measure.Case(2, 3, 4, 9, 3, "SAME")
    x, w, dy = measure.make_inputs(case, "NHWC", 1, tf.random.Generator.from_seed(3),
                                   tf.as_dtype(dtype))[0]
    assert x.dtype == w.dtype == dy.dtype == tf.as_dtype(dtype)
    steps, arguments = measure.fft_op_steps(case, "NHWC")
    args = arguments(x, w, dy)
    ours = (steps["irfft y"](*args["irfft y"]), steps["irfft dx"](*args["irfft dx"]),
            steps["irfft dw"](*args["irfft dw"]))
    size = conv_geometry(case.size, case.size, case.kernel, case.kernel, "SAME").fft_size
    train = measure.make_step(lambda x, w: fft_conv2d(x, w, "SAME", "NHWC", fft_size=size,
                                                      half_spectra=True), "train")
    for got, expected in zip(ours, train(x, w, dy)):
        np.testing.assert_array_equal(tf.cast(got, tf.float32), tf.cast(expected, tf.float32))


def test_half_precision_dtype_option(tmp_path, capsys):
    json_path = tmp_path / "bench.json"
    assert cli.main(["--cases", "1:2:3:8:3", "--modes", "train", "--impl", "conv2d,signal,fft",
                     "--dtype", "float16", "--repeats", "2", "--warmup", "3", "--iters", "1",
                     "--device", "cpu", "--no-progress", "--json", str(json_path)]) == 0
    report = json.loads(json_path.read_text())
    assert report["settings"]["dtype"] == "float16"
    (result,) = report["results"]
    assert set(result["timings"]) == {"conv2d", "fft"} and "signal" in result["skipped"]
    assert max(result["max_rel_diff"]["fft"].values()) < 1e-2   # against conv2d in float16
    assert "NHWC float16" in capsys.readouterr().out


def test_train_cases_carry_the_fft_floor(tmp_path):
    json_path = tmp_path / "bench.json"
    argv = ["--cases", "2:3:4:12:5", "--impl", "conv2d,fft", "--repeats", "2", "--warmup", "3",
            "--iters", "1", "--device", "cpu", "--no-progress", "--json", str(json_path)]
    assert cli.main(argv) == 0
    report = json.loads(json_path.read_text())
    assert positive(report["copy_bandwidth_bytes_per_s"])
    forward, train = report["results"]
    assert "fft_floor" not in forward
    floor = train["fft_floor"]
    case = measure.Case(2, 3, 4, 12, 5, "VALID")
    with tf.device("/CPU:0"):
        assert floor["bytes_moved"] == measure.fft_bytes_moved(case, "NHWC")
    # At least the input, the weights and the output go through the ops once each.
    assert floor["bytes_moved"] >= 4 * (2 * 12 * 12 * 3 + 5 * 5 * 3 * 4 + 2 * 8 * 8 * 4)
    assert math.isclose(floor["floor_ms"],
                        1e3 * floor["bytes_moved"] / report["copy_bandwidth_bytes_per_s"])
    assert math.isclose(floor["percent_of_floor"],
                        100 * floor["floor_ms"] / train["timings"]["fft"]["median_ms"])


def test_the_gpu_copy_bandwidth_halves_its_buffer_until_it_fits(monkeypatch):
    """On a GPU the floor's bandwidth comes from a buffer large enough that the device, not the
    host's per-call work, sets the time; a device without room for it gets half, down to a limit,
    and below the limit the error is the device's. (The GPU is named; without one the buffers land
    on the CPU, and the stand-in timer says which sizes "fit".)"""
    sizes = []

    def timer(fn, arg_sets, **kwargs):
        (buffer,), = arg_sets
        sizes.append(4 * buffer.shape[0])
        if sizes[-1] > 64 * 2 ** 20:
            raise tf.errors.ResourceExhaustedError(None, None, "out of memory")
        return [1e-3, 1e-3], 1

    monkeypatch.setattr(measure, "time_per_call", timer)
    bandwidth = measure.copy_bandwidth("/GPU:0", warmup=1, repeats=2, gpu_bytes=256 * 2 ** 20)
    assert sizes == [256 * 2 ** 20, 128 * 2 ** 20, 64 * 2 ** 20]
    assert bandwidth == pytest.approx(2 * 64 * 2 ** 20 / 1e-3)
    monkeypatch.setattr(measure, "MIN_GPU_COPY_BYTES", 128 * 2 ** 20)
    with pytest.raises(tf.errors.ResourceExhaustedError):
        measure.copy_bandwidth("/GPU:0", warmup=1, repeats=2, gpu_bytes=256 * 2 ** 20)
    # On a CPU: two 64 MB buffers taken in turns, and no retry.
    cpu_sets = []

    def cpu_timer(fn, arg_sets, **kwargs):
        cpu_sets.append([4 * b.shape[0] for (b,) in arg_sets])
        raise tf.errors.ResourceExhaustedError(None, None, "out of memory")

    monkeypatch.setattr(measure, "time_per_call", cpu_timer)
    with pytest.raises(tf.errors.ResourceExhaustedError):
        measure.copy_bandwidth("/CPU:0", warmup=1, repeats=2)
    assert cpu_sets == [[64 * 2 ** 20, 64 * 2 ** 20]]


def test_tuned_times_the_candidates_and_leaves_auto_to_the_model(tmp_path, capsys):
    """"tuned" is auto after tf_fftconv.autotune: its plan comes from timings on the device, and
    the timings are forgotten afterwards, so "auto" of the next mode plans without them (on a
    CPU, where FFTConv2D times no close call, from the model)."""
    json_path = tmp_path / "bench.json"
    argv = ["--cases", "2:3:4:12:5", "--modes", "train,forward", "--impl", "conv2d,fft,auto,tuned",
            "--repeats", "2", "--warmup", "3", "--iters", "1", "--device", "cpu",
            "--no-progress", "--json", str(json_path)]
    assert cli.main(argv) == 0
    assert "tuned/best" in capsys.readouterr().out
    report = json.loads(json_path.read_text())
    assert report["settings"]["impls"] == ["conv2d", "fft", "auto", "tuned"]
    for record in report["results"]:
        assert record["auto_plan"]["source"] == "the cost model"
        tuned = record["tuned_plan"]
        assert tuned["source"].startswith("timing on this device")
        assert "spatial" in tuned["timings_ms"] and len(tuned["timings_ms"]) >= 2
        assert all(positive(ms) for ms in tuned["timings_ms"].values())
        # The label it ran is the fastest it timed.
        assert tuned["label"] == min(tuned["timings_ms"], key=tuned["timings_ms"].get)
        best = min(record["timings"][impl]["median_ms"] for impl in ("conv2d", "fft"))
        assert record["ratios"]["tuned/best"] == pytest.approx(
            record["timings"]["tuned"]["median_ms"] / best)
    assert not timing_cache.cached_timings(planning.make_problem(
        (2, 12, 12, 3), (5, 5, 3, 4), "VALID", "NHWC", "float32"))


def test_auto_times_a_close_call_as_an_fft_conv2d_layer_does(monkeypatch, timed_problems):
    """Where the cost model calls a case close, "auto" is planned as FFTConv2D plans it when built:
    the candidates timed once, before its step is traced, which then runs the timed plan; "fft" and
    "model", traced before, follow the model; the next mode starts from the model again."""
    for name in (timing_cache.AUTOTUNE_ENV, timing_cache.CACHE_ENV):
        monkeypatch.delenv(name, raising=False)
    # Every untimed call close, on the CPU too (the cost model calls close calls on a GPU only).
    monkeypatch.setattr(planning, "is_close_call", lambda made: not made.timings_ms)
    tuned_problems = timed_problems
    traced = []   # the plans the steps' traces ran, not those of the candidates' timings
    run_plan = execute.run_plan

    def recording_run_plan(chosen, x, w, *epilogue):
        if chosen.source != "autotune":
            traced.append(chosen)
        return run_plan(chosen, x, w, *epilogue)

    monkeypatch.setattr(execute, "run_plan", recording_run_plan)
    case = measure.Case(2, 3, 4, 12, 5, "VALID")
    with tf.device("/CPU:0"):
        generator = tf.random.Generator.from_seed(2)
    for mode in ("train", "forward"):
        traced.clear()
        tuned_problems.clear()
        record = measure.run_case(case, mode, ["conv2d", "fft", "model", "auto"], device="/CPU:0",
                                  generator=generator, data_format="NHWC", input_sets=1,
                                  warmup=3, repeats=2, calls=1)
        assert set(record["timings"]) == {"conv2d", "fft", "model", "auto"}, record["skipped"]
        assert record["model_plan"]["source"] == "the cost model"
        assert "timings_ms" not in record["model_plan"]
        auto = record["auto_plan"]
        assert auto["source"].startswith("timing on this device"), mode
        assert "spatial" in auto["timings_ms"] and len(auto["timings_ms"]) >= 2
        assert auto["label"] == min(auto["timings_ms"], key=auto["timings_ms"].get)
        assert len(tuned_problems) == 1, mode    # once, for auto; the model's plan times nothing
        fft, model, auto_traced = traced
        assert fft.requested == "fft" and not fft.timings_ms
        assert (model.label, model.source) == (record["model_plan"]["label"], "the cost model")
        assert (auto_traced.label, auto_traced.source) == (auto["label"], auto["source"])
    assert not timing_cache.cached_timings(tuned_problems[0])
    # The table marks the plan a timing decided.
    table = report_module.format_table(
        {"settings": {"impls": ["conv2d", "fft", "model", "auto"]}, "results": [record]})
    assert f"{auto['label']} (timed)" in table
    assert f"{record['model_plan']['label']} (timed)" not in table.replace(
        f"{auto['label']} (timed)", "")


def synthetic_result(name, mode, **medians_and_ranges):
    """A result in run_case's form with (median ms, min ms, max ms) per implementation."""
    timings = {impl: {"median_ms": median, "min_ms": low, "max_ms": high,
                      "spread_pct": 100 * (high - low) / median}
               for impl, (median, low, high) in medians_and_ranges.items()}
    best = [timings[impl]["median_ms"] for impl in ("conv2d", "fft") if impl in timings]
    ratio = timings["auto"]["median_ms"] / min(best) if "auto" in timings and best else None
    return {"case": {"name": name}, "mode": mode, "timings": timings,
            "ratios": {"auto/best": ratio}}


def test_auto_summary_counts_and_lists_the_misses():
    results = [
        synthetic_result("a", "train", conv2d=(1.0, 0.9, 1.1), fft=(2.0, 1.9, 2.1),
                         auto=(1.0, 0.95, 1.05)),                       # 1.00x: within
        synthetic_result("b", "train", conv2d=(2.0, 1.9, 2.2), fft=(1.0, 0.9, 1.2),
                         auto=(1.05, 1.0, 1.1)),                        # 1.05x: within
        synthetic_result("c", "train", conv2d=(1.0, 0.8, 1.2), fft=(2.0, 1.8, 2.2),
                         auto=(1.32, 1.3, 1.4)),                        # a miss, apart
        synthetic_result("d", "train", conv2d=(3.0, 2.0, 4.0), fft=(1.0, 0.5, 1.5),
                         auto=(1.1, 0.6, 1.7)),                         # a miss in the noise
        synthetic_result("e", "train", conv2d=(1.0, 0.9, 1.1)),         # no auto: not counted
    ]
    assert report_module.format_auto_summary(results).splitlines() == [
        "auto within 1.05x of the faster of conv2d and fft in 2 of 4 cases; the misses "
        "(auto/best, the spread of auto's samples and of the faster's):",
        "  c train: 1.32x, auto ±8%, conv2d ±40%",
        "  d train: 1.10x, auto ±100%, fft ±100%; their samples overlap",
    ]
    results[2]["mode"] = "forward"
    assert report_module.format_auto_summary(results[:2] + results[2:3]).startswith(
        "auto within 1.05x of the faster of conv2d and fft in 2 of 3 cases and modes; ")
    assert report_module.format_auto_summary(results[:2]) == (
        "auto within 1.05x of the faster of conv2d and fft in 2 of 2 cases")
    assert report_module.format_auto_summary(results[4:]) is None


def test_the_report_ends_with_the_auto_summary(tmp_path):
    json_path = tmp_path / "bench.json"
    assert cli.main(["--cases", "1:2:3:8:3", "--modes", "train", "--impl", "conv2d,fft,auto",
                     "--repeats", "2", "--warmup", "3", "--iters", "1", "--device", "cpu",
                     "--no-progress", "--json", str(json_path)]) == 0
    report = json.loads(json_path.read_text())
    within = report["results"][0]["ratios"]["auto/best"] <= 1.05
    lines = report_module.format_report(report).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("auto within"))
    assert lines[start].startswith(
        f"auto within 1.05x of the faster of conv2d and fft in {int(within)} of 1 cases")
    assert len(lines) - start == (1 if within else 2)   # the line, and the miss if it is one
