#!/usr/bin/env bash
# Tuning builds: kernel_check linked against FFT / matmul objects compiled with alternative block shapes
# (see FftShape in cuda/fft_common.cuh) and matmul tile options. Binaries: build/variants/kc_<name>.
#   cuda/tests/build_variants.sh && for b in build/variants/kc_*; do $b --time-fft; done
set -euo pipefail
cd "$(dirname "$0")/../.."
ARCH="${ARCH:-sm_90}"
NVCC=(nvcc -std=c++17 -O3 --expt-relaxed-constexpr -gencode "arch=compute_${ARCH#sm_},code=${ARCH}")
D=build/variants
mkdir -p "$D"
"${NVCC[@]}" -c cuda/tests/kernel_check.cu -o "$D/kc.o" &
"${NVCC[@]}" -c cuda/errors.cu -o "$D/errors.o" &
"${NVCC[@]}" -c cuda/device_info.cu -o "$D/device_info.o" &
"${NVCC[@]}" -c cuda/spectral_matmul.cu -o "$D/mm_default.o" &
wait
declare -A FFT=(
  [n0_default]=""
  [n1_f3_i2]="-DFFTCONV_SHAPE_float_32_FWD=10803 -DFFTCONV_SHAPE_float_32_INV=21602"
  [n2_lanes2]="-DFFTCONV_SHAPE_float_32_FWD=20804 -DFFTCONV_SHAPE_float_32_INV=20804 -DFFTCONV_SHAPE_float_16_FWD=21604 -DFFTCONV_SHAPE_float_16_INV=21604"
  [n3_mixed]="-DFFTCONV_SHAPE_float_32_FWD=21602 -DFFTCONV_SHAPE_float_32_INV=11603 -DFFTCONV_SHAPE_float_64_FWD=40402 -DFFTCONV_SHAPE_float_64_INV=40402"
)
for name in "${!FFT[@]}"; do
  ( "${NVCC[@]}" ${FFT[$name]} -c cuda/rfft2d.cu -o "$D/rfft_$name.o" &&
    "${NVCC[@]}" ${FFT[$name]} -c cuda/irfft2d.cu -o "$D/irfft_$name.o" &&
    "${NVCC[@]}" -o "$D/kc_$name" "$D/kc.o" "$D/errors.o" "$D/device_info.o" "$D/mm_default.o" \
      "$D/rfft_$name.o" "$D/irfft_$name.o" ) &
done
declare -A MM=()
wait
for name in "${!MM[@]}"; do
  ( "${NVCC[@]}" ${MM[$name]} -c cuda/spectral_matmul.cu -o "$D/mm_$name.o" &&
    "${NVCC[@]}" -o "$D/kc_$name" "$D/kc.o" "$D/errors.o" "$D/device_info.o" "$D/mm_$name.o" \
      "$D/rfft_n0_default.o" "$D/irfft_n0_default.o" ) &
done
wait
ls -la "$D"/kc_*
