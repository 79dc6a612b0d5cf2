"""notebooks/kaggle_reproduce.ipynb, executed with tiny settings and no install step."""

import json
import os

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(REPO, "notebooks", "kaggle_reproduce.ipynb")

if os.environ.get("CI"):  # CI installs these: a missing one must fail there, not skip
    import nbclient
    import nbformat
else:
    nbformat = pytest.importorskip("nbformat", reason="pip install nbformat nbclient ipykernel")
    nbclient = pytest.importorskip("nbclient", reason="pip install nbformat nbclient ipykernel")


def _read():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    return notebook


def test_parameters_cell_is_tagged_and_complete():
    notebook = _read()
    tagged = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0].cell_type == "code"
    for name in ("INSTALL", "MODEL", "DATASET", "EPOCHS", "BATCH_SIZE", "SEED", "LIMIT_TRAIN",
                 "LIMIT_TEST", "SEEDS", "JSON_PATH", "PLOT_PATH"):
        assert f"\n{name} = " in "\n" + tagged[0].source
    assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code"), \
        "commit the notebook without outputs"


def _attach_mnist(root):
    """A small MNIST in the layout of Kaggle's attached data sets (dot-named IDX files)."""
    from tf_fftconv.experiments import data

    directory = root / "mnist-dataset"
    directory.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for split, n in (("train", 256), ("t10k", 128)):
        data.write_idx(directory / f"{split}-images.idx3-ubyte",
                       rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        data.write_idx(directory / f"{split}-labels.idx1-ubyte",
                       rng.integers(0, 10, n, dtype=np.uint8))
    return directory


def test_notebook_runs_with_tiny_settings(tmp_path, monkeypatch):
    """Offline, with MNIST attached under the input root as on Kaggle: found, trained on, named."""
    attached = _attach_mnist(tmp_path / "input")
    monkeypatch.setenv("TF_FFTCONV_INPUT_ROOT", str(tmp_path / "input"))
    monkeypatch.setenv("TF_FFTCONV_OFFLINE", "1")
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/tensorflow_datasets copy comes first
    notebook = _read()
    index = next(i for i, c in enumerate(notebook.cells)
                 if "parameters" in c.metadata.get("tags", []))
    overrides = nbformat.v4.new_code_cell(
        "INSTALL = False\nDATASET = 'mnist'\nEPOCHS = 2\nBATCH_SIZE = 64\n"
        "LIMIT_TRAIN = 256\nLIMIT_TEST = 128\nSEEDS = 2\n"
        f"JSON_PATH = {str(tmp_path / 'result.json')!r}\n"
        f"PLOT_PATH = {str(tmp_path / 'plot.png')!r}\n",
        metadata={"tags": ["injected-parameters"]})
    notebook.cells.insert(index + 1, overrides)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()

    text = "\n".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code"
                     for o in c.outputs if o.output_type == "stream")
    errors = "\n".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code"
                       for o in c.outputs if o.get("name") == "stderr")
    assert "INSTALL=False" in text
    assert f"found MNIST attached under {tmp_path / 'input'}: {attached}" in errors
    assert f"data: mnist from {attached}" in text
    assert "| MNIST LeNet | Baseline |" in text
    assert "| MNIST Mathieu LeNet | Frequency domain convolutions (tf_fftconv) |" in text
    assert "[fft] epoch 2/2" in text
    images = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs
              if "image/png" in o.get("data", {})]
    assert images, "the bar plot was not shown"
    assert (tmp_path / "plot.png").stat().st_size > 0
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["dataset"]["name"] == "mnist" and result["settings"]["epochs"] == 2
    assert len(result["baseline_accuracy_over_seeds"]["accuracies"]) == 2
    assert len(result["fft_accuracy_over_seeds"]["accuracies"]) == 2


def _install_functions():
    """The install cell's functions, defined without running the install."""
    notebook = _read()
    cell = next(c.source for c in notebook.cells if "def find_wheel" in c.source)
    import glob
    import shutil
    import subprocess
    import sys

    namespace = {"glob": glob, "os": os, "re": __import__("re"), "shutil": shutil,
                 "subprocess": subprocess, "sys": sys}  # what the notebook's first code cell imports
    exec(cell.split("\nif INSTALL:")[0], namespace)  # the definitions before the install itself
    return namespace


def test_install_takes_the_attached_wheel_built_for_this_tensorflow(tmp_path, monkeypatch, capsys):
    wheels = tmp_path / "input" / "tf-fftconv-wheels"
    wheels.mkdir(parents=True)
    for version in ("2.20.0", "2.21.0", "2.2.0"):
        (wheels / f"tf_fftconv-0.1.0+tf{version}-py3-none-linux_x86_64.whl").write_bytes(b"")
    monkeypatch.setenv("TF_FFTCONV_INPUT_ROOT", str(tmp_path / "input"))
    find_wheel = _install_functions()["find_wheel"]
    assert find_wheel("2.20.0") == str(wheels / "tf_fftconv-0.1.0+tf2.20.0-py3-none-linux_x86_64.whl")
    assert "skipping" in capsys.readouterr().out
    assert find_wheel("2.19.0") is None  # none built for it: the cell builds from source
