#!/usr/bin/env bash
# Builds the standalone kernel check into build/kernel_check (repository root) and optionally runs it.
#   cuda/tests/run.sh                 build only (ARCH=sm_90 by default)
#   ARCH=sm_80 cuda/tests/run.sh      build for another GPU
#   cuda/tests/run.sh --quick|--time|--all   build, then run with these flags
set -euo pipefail
cd "$(dirname "$0")/../.."
ARCH="${ARCH:-sm_90}"
NVCC="${NVCC:-nvcc}"
mkdir -p build
"$NVCC" -std=c++17 -O3 --expt-relaxed-constexpr -gencode "arch=compute_${ARCH#sm_},code=${ARCH}" \
  -o build/kernel_check cuda/tests/kernel_check.cu cuda/rfft2d.cu cuda/irfft2d.cu cuda/spectral_matmul.cu \
  cuda/errors.cu cuda/device_info.cu
if [ "$#" -gt 0 ]; then
  build/kernel_check "$@"
fi
