#!/usr/bin/env bash
# Tuning session on the GPU host: quick correctness + FFT and matmul timings of every variant
# (make kernel-variants: build/variants/kc_*), and an Nsight Compute profile of the default build
# (make kernel-check: build/kernel_check). Logs go to $OUT (default: build/gpu_logs).
#   tools/tune.sh                      builds both first for DEV_ARCH (default 90)
#   PROFILE=--profile-fft tools/tune.sh   profiles the six transforms of Mathieu's step instead of
#                                      the products (the kernel check's --profile)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-build/gpu_logs}"
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin"
make kernel-check kernel-variants DEV_ARCH="${DEV_ARCH:-90}" 2>&1 | tail -20
{
  echo "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)  $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  for b in build/variants/kc_*; do
    echo "== $b"
    timeout 60 "$b" --quick --failures-only | tail -1
    timeout 150 "$b" --time-fft
  done
  for b in build/variants/kc_*; do
    echo "== $b"
    timeout 60 "$b" --time | grep -E "matmul"
  done
} 2>&1 | tee "$OUT/variants.log"
timeout "${NCU_TIMEOUT:-150}" ncu --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  build/kernel_check "${PROFILE:---profile}" > "$OUT/ncu.log" 2>&1
echo "ncu exit: $?" | tee -a "$OUT/ncu.log"
grep -E "Kernel|Duration|Throughput|Achieved Occupancy|Registers Per|Block Limit|bank_conflicts|inst_executed|dram__bytes|Stall|Warp Cycles Per Issued" "$OUT/ncu.log" | head -120
