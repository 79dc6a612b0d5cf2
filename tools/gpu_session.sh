#!/usr/bin/env bash
# Everything that needs the GPU host, in one script: correctness on the GPU (pytest -m gpu),
# compute-sanitizer over the ops inside TensorFlow and over the standalone kernel check, the benchmark,
# and the Fashion-MNIST reproduction. Run on a GPU host whose python3 imports TensorFlow 2.21, with the
# library built (or `build` makes it) and the Fashion-MNIST IDX files in $DATA_DIR (.data/fashion-mnist):
#
#   COMMIT=<sha> bash tools/gpu_session.sh [STEP ...]
#
# On a host that should not build (device time is short), `bash tools/prebuilt.sh unpack` first
# and SKIP_BUILD=1: `build` then keeps the library there and `kernels` the kernel check.
# STEP: one or more of the following (default: info build tests sanitize bench bench-xla reproduce):
#   info, build        the host and the library
#   tests, sanitize    pytest -m gpu ($TESTS: files or -k selections, default all of tests/);
#                      compute-sanitizer over the ops inside TensorFlow
#   wheel              the wheel in dist/ (make wheel) installed into a fresh venv with no compiler
#                      on PATH, then tests/installed_wheel_check.py and pytest -m gpu ($WHEEL_TESTS,
#                      default all of tests/) against it, from a copy of the checkout without the
#                      package
#   kernels            tools/gpu_check.sh (the standalone kernel check and its sanitizer runs)
#   bench, bench-xla   the benchmark; every train step under XLA and the Keras step of a convnet
#                      (the forward alone under XLA: the step forward)
#   forward            Mathieu's layer (conv2d and fft, forward and train) one step per call and
#                      $FORWARD_STEPS (4) steps per call (--steps-per-call: the call's host cost
#                      shared), each without and with XLA
#   bench-tf32off      Mathieu's layer with TensorFlow's TF32 switch off (FP32 products, cuDNN's
#                      FP32 kernels)
#   reproduce          the Fashion-MNIST reproduction under Keras' defaults
#   bench-large        the depthwise, grouped, dilated and strided cases (presets depthwise and
#                      strided) in train mode, eagerly and under XLA (tf.nn.depthwise_conv2d and
#                      tf.nn.conv2d in the same runs; peak memory per call)
#   reproduce-large    the reproduction of the large-kernel ConvNet against its DepthwiseConv2D twin
#                      ($LARGE_EPOCHS epochs, default 3; $LARGE_SEEDS paired seeds, default 1)
#   xla-off            the reproduction with XLA off for both models ($SHORT_EPOCHS epochs, default 5)
#   steps              the reproduction with --steps-per-execution $STEPS_PER_EXECUTION (32), for
#                      $SHORT_EPOCHS epochs
#   xla-steps          where the LeNet step's time goes under XLA (command buffers, the host)
#   half               the float16 / bfloat16 kernel check and benchmark
#   half-accuracy      float16 / bfloat16 errors on a trained LeNet's activations, ours and conv2d's
#   mixed              the reproduction under mixed_float16
#   grid, grid-xla     the benchmark's grid (conv2d, the FFT path, auto, auto after timing; issue
#                      10's cases), eagerly / under XLA; GRID_CASES, GRID_IMPLS and GRID_NAME (the
#                      files' name) for others, e.g. a part of the grid
#   frames             frames that are not powers of two: Mathieu's SAME layer in $FRAME_SIZES
#                      frames (default 40 and 48), and auto
#   concurrency        tools/concurrency_probe.py: concurrent calls of TensorFlow's ops and ours, each
#                      in cold processes of their own, eagerly and through tf.functions
# On a host with two GPUs the tests include MirroredStrategy. Logs go to
# $WORK (build/gpu_session); after each step they are packed into $OUT/gpu_session.tar.gz so that a
# run cut short still brings back what it did.
set -uo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-build/gpu_session}
OUT=${OUT:-$WORK}
mkdir -p "$WORK" "$OUT"
BASE_PYTHONPATH=${PYTHONPATH:-}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TF_FFTCONV_COMMIT="${COMMIT:-}" PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2} PATH="$PATH:/usr/local/cuda/bin"
steps=${*:-info build tests sanitize bench bench-xla reproduce}
pack() { tar -czf "$OUT/gpu_session.tar.gz" -C "$WORK" . 2>/dev/null; }
log() { echo "== $(date -u +%H:%M:%S) $*"; }

for step in $steps; do
  case $step in
    info)
      log info
      { nvidia-smi; echo "commit ${COMMIT:-unknown}"; python3 -c 'import tensorflow as tf; print("TensorFlow", tf.__version__, tf.config.list_physical_devices("GPU"))'; } 2>&1 | tee "$WORK/info.log" ;;
    build)
      log build
      if [ ! -f tf_fftconv/_fftconv_ops.so ]; then make dev 2>&1 | tail -5; fi
      python3 -c 'import tf_fftconv as fc; print(fc.build_info())' 2>&1 | tee "$WORK/build.log" ;;
    tests)
      log "pytest -m gpu"
      timeout "${TESTS_TIMEOUT:-420}" python3 -m pytest -m gpu -q -p no:cacheprovider ${TESTS:-tests} 2>&1 | tee "$WORK/pytest_gpu.log" | tail -25 ;;
    sanitize)
      for tool in ${SANITIZER_TOOLS:-memcheck racecheck}; do
        log "compute-sanitizer --tool $tool (ops inside TensorFlow)"
        TF_GPU_ALLOCATOR=cuda_malloc_async timeout 240 compute-sanitizer --tool $tool --error-exitcode 3 \
          python3 tests/gpu_sanitize_ops.py > "$WORK/sanitizer_tf_$tool.log" 2>&1
        echo "exit status: $?" >> "$WORK/sanitizer_tf_$tool.log"
        grep -E "ERROR SUMMARY|RACECHECK SUMMARY|worst relative|exit status|disagree" "$WORK/sanitizer_tf_$tool.log" | tail -5
        # The summary counts CUDA API calls that returned an error with the kernels' errors; name them
        # (XLA's own constant lookup has made such calls, which are not the kernels').
        grep -o 'Program hit .* on CUDA API call to [A-Za-z0-9_]*' "$WORK/sanitizer_tf_$tool.log" | sort | uniq -c
      done ;;
    wheel)
      log "the wheel: installed into a fresh venv, then checked from outside the checkout"
      place=$(mktemp -d) work=$(cd "$WORK" && pwd)
      python3 -m venv --system-site-packages "$place/venv" 2>&1 | tail -3
      # Where python3 is itself a venv, --system-site-packages reaches only the base interpreter's
      # packages: a .pth file gives the new venv those of python3 (TensorFlow's needs, pytest).
      python3 -c 'import site; print("\n".join(site.getsitepackages()))' \
        > "$("$place/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/host_packages.pth"
      start=$(date +%s%N)
      env PATH="$place/venv/bin" PYTHONPATH="$BASE_PYTHONPATH" PIP_NO_INDEX=1 "$place/venv/bin/python" -m pip install -q --no-index \
        --no-deps dist/tf_fftconv-*.whl 2>&1 | tail -3
      echo "installed $(ls dist/tf_fftconv-*.whl) in $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee "$WORK/wheel.log"
      # A copy of the checkout without the package (tests read headers and tools from it, and put
      # its root on PYTHONPATH): every import of tf_fftconv then finds the installed wheel.
      mkdir "$place/src"
      tar -cf - --exclude=./tf_fftconv --exclude=./build --exclude=./dist --exclude=./.git \
        --exclude=./.gpu --exclude=./.data . | tar -xf - -C "$place/src"
      # The TensorFlow of /tmp/tfenv only: the checkout is not on the path.
      ( cd "$place/src" && export PYTHONPATH="$BASE_PYTHONPATH" PATH="$place/venv/bin:/usr/bin:/bin"
        python -c 'import tf_fftconv as fc; print(fc.__file__, fc.build_info())'
        python "$OLDPWD/tests/installed_wheel_check.py"
        timeout "${WHEEL_TESTS_TIMEOUT:-480}" python -m pytest -m gpu -q -p no:cacheprovider \
          ${WHEEL_TESTS:-tests} 2>&1 | tee "$work/wheel_pytest_gpu.log" | tail -8
      ) 2>&1 | grep -v "^[IWE]0000" | tee -a "$WORK/wheel.log" | tail -30 ;;
    kernels)
      log "standalone kernel check + sanitizer"
      OUT="$WORK/kernels" bash tools/gpu_check.sh 2>&1 | tail -30 ;;
    bench)
      log bench
      timeout 420 python3 -m tf_fftconv.bench --json "$WORK/bench.json" --plot "$WORK/bench.png" --no-progress 2>&1 | tee "$WORK/bench.log" | tail -40 ;;
    bench-tf32off)
      log "bench --tf32 off"
      timeout 300 python3 -m tf_fftconv.bench --cases "${TF32OFF_CASES:-128:96:256:32:7}" --modes forward,train \
        --impl conv2d,fft --tf32 off --json "$WORK/bench_tf32off.json" --no-progress 2>&1 | tee "$WORK/bench_tf32off.log" | tail -8 ;;
    bench-xla)
      log "bench --xla --model convnet7"
      timeout 420 python3 -m tf_fftconv.bench --xla --cases "${XLA_CASES:-mathieu,lenet}" --modes train --model convnet7 \
        --json "$WORK/bench_xla.json" --no-progress 2>&1 | tee "$WORK/bench_xla.log" | tail -25 ;;
    reproduce)
      log reproduce
      timeout 540 python3 -m tf_fftconv.reproduce --dataset "idx:${DATA_DIR:-.data/fashion-mnist}" --epochs "${EPOCHS:-10}" \
        --seeds "${SEEDS:-3}" --json "$WORK/reproduce.json" 2>&1 | tee "$WORK/reproduce.log" | tail -30 ;;
    bench-large)
      for xla in "" --xla; do
        name=bench_large${xla:+_xla}
        log "bench ${xla:-(no XLA)} --cases ${LARGE_CASES:-depthwise,strided}"
        timeout "${LARGE_TIMEOUT:-240}" python3 -m tf_fftconv.bench $xla --cases "${LARGE_CASES:-depthwise,strided}" \
          --modes train --impl "${LARGE_IMPLS:-conv2d,fft,auto}" --json "$WORK/$name.json" --no-progress 2>&1 \
          | tee "$WORK/$name.log" | grep -v "^[IWE]0000" | tail -30
      done ;;
    reproduce-large)
      log "reproduce --model largekernel"
      timeout "${LARGE_TIMEOUT:-300}" python3 -m tf_fftconv.reproduce --model largekernel \
        --dataset "idx:${DATA_DIR:-.data/fashion-mnist}" --epochs "${LARGE_EPOCHS:-3}" \
        --seeds "${LARGE_SEEDS:-1}" --json "$WORK/reproduce_largekernel.json" 2>&1 \
        | tee "$WORK/reproduce_largekernel.log" | tail -16 ;;
    xla-steps)
      # Where the LeNet step's time goes under XLA: the Keras train step of both models with XLA's
      # command buffers (CUDA graphs) as by default, with our custom calls kept out of them
      # (TF_FFTCONV_XLA_COMMAND_BUFFERS=0), with command buffers off for both, and at batch 8
      # (what a step costs the host); then short reproductions with and without.
      for setting in default ours-out all-off batch8; do
        log "Keras LeNet step under XLA: $setting"
        case $setting in
          default) env=() extra=() ;;
          ours-out) env=(TF_FFTCONV_XLA_COMMAND_BUFFERS=0) extra=() ;;
          all-off) env=(XLA_FLAGS=--xla_gpu_enable_command_buffer=) extra=() ;;
          batch8) env=() extra=(--model-batch 8) ;;
        esac
        env "${env[@]}" timeout 240 python3 -m tf_fftconv.bench --xla --cases lenet --modes train \
          --model lenet "${extra[@]}" --json "$WORK/lenet_step_$setting.json" --no-progress 2>&1 \
          | tee "$WORK/lenet_step_$setting.log" | tail -8
      done
      for setting in default ours-out; do
        log "reproduce, ${XLA_STEP_EPOCHS:-3} epochs: $setting"
        env $([ $setting = ours-out ] && echo TF_FFTCONV_XLA_COMMAND_BUFFERS=0) timeout 240 \
          python3 -m tf_fftconv.reproduce --dataset "idx:${DATA_DIR:-.data/fashion-mnist}" \
          --epochs "${XLA_STEP_EPOCHS:-3}" --json "$WORK/reproduce_$setting.json" 2>&1 \
          | tee "$WORK/reproduce_$setting.log" | tail -9
      done ;;
    half)
      # Half precision: the standalone check of the float16 / bfloat16 kernels, then the benchmark of
      # Mathieu's layer in each half type against tf.nn.conv2d in the same type.
      log "half precision"
      if [ -x build/kernel_check ]; then
        timeout 120 build/kernel_check --half > "$WORK/kernel_check_half.log" 2>&1
        echo "exit status: $?" >> "$WORK/kernel_check_half.log"; tail -4 "$WORK/kernel_check_half.log"
      fi
      for dtype in float16 bfloat16; do
        timeout 150 python3 -m tf_fftconv.bench --cases "${HALF_CASES:-128:96:256:32:7}" --modes train \
          --impl conv2d,fft --dtype $dtype --json "$WORK/bench_$dtype.json" --no-progress 2>&1 \
          | tee "$WORK/bench_$dtype.log" | tail -4
      done ;;
    concurrency)
      # TensorFlow's own ops (the control) and ours, each in processes of their own, so that every
      # run is a cold start: $CONCURRENCY_RUNS runs of each eagerly (sizes as Python numbers and
      # made on the host), then $CONCURRENCY_FUNCTION_RUNS of each through tf.functions.
      log "concurrent calls: TensorFlow's ops and ours, each in its own cold processes"
      : > "$WORK/concurrency.log"
      for run in $(seq "${CONCURRENCY_RUNS:-4}"); do
        for ops in tf ours; do
          for sizes in "" --host-sizes; do
            timeout 90 python3 tools/concurrency_probe.py --ops $ops $sizes --threads 8 \
              --calls "${CONCURRENCY_CALLS:-300}" 2>&1 | grep -v "^[IWE]0000" >> "$WORK/concurrency.log"
          done
        done
      done
      for run in $(seq "${CONCURRENCY_FUNCTION_RUNS:-2}"); do
        for ops in tf ours; do
          timeout 90 python3 tools/concurrency_probe.py --ops $ops --function --threads 8 \
            --calls "${CONCURRENCY_CALLS:-300}" 2>&1 | grep -v "^[IWE]0000" >> "$WORK/concurrency.log"
        done
      done
      grep SUMMARY "$WORK/concurrency.log" | sort | uniq -c ;;
    half-accuracy)
      log "half precision on a trained LeNet's activations"
      timeout 240 python3 -m tf_fftconv.experiments.half_accuracy --dataset "idx:${DATA_DIR:-.data/fashion-mnist}" \
        --json "$WORK/half_accuracy.json" 2>&1 | tee "$WORK/half_accuracy.log" | tail -16 ;;
    forward)
      for xla in "" --xla; do
        for steps in 1 "${FORWARD_STEPS:-4}"; do
          name=forward_steps$steps${xla:+_xla}
          log "bench ${xla:-(no XLA)} --steps-per-call $steps"
          timeout 200 python3 -m tf_fftconv.bench $xla --cases "${FORWARD_CASES:-128:96:256:32:7}" \
            --modes forward,train --impl conv2d,fft --steps-per-call "$steps" \
            --json "$WORK/$name.json" --no-progress 2>&1 | tee "$WORK/$name.log" | tail -6
        done
      done ;;
    frames)
      log "frames: Mathieu's layer with SAME padding in frames of ${FRAME_SIZES:-40 48} (38 samples needed)"
      frame_cases=${FRAME_CASES:-128:96:256:32:7:same,128:96:256:32:5:same}
      for size in ${FRAME_SIZES:-40 48}; do
        timeout 150 python3 -m tf_fftconv.bench --cases "$frame_cases" \
          --modes forward,train --impl conv2d,fft --fft-size $size --json "$WORK/bench_frames_$size.json" \
          --no-progress 2>&1 | tee "$WORK/bench_frames_$size.log" | tail -8
      done
      timeout 150 python3 -m tf_fftconv.bench --cases "$frame_cases" \
        --modes train --impl conv2d,auto --json "$WORK/bench_frames_auto.json" --no-progress 2>&1 \
        | tee "$WORK/bench_frames_auto.log" | tail -6 ;;
    grid|grid-xla)
      xla=$([ "$step" = grid-xla ] && echo --xla) name=${GRID_NAME:-grid}${xla:+_xla}
      log "bench ${xla:-(no XLA)} --cases ${GRID_CASES:-grid}"
      timeout "${GRID_TIMEOUT:-580}" python3 -m tf_fftconv.bench $xla --cases "${GRID_CASES:-grid}" --modes train \
        --impl "${GRID_IMPLS:-conv2d,fft,auto,tuned}" --json "$WORK/$name.json" --no-progress 2>&1 \
        | tee "$WORK/$name.log" | grep -v "^[IWE]0000" | tail -50 ;;
    mixed)
      log "reproduce --precision mixed_float16"
      timeout 400 python3 -m tf_fftconv.reproduce --dataset "idx:${DATA_DIR:-.data/fashion-mnist}" \
        --epochs "${EPOCHS:-10}" --seeds "${SEEDS:-3}" --precision mixed_float16 \
        --json "$WORK/reproduce_mixed_float16.json" 2>&1 | tee "$WORK/reproduce_mixed_float16.log" | tail -12 ;;
    steps)
      log "reproduce --steps-per-execution ${STEPS_PER_EXECUTION:-32}"
      timeout 300 python3 -m tf_fftconv.reproduce --dataset "idx:${DATA_DIR:-.data/fashion-mnist}" \
        --epochs "${SHORT_EPOCHS:-5}" --steps-per-execution "${STEPS_PER_EXECUTION:-32}" \
        --json "$WORK/reproduce_steps${STEPS_PER_EXECUTION:-32}.json" 2>&1 \
        | tee "$WORK/reproduce_steps${STEPS_PER_EXECUTION:-32}.log" | tail -9 ;;
    xla-off)
      log "reproduce --jit-compile off"
      timeout 300 python3 -m tf_fftconv.reproduce --dataset "idx:${DATA_DIR:-.data/fashion-mnist}" \
        --epochs "${SHORT_EPOCHS:-5}" --jit-compile off --json "$WORK/reproduce_jitcompileoff.json" 2>&1 \
        | tee "$WORK/reproduce_jitcompileoff.log" | tail -9 ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  pack
done
