#!/usr/bin/env bash
# Kernel-check builds side by side on the GPU host: the build under test checked and sanitized
# (tools/gpu_check.sh), and every build timed in turns (round 1 of each build, then round 2, ...) so
# that the GPU's clocks and temperature drift alike over all of them, and profiled by Nsight Compute.
# Run from the repository's root.
#
#   here:  tools/kernel_turns.sh pack DIR NAME=BINARY ...
#            copies each kernel-check build (make kernel-check: build/kernel_check; a scratch
#            build's or another commit's build/kernel_check) to
#            DIR/kc_NAME.xz, compressed to fit a call's carry, and their order to DIR/builds; the
#            first NAME is the build under test
#   host:  OUT=<logs> tools/kernel_turns.sh run DIR PART ...
#            check  the whole kernel check and its half-precision families, of the build under test
#            san    compute-sanitizer memcheck, racecheck and synccheck of the build under test's
#                   quick families $SAN_FAMILIES (default fft)
#            fft    --time-fft of every build, $ROUNDS rounds (default 3) in turns
#            chain  --time-chain of every build, $ROUNDS rounds in turns
#            ncu    Nsight Compute (warp states, source counters, speed of light, memory) of the
#                   transforms $PROFILE of Mathieu's step (any of x, y, dx; default "x dx"; x64: x in a
#                   64 frame) in every build of $PROFILE_BUILDS (default all)
# Each part writes its log to $OUT (default build/gpu_logs) and prints its key lines, so that what a
# call's output brings back holds the result even where a file is left behind.
set -uo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,/^set /{/^set /!p}' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
action=$1 dir=$2
shift 2

if [ "$action" = pack ]; then
  mkdir -p "$dir"
  : > "$dir/builds"
  for spec in "$@"; do
    name=${spec%%=*} binary=${spec#*=}
    [ "$name" != "$spec" ] && [ -x "$binary" ] || { echo "pack: $spec is not NAME=<executable>" >&2; exit 2; }
    xz -T0 -c "$binary" > "$dir/kc_$name.xz"
    echo "$name" >> "$dir/builds"
  done
  ls -la "$dir"
  exit 0
fi
[ "$action" = run ] || usage

OUT=${OUT:-build/gpu_logs}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin"
read -r -a builds < <(tr '\n' ' ' < "$dir/builds")
for b in "${builds[@]}"; do
  [ -x "$dir/kc_$b" ] || { xz -d -c "$dir/kc_$b.xz" > "$dir/kc_$b" && chmod +x "$dir/kc_$b"; }
done
under_test="$dir/kc_${builds[0]}"
echo "# builds in turns: ${builds[*]} (under test: ${builds[0]}); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# Nsight Compute's kernel selection for each transform that --profile-fft launches: x is the first
# forward, y and dx the first and second pipelined inverses.
declare -A selection=(
  [x]="--kernel-name regex:Rfft2dPipelined --launch-count 1"
  [y]="--kernel-name regex:Irfft2dPipelined --launch-count 1"
  [dx]="--kernel-name regex:Irfft2dPipelined --launch-skip 1 --launch-count 1"
  [x64]="--kernel-name regex:Rfft2dKernel --launch-count 1"
)
profile() {  # BUILD TRANSFORM
  local report="/tmp/ncu_$2_$1"
  # shellcheck disable=SC2086  # the selection is several arguments
  timeout 150 ncu --clock-control none ${selection[$2]} --section WarpStateStats --section SourceCounters \
    --section SpeedOfLight --section MemoryWorkloadAnalysis -f -o "$report" "$dir/kc_$1" --profile-fft > /dev/null 2>&1
  ncu -i "$report.ncu-rep" --page details > "$OUT/ncu_$2_$1.txt" 2>&1
  ncu -i "$report.ncu-rep" --page source --print-source sass --csv 2>&1 | xz > "$OUT/ncu_$2_$1_sass.csv.xz"
  echo "== $2 in $1"
  grep -E "Duration|Warp Cycles Per Issued|L2 Cache Throughput|DRAM Throughput" "$OUT/ncu_$2_$1.txt"
}

for part in "$@"; do
  case $part in
    check)
      KERNEL_CHECK=$under_test CHECK_PARTS="check half" OUT=$OUT bash tools/gpu_check.sh ;;
    san)
      KERNEL_CHECK=$under_test CHECK_PARTS=sanitize SAN_FAMILIES=${SAN_FAMILIES:-fft} OUT=$OUT bash tools/gpu_check.sh ;;
    fft | chain)
      for round in $(seq "$ROUNDS"); do
        for b in "${builds[@]}"; do
          echo "== $b round $round"
          timeout 150 "$dir/kc_$b" --time-$part
        done
      done > "$OUT/timing_$part.log" 2>&1
      # The NHWC transforms of 128 images at S = 32 (fft: Mathieu's x, y, dy, dx and the 26 x 26
      # forward of 96 channels; a forward names S after the shape, an inverse before it; the first
      # time of each in a round, since --time-fft times some again further on) or his dependent step
      # (chain), each build and round.
      grep -E "^==|dependent=1|NHWC (\[128,[0-9,]+\] S=32|S=32 -> \[128,)" "$OUT/timing_$part.log" |
        awk -F: '/^==/ { delete seen; print; next } !seen[$1]++' | cut -c1-170 ;;
    ncu)
      for b in ${PROFILE_BUILDS:-${builds[*]}}; do
        for t in ${PROFILE:-x dx}; do profile "$b" "$t"; done
      done ;;
    *) echo "unknown part: $part" >&2; usage ;;
  esac
done
