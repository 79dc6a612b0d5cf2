#!/usr/bin/env bash
# One-shot GPU session for the CUDA kernels: correctness suite, timings, compute-sanitizer
# (memcheck, racecheck, synccheck on the --quick suite; racecheck one family at a time). Logs go to
# $OUT (default: build/gpu_logs).
#   tools/gpu_check.sh                 builds build/kernel_check first (make kernel-check, DEV_ARCH=90)
#   DEV_ARCH=80 tools/gpu_check.sh     for another GPU
#   CHECK_PARTS="check timing" tools/gpu_check.sh, then CHECK_PARTS="half sanitize"
#                                      the parts one at a time (default: all of them, in order:
#                                      check timing half sanitize), so that each command
#                                      fits a time limit (racecheck of the quick FFT family alone
#                                      took 100 s on the H200)
#   KERNEL_CHECK=<binary> tools/gpu_check.sh   checks that build instead (not built here), e.g. one
#                                      that tools/kernel_turns.sh brought
#   SAN_FAMILIES="fft" tools/gpu_check.sh   the sanitizers over those families only (default: memcheck
#                                      and synccheck of all, racecheck of each family)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-build/gpu_logs}"
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin"
header() {
  echo "# $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
  echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC')  $(nvcc --version 2>/dev/null | tail -1)"
}
# SKIP_BUILD=1 runs the build/kernel_check that is there (built elsewhere and copied here).
KC=${KERNEL_CHECK:-build/kernel_check}
[ "${SKIP_BUILD:-0}" = 1 ] || [ -n "${KERNEL_CHECK:-}" ] || make kernel-check DEV_ARCH="${DEV_ARCH:-90}" 2>&1 | tail -20
SEED="${SEED:-$(date +%s)}"
PARTS=" ${CHECK_PARTS:-check timing half sanitize} "
part() { [[ $PARTS == *" $1 "* ]]; }
part check && { header; timeout "${CHECK_TIMEOUT:-150}" "$KC" --seed "$SEED"; echo "exit status: $?"; } 2>&1 | tee "$OUT/kernel_check.log" | grep -E "FAIL|SUMMARY|exit status|device:" | head -60
part timing && { header; timeout "${TIME_TIMEOUT:-150}" "$KC" --time --seed "$SEED"; timeout "${TIME_TIMEOUT:-150}" "$KC" --time-fft; timeout "${TIME_TIMEOUT:-150}" "$KC" --time-chain; echo "exit status: $?"; } 2>&1 | tee "$OUT/timing.log"
part half && { header; timeout "${CHECK_TIMEOUT:-150}" "$KC" --half --seed "$SEED"; echo "exit status: $?"; } 2>&1 | tee "$OUT/kernel_check_half.log" | grep -E "FAIL|SUMMARY|exit status" | head -30
# racecheck tracks every shared-memory access and ran past 100 s on the whole --quick suite, so it
# runs one family at a time ($RACECHECK_FAMILIES), each within its own $SAN_TIMEOUT (default 200 s:
# on the H200 racecheck of the quick FFT family took 100 s at 5745c0e, of the matmul family 104 s).
sanitize() {  # TOOL FAMILY
  echo "== compute-sanitizer --tool $1 $KC --quick --failures-only --family $2"
  timeout "${SAN_TIMEOUT:-200}" compute-sanitizer --tool "$1" --error-exitcode 3 "$KC" --quick --failures-only --family "$2" --seed "$SEED" 2>&1 | tail -25
  echo "exit status: ${PIPESTATUS[0]}"
}
part sanitize && {
  header
  for family in ${SAN_FAMILIES:-all}; do sanitize memcheck "$family"; done
  for family in ${SAN_FAMILIES:-${RACECHECK_FAMILIES:-matmul fft half}}; do sanitize racecheck "$family"; done
  for family in ${SAN_FAMILIES:-all}; do sanitize synccheck "$family"; done
} 2>&1 | tee "$OUT/sanitizer.log" | grep -E "==|ERROR|SUMMARY|exit status|FAIL" | head -60
# The parts report their own exit status in their logs; the script itself succeeds once they ran.
exit 0
