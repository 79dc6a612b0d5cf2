"""python -m tf_fftconv.reproduce: the baseline vs FFT table."""

import json
import math
import os
import re
import subprocess
import sys

import pytest

from tf_fftconv.experiments import reproduce
from tf_fftconv.geometry import FFT_SIZES

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


SPATIAL = {"algorithm": "spatial", "frame": None, "tiling": None}


def _run_record(label, times, accuracy, jit=False, plans=None):
    return {"label": label, "epochs": len(times), "epoch_times_s": times,
            "first_epoch_time_s": times[0], "avg_epoch_time_s": sum(times[1:]) / (len(times) - 1),
            "avg_epoch_time_excludes_first": True, "wall_time_s": sum(times) + 0.04,
            "test_accuracy": accuracy, "jit_compile": jit,
            "plans": plans or {"c1": [SPATIAL], "c3": [SPATIAL]}}


def _fft_plan(frame, tiling="single"):
    return {"algorithm": "fft", "frame": frame, "tiling": tiling}


def test_format_table_matches_the_design_document_style():
    result = {
        "dataset": {"display_name": "MNIST", "requested": "mnist", "source": "tfds",
                    "num_train": 60000, "num_test": 10000, "batch_size": 128,
                    "fallback_reason": None},
        "environment": {"description": "GPU: test", "tf_version": "2.21.0",
                        "keras_version": "3.15.1"},
        "runs": {"baseline": _run_record("baseline", [3.0, 1.67633, 1.67633], 0.9879416, True),
                 "fft": _run_record("fft", [4.0, 1.5, 1.5], 0.9878,
                                    plans={"c1": [_fft_plan(32)],
                                           "c3": [_fft_plan(8, "2x2 tiles of 5x5"),
                                                  _fft_plan(16)]}),
                 "auto": _run_record("auto", [3.5, 1.25, 1.25], 0.9877,
                                     plans={"c1": [SPATIAL], "c3": [_fft_plan(16)]})},
        "auto_choices": {"c1": ["spatial"], "c3": ["fft S=16 single keep"]},
        "baseline_accuracy_over_seeds": {"seeds": [0, 1, 2], "accuracies": [0.98, 0.99, 0.985],
                                         "mean": 0.985, "stdev": 0.005, "min": 0.98,
                                         "max": 0.99},
        "fft_accuracy_over_seeds": {"seeds": [0, 1, 2], "accuracies": [0.97, 0.995, 0.98],
                                    "mean": 0.9816667, "stdev": 0.0126, "min": 0.97,
                                    "max": 0.995},
        "paired_accuracy_differences": [-0.01, 0.005, -0.005],
    }
    lines = reproduce.format_table(result).splitlines()
    assert lines[0] == "| Experiment | Description | Avg epoch time | Wall time | Acc |"
    assert lines[1] == "|---|---|---|---|---|"
    assert lines[2] == "| MNIST LeNet | Baseline | 1.67633 s | 6.4 s | 98.79416% |"
    assert lines[3] == ("| MNIST Mathieu LeNet | Frequency domain convolutions (tf_fftconv) | "
                        "1.50000 s | 7.0 s | 98.78000% |")
    assert lines[4] == ("| MNIST LeNet, auto | Automatic choice per layer (tf_fftconv, "
                        "algorithm=\"auto\") | 1.25000 s | 6.0 s | 98.77000% |")
    text = "\n".join(lines)
    assert "epoch 1, with tracing: baseline 3.000 s, FFT 4.000 s, auto 3.500 s" in text
    assert "0.89x" in text and "-0.014 points" in text
    assert "auto / baseline epoch time: 0.75x; auto chose c1: spatial, c3: fft S=16 single keep" \
        in text
    assert ("Over 3 seeds (0, 1, 2; each seed's baseline and FFT model from the same initial "
            "weights on the same batches): baseline mean 98.500%, range 98.000-99.000%, stdev "
            "0.500 points; FFT mean 98.167%, range 97.000-99.500%, within the baseline's range; "
            "FFT - baseline per seed: -1.00, +0.50, -0.50 points (mean -0.333).") in text
    result["fft_accuracy_over_seeds"]["mean"] = 0.975
    assert "97.500%, range 97.000-99.500%, below the baseline's range" in \
        reproduce.format_table(result)
    result["fft_accuracy_over_seeds"]["mean"] = 0.995
    assert "99.500%, range 97.000-99.500%, above the baseline's range" in \
        reproduce.format_table(result)
    result["fft_accuracy_over_seeds"]["mean"] = 0.9816667
    assert 'baseline on, FFT off, auto off' in text
    assert ("Convolutions run (per layer: algorithm, frame, tiling): baseline c1 spatial, "
            "c3 spatial; FFT c1 fft S=32 single, c3 fft S=8 2x2 tiles of 5x5 / fft S=16 single; "
            "auto c1 spatial, c3 fft S=16 single.") in text
    assert "Device: GPU: test. TensorFlow 2.21.0, Keras 3.15.1." in text
    assert "NOTE" not in text

    del result["runs"]["auto"]                 # a result from before the auto row
    assert "| MNIST LeNet, auto |" not in reproduce.format_table(result)

    result["dataset"].update(display_name="Fashion-MNIST", fallback_reason="MNIST unreachable")
    text = reproduce.format_table(result)
    assert "| Fashion-MNIST LeNet | Baseline |" in text
    assert "NOTE: 'mnist' was asked for but Fashion-MNIST was used (MNIST unreachable)." in text


def test_arguments():
    args = reproduce.parse_args([])
    assert (args.dataset, args.epochs, args.batch_size, args.seed, args.seeds) == (
        "mnist", 10, 128, 0, 1)
    assert reproduce.parse_args(["--seeds", "3"]).seeds == 3
    assert reproduce.parse_args(["--baseline-seeds", "3"]).seeds == 3  # the older spelling
    assert args.steps_per_execution == 1  # Keras' default
    assert reproduce.parse_args(["--steps-per-execution", "8"]).steps_per_execution == 8
    with pytest.raises(SystemExit):
        reproduce.parse_args(["--steps-per-execution", "0"])
    with pytest.raises(SystemExit):
        reproduce.parse_args(["--epochs", "0"])


@pytest.mark.parametrize("dataset,message", [
    ("foo", "unknown data set 'foo'"),
    ("idx:", "needs a directory"),
    ("idx:/missing", "IDX directory '/missing' does not exist"),
])
def test_bad_dataset_is_a_usage_error(dataset, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main(["--dataset", dataset])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and message in err


def test_unavailable_data_without_fallback_is_a_usage_error(tmp_path, monkeypatch, capsys):
    from tf_fftconv.experiments import data

    monkeypatch.setenv("TF_FFTCONV_FASHION_MNIST_DIR", str(tmp_path / "absent"))
    monkeypatch.setenv("TF_FFTCONV_INPUT_ROOT", str(tmp_path / "absent"))
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(data, "tfds_reachable", lambda *a, **k: False)
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main(["--dataset", "fashion_mnist", "--no-fallback"])
    assert exit_info.value.code == 2
    assert "'fashion_mnist' cannot be loaded here" in capsys.readouterr().err


def test_bad_arguments_end_without_a_traceback(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tf_fftconv.reproduce", "--dataset",
                           f"idx:{tmp_path}"], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "lacks train-images-idx3-ubyte[.gz]" in done.stderr.splitlines()[-1]


def test_cli_smoke(tmp_path):
    """Tiny settings in a subprocess: per-epoch progress, the table, the JSON file."""
    out = tmp_path / "result.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    done = subprocess.run(
        [sys.executable, "-m", "tf_fftconv.reproduce", "--dataset", "synthetic", "--epochs", "2",
         "--batch-size", "64", "--limit-train", "512", "--limit-test", "256",
         "--seeds", "2", "--seed", "5", "--steps-per-execution", "4", "--json", str(out)],
        env=env, capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    stdout = done.stdout
    for label in ("baseline", "fft", "auto", "baseline seed 6", "fft seed 6"):
        for epoch in (1, 2):
            assert f"[{label}] epoch {epoch}/2:" in stdout
    # Epochs alternate between the models (the default order).
    assert stdout.index("[baseline seed 6] epoch 1/2:") < stdout.index("[baseline] epoch 2/2:")
    assert "| Experiment | Description | Avg epoch time | Wall time | Acc |" in stdout
    assert re.search(r"^\| Synthetic LeNet \| Baseline \| [\d.]+ s \| [\d.]+ s \| [\d.]+% \|$",
                     stdout, re.M)
    assert re.search(r"^\| Synthetic Mathieu LeNet \| Frequency domain convolutions "
                     r"\(tf_fftconv\) \| [\d.]+ s \| [\d.]+ s \| [\d.]+% \|$", stdout, re.M)
    assert re.search(r"^\| Synthetic LeNet, auto \| Automatic choice per layer \(tf_fftconv, "
                     r"algorithm=\"auto\"\) \| [\d.]+ s \| [\d.]+ s \| [\d.]+% \|$", stdout, re.M)
    assert "SYNTHETIC" in done.stderr  # announced

    result = json.loads(out.read_text())
    assert result["dataset"]["name"] == "synthetic"
    assert result["dataset"]["num_train"] == 512 and result["dataset"]["num_test"] == 256
    assert result["environment"]["tf_version"] and result["environment"]["description"]
    assert result["settings"]["seed"] == 5 and result["settings"]["steps_per_execution"] == 4
    assert result["settings"]["order"] == "interleaved"
    assert "epochs of the models alternating" in result["table"]
    assert "4 steps per call of the train function" in result["table"]
    baseline, fft, auto = (result["runs"][key] for key in ("baseline", "fft", "auto"))
    for run in (baseline, fft, auto):
        assert len(run["epoch_times_s"]) == len(run["train_loss"]) == 2
        assert run["avg_epoch_time_s"] == run["epoch_times_s"][1]
        assert 0 <= run["test_accuracy"] <= 1 and run["wall_time_s"] > 0
    assert fft["jit_compile"] is False
    # Same initial weights and batches: the first epoch's losses agree closely.
    for run in (fft, auto):
        assert abs(run["train_loss"][0] - baseline["train_loss"][0]) <= 1e-3 * baseline["train_loss"][0]
    # The FFT rows ran the FFT path in both layers, the baseline rows tf.nn.conv2d (the plans
    # the layers followed); auto says what it chose for each layer.
    for run in [fft] + result["runs"]["fft_extra_seeds"]:
        assert set(run["plans"]) == {"c1", "c3"}
        for layer, records in run["plans"].items():
            assert records and all(r["algorithm"] == "fft" and r["frame"] in FFT_SIZES
                                   and r["tiling"] for r in records), (layer, records)
    for run in [baseline] + result["runs"]["baseline_extra_seeds"]:
        assert run["plans"] == {"c1": [SPATIAL], "c3": [SPATIAL]}
    assert set(auto["plans"]) == {"c1", "c3"}
    fft_paths = re.search(r"Convolutions run \(per layer: algorithm, frame, tiling\): "
                          r"baseline c1 spatial, c3 spatial; FFT c1 (.*), c3 (.*); auto ",
                          result["table"])
    assert fft_paths and all(p.startswith("fft S=") for p in fft_paths.groups()), result["table"]
    assert set(result["auto_choices"]) == {"c1", "c3"}
    assert all(labels for labels in result["auto_choices"].values())
    # The second seed's pair: a baseline and an FFT model from one set of initial weights, on
    # one order of batches (first losses agree), a different one from seed 5's.
    extra_baseline, = result["runs"]["baseline_extra_seeds"]
    extra_fft, = result["runs"]["fft_extra_seeds"]
    assert extra_baseline["seed"] == extra_fft["seed"] == 6
    assert extra_fft["jit_compile"] is False
    assert abs(extra_fft["train_loss"][0] - extra_baseline["train_loss"][0]) <= \
        1e-3 * extra_baseline["train_loss"][0]
    assert extra_baseline["train_loss"][0] != baseline["train_loss"][0]
    for key, runs in (("baseline", (baseline, extra_baseline)), ("fft", (fft, extra_fft))):
        spread = result[f"{key}_accuracy_over_seeds"]
        assert spread["seeds"] == [5, 6]
        assert spread["accuracies"] == [r["test_accuracy"] for r in runs]
    assert result["paired_accuracy_differences"] == [
        f["test_accuracy"] - b["test_accuracy"] for f, b in ((fft, baseline),
                                                             (extra_fft, extra_baseline))]
    assert "FFT - baseline per seed: " in result["table"]
    assert result["table"] in stdout


def test_mixed_precision_run_restores_the_policy():
    import keras  # noqa: PLC0415

    before = keras.mixed_precision.global_policy().name
    result = reproduce.run(dataset="synthetic", epochs=1, batch_size=64, limit_train=256,
                           limit_test=128, warm_up=False, jit_compile=False,
                           precision="mixed_float16", progress=lambda line: None)
    assert keras.mixed_precision.global_policy().name == before
    assert result["settings"]["precision"] == "mixed_float16"
    assert "dtype policy mixed_float16" in result["table"]
    for key in ("baseline", "fft", "auto"):
        assert math.isfinite(result["runs"][key]["train_loss"][0])
    with pytest.raises(ValueError, match="precision must be one of"):
        reproduce.run(dataset="synthetic", precision="float16")


def test_sequential_order_trains_one_model_after_the_other():
    lines = []
    result = reproduce.run(dataset="synthetic", epochs=2, batch_size=64, limit_train=256,
                           limit_test=128, warm_up=False, jit_compile=False,
                           order="sequential", progress=lines.append)
    epochs = [line.split("]")[0] + "]" + line.split("]")[1].split(":")[0]
              for line in lines if "] epoch " in line]
    assert epochs == ["[baseline] epoch 1/2", "[baseline] epoch 2/2", "[fft] epoch 1/2",
                      "[fft] epoch 2/2", "[auto] epoch 1/2", "[auto] epoch 2/2"]
    assert result["settings"]["order"] == "sequential"
    assert "alternating" not in result["table"]
    for key in ("baseline", "fft", "auto"):
        record = result["runs"][key]
        assert len(record["epoch_times_s"]) == 2 and record["wall_time_s"] >= sum(
            record["epoch_times_s"])
    with pytest.raises(ValueError, match="order must be one of interleaved, sequential"):
        reproduce.run(dataset="synthetic", order="random")
