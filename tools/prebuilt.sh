#!/usr/bin/env bash
# Moves what was built on one machine to a GPU host that runs it without building: the op library
# (make dev), its build info, the kernel check (make kernel-check) and any other builds named (such
# as build/cpu_kernel_check), compressed into build/prebuilt/ (git-ignored, a few MB each) under
# their own paths.
#   bash tools/prebuilt.sh pack [build/... ...]     on the machine that built them
#   bash tools/prebuilt.sh unpack                   on the GPU host, in the same tree
# then SKIP_BUILD=1 bash tools/gpu_session.sh ... runs them there.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=build/prebuilt
case "${1:-}" in
  pack)
    shift
    for f in tf_fftconv/_fftconv_ops.so tf_fftconv/_build_info.json build/kernel_check "$@"; do
      [ -f "$f" ] || { echo "prebuilt: $f is missing: build it first (see the Makefile's header)" >&2; exit 2; }
      case $f in /*|*..*) echo "prebuilt: $f: name builds by their path in the tree (build/...)" >&2; exit 2 ;; esac
    done
    rm -rf "$DIR" && mkdir -p "$DIR/files"
    xz -T0 -c tf_fftconv/_fftconv_ops.so > "$DIR/_fftconv_ops.so.xz"
    cp tf_fftconv/_build_info.json "$DIR/"
    xz -T0 -c build/kernel_check > "$DIR/kernel_check.xz"
    for f in "$@"; do mkdir -p "$DIR/files/$(dirname "$f")" && xz -T0 -c "$f" > "$DIR/files/$f.xz"; done
    du -sh "$DIR" ;;
  unpack)
    [ -f "$DIR/_fftconv_ops.so.xz" ] || { echo "prebuilt: nothing packed in $DIR" >&2; exit 2; }
    xz -d -c "$DIR/_fftconv_ops.so.xz" > tf_fftconv/_fftconv_ops.so
    cp "$DIR/_build_info.json" tf_fftconv/_build_info.json
    mkdir -p build && xz -d -c "$DIR/kernel_check.xz" > build/kernel_check && chmod +x build/kernel_check
    ls -la tf_fftconv/_fftconv_ops.so build/kernel_check
    (cd "$DIR/files" && find . -name '*.xz') | while read -r f; do
      out=${f#./}; out=${out%.xz}
      mkdir -p "$(dirname "$out")" && xz -d -c "$DIR/files/$f" > "$out" && chmod +x "$out" && echo "$out"
    done ;;
  *)
    echo "usage: bash tools/prebuilt.sh pack [build/... ...] | unpack" >&2
    exit 2 ;;
esac
