"""The forward transforms' NHWC stage layout (PixelMajorStage in cuda/fft_stages.cuh), checked on
the host: `make stage-layout-check` builds cuda/tests/stage_layout_check.cu with nvcc (host code only,
no GPU needed) with the configurations of cuda/kernel_config.h.
The program checks, for every forward block shape, that each stage row's columns are a permutation
that keeps the leading columns and the lanes, that the row pass's pointers find each value where the
copies put it, that a warp's row-pass loads hit 32 distinct banks, and the alignment of rows and
16-byte quads; for the shapes whose NHWC stage a tensor copy fills (TensorCopyStage), that each of
a warp's two row-pass loads reads its job's rows on 32 distinct banks; for every inverse block shape
that takes the pipelined strategy, that the inverse's pixel-major NHWC stage (InverseStageAt) puts each warp's
row-pass stores on 32 distinct banks with its quads 16-byte aligned; that the NHWC copy loops' PixelWalk agrees with division; that the pipelined strategy's copy pieces
(CopyPiece) visit each thread's indices of the whole copy loop, once and in order."""

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# The check is host code, but it includes cuda/fft_stages.cuh, whose device functions use CUDA's
# built-ins (threadIdx, __syncthreads, __cvta_generic_to_shared, ...) and the toolkit's headers
# (cuda_runtime.h, cuda_fp16.h): a host compiler alone stops at the first of them (g++ 12:
# "'__float_as_uint' was not declared in this scope"), so only nvcc builds it.
NO_NVCC = ("nvcc is not installed: the check includes cuda/fft_stages.cuh, whose device code and "
           "CUDA headers only nvcc compiles (no GPU is needed to run it)")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason=NO_NVCC)
def test_stage_layout_holds_for_every_forward_shape(tmp_path):
    binary = tmp_path / "stage_layout_check"
    built = subprocess.run(
        ["make", "--no-print-directory", "-B", "stage-layout-check", f"BUILD={tmp_path}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    done = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout
    assert "0 failures" in done.stdout
    # The 32 frame's forward (Mathieu's layer) is among the shapes, its stage swizzled.
    assert any(line.startswith("S=32 ") and "swizzled" in line for line in done.stdout.splitlines())
    # The inverse's stage of Mathieu's layer (the 32 frame's pipelined strategy), and the pixel walk.
    assert any(line.startswith("S=32 ") and "inverse pixel-major" in line for line in done.stdout.splitlines())
    # The tensor copies' column-major stage of the 32 frame's forward (one lane, 8 images: two
    # pairs per 128-byte line, the second half of each warp's jobs swapped).
    assert any(line.startswith("S=32 ") and "tensor-copy column-major stage, 2 pairs" in line
               for line in done.stdout.splitlines())
    assert "walks checked against division" in done.stdout
    assert "copy loops checked against the whole loop" in done.stdout
