# tf_fftconv build: the one place where compile and link flags are written down (setup.py calls it;
# BUILD's copts for the Bazel build mirror CXXFLAGS; tools/ scripts call the targets below).
#
#   make build          the op library. With a GPU on this host (nvidia-smi -L or /dev/nvidia0) and
#                       nvcc: CUDA kernels for the GPUs this host shows (CUDA_ARCHS=all or a list:
#                       others). Without a GPU: the CPU kernels only, with a message (WITH_CUDA=1
#                       forces CUDA, for every architecture unless CUDA_ARCHS says otherwise)
#   make wheel          dist/tf_fftconv-<version>+tf<TensorFlow>-py3-none-<platform>.whl, installable
#                       with no compiler: CUDA kernels for WHEEL_ARCHS (default all: every one this
#                       nvcc builds) and the CPU kernels; WITH_CUDA=0, or no nvcc, for CPU kernels only
#   make cpu            CPU kernels only
#   make dev            CUDA for one architecture (DEV_ARCH, default 90): fast rebuilds while developing
#   make cuda-check     compile the CUDA sources, GPU OpKernels and kernel check for DEV_ARCH only,
#                       link nothing (what CI does to keep them building on a host without a GPU)
#   make kernel-check   the standalone CUDA kernel check, build/kernel_check, for DEV_ARCH
#                       (run it on a GPU host: tools/gpu_check.sh)
#   make stage-layout-check  the host-side check of the forward's NHWC stage layout (PixelMajorStage),
#                       and of the inverse's (InverseStageAt), and PixelWalk against division,
#                       build/stage_layout_check (no GPU: tests/test_stage_layout.py runs it)
#   make cpu-kernel-check  the standalone CPU kernel check and timer, build/cpu_kernel_check
#                       (cc/tests/cpu_kernel_check.cc with cc/cpu_kernels.cc; no TensorFlow library)
#   make setup          the Python requirements (TensorFlow only when no supported one is importable)
#                       and Debian's Fashion-MNIST where apt is usable
#   make test           setup, build, and the test suite (README's command)
#   make clean
#
# Compiles in parallel (JOBS, default: all cores); a -j on the command line wins.
# The library lands in tf_fftconv/ next to _build_info.json, which records the TensorFlow it was
# built against (the loader refuses another version with a "rebuild" message).

PYTHON    ?= python3
CXX       ?= g++
NVCC      ?= $(shell command -v nvcc 2>/dev/null)
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
# Architectures wanted (CUDA_ARCHS): unset, those of the GPUs this host shows (nvidia-smi's compute
# capability), or every one in ALL_ARCHS where it shows none; `all`, every one; or a list ("75 90").
# The ones this nvcc cannot build (e.g. 60/70 with CUDA >= 13, 100/120 before 12.8) are dropped with
# a message. PTX of the newest one is embedded too, so that the library runs on newer GPUs.
ALL_ARCHS := 60 70 75 80 86 89 90 100 120
CUDA_ARCHS ?=
DEV_ARCH  ?= 90
# auto: CUDA when nvcc is there and this host has a GPU; 1: CUDA (e.g. to build for another host); 0: CPU.
WITH_CUDA ?= auto

# Parallel by default; a -j on the command line overrides this, and sub-makes share the top one's jobs.
ifeq ($(MAKELEVEL),0)
  MAKEFLAGS += -j$(JOBS)
endif

LIB       := tf_fftconv/_fftconv_ops.so
INFO      := tf_fftconv/_build_info.json
BUILD     := build

# One Python start for all three TensorFlow facts (importing TensorFlow takes seconds).
define newline


endef
TF_FACTS  := $(shell $(PYTHON) -c 'import tensorflow as tf, tensorflow.sysconfig as c; print("TF_VERSION := " + tf.__version__ + "@@TF_CFLAGS := " + " ".join(c.get_compile_flags()) + "@@TF_LFLAGS := " + " ".join(c.get_link_flags()))' 2>/dev/null)
$(eval $(subst @@,$(newline),$(TF_FACTS)))

# The XLA lowering (cc/xla_lowering.cc) includes tf2xla headers, which need two more of TensorFlow's
# bundled header trees, and links the tf2xla symbols from libtensorflow_cc.
TF_INCLUDE := $(patsubst -I%,%,$(firstword $(filter -I%,$(TF_CFLAGS))))
CXXFLAGS  := -O3 -fPIC -Wall -Wno-sign-compare -Wno-unused-function -Wno-deprecated-declarations -Wno-interference-size -I. $(TF_CFLAGS) \
             -I$(TF_INCLUDE)/external/highwayhash -I$(TF_INCLUDE)/external/farmhash_archive/src
LDFLAGS   := -shared -Wl,--no-undefined
TF_LIBS   := $(TF_LFLAGS) -l:libtensorflow_cc.so.2
# nvcc flags of every CUDA build (library, kernel check); -gencode is added per target.
NVCC_BASE := -std=c++17 -O3 --expt-relaxed-constexpr -I.
gencode    = $(foreach a,$(1),-gencode arch=compute_$(a),code=sm_$(a))

HAVE_GPU  := $(shell (nvidia-smi -L 2>/dev/null | grep -q GPU || test -e /dev/nvidia0) && echo 1 || echo 0)
ifeq ($(WITH_CUDA),auto)
  ifeq ($(NVCC),)
    WITH_CUDA := 0
    CPU_REASON := nvcc not found: GPU kernels are not built
  else ifeq ($(HAVE_GPU),0)
    WITH_CUDA := 0
    CPU_REASON := no GPU on this host; 'make build WITH_CUDA=1' (all architectures) or 'make dev' (sm_$(DEV_ARCH)) builds the CUDA kernels too
  else
    WITH_CUDA := 1
  endif
endif

CC_OPS    := cc/ops.cc cc/xla_lowering.cc cc/cpu_kernels.cc
CC_GPU    := cc/ops_gpu.cc
CU_SRCS   := $(wildcard cuda/*.cu)
CC_OBJS   := $(CC_OPS:%.cc=$(BUILD)/%.o)
GPU_CC_OBJS := $(CC_GPU:%.cc=$(BUILD)/%.o)
CU_DEPS   := $(wildcard cuda/*.h cuda/*.cuh cuda/*.inc include/*.h)

ifeq ($(strip $(CUDA_ARCHS)),)
  # "9.0" -> 90, one line per GPU.
  GPU_ARCHS := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d '. ' | grep -E '^[0-9]+$$' | sort -un)
  ifneq ($(GPU_ARCHS),)
    WANTED_ARCHS := $(GPU_ARCHS)
    ARCH_REASON  := the GPUs of this host; CUDA_ARCHS=all builds every architecture
  else
    WANTED_ARCHS := $(ALL_ARCHS)
    ARCH_REASON  := no GPU shown by nvidia-smi, so every architecture; CUDA_ARCHS="..." picks some
  endif
else ifeq ($(strip $(CUDA_ARCHS)),all)
  WANTED_ARCHS := $(ALL_ARCHS)
  ARCH_REASON  := CUDA_ARCHS=all
else
  WANTED_ARCHS := $(CUDA_ARCHS)
  ARCH_REASON  := CUDA_ARCHS
endif

ifneq ($(NVCC),)
  NVCC_CODES := $(shell $(NVCC) --list-gpu-code 2>/dev/null | sed 's/sm_//')
  ARCHS     := $(filter $(NVCC_CODES),$(WANTED_ARCHS))
  DROPPED   := $(filter-out $(NVCC_CODES),$(WANTED_ARCHS))
  # A GPU newer than every architecture this nvcc builds runs the PTX of the newest one below it.
  ifeq ($(ARCHS),)
    ARCHS := $(lastword $(foreach a,$(NVCC_CODES),$(if $(shell test $(a) -le $(lastword $(WANTED_ARCHS)) && echo y),$(a))))
  endif
  NEWEST    := $(shell printf '%s\n' $(ARCHS) | sort -n | tail -1)
  # CUDA objects per architecture set, so that builds for different sets never mix objects.
  CU_DIR    := $(BUILD)/sm_$(subst $() $(),-,$(ARCHS))
  CU_OBJS   := $(CU_SRCS:cuda/%.cu=$(CU_DIR)/%.o)
endif

ifeq ($(WITH_CUDA),1)
  # nvcc may be a wrapper script: ask it where its toolkit is.
  CUDA_HOME ?= $(abspath $(shell $(NVCC) -dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$$ TOP=//p' | head -1))
  CUDART_STATIC ?= $(firstword $(wildcard $(CUDA_HOME)/lib64/libcudart_static.a \
                      $(CUDA_HOME)/targets/x86_64-linux/lib/libcudart_static.a $(CUDA_HOME)/lib/libcudart_static.a))
  GPU_OBJS  := $(GPU_CC_OBJS) $(CU_OBJS)
  # Our own static CUDA runtime, its symbols kept private (--exclude-libs) so that the library
  # never binds to the runtime that libtensorflow_framework exports.
  CUDA_LIBS := $(CUDART_STATIC) -Wl,--exclude-libs,libcudart_static.a -ldl -lrt -lpthread
  CONFIG    := cuda $(ARCHS)
  # The XLA lowering registers itself for XLA's GPU compiler only where the CUDA handlers exist.
  CXXFLAGS  += -DFFTCONV_WITH_CUDA
else
  CONFIG    := cpu
endif

.PHONY: setup build cpu dev wheel cuda-check kernel-check cpu-kernel-check stage-layout-check test clean info
.DEFAULT_GOAL := build

build: info $(LIB) $(INFO)

cpu:
	$(MAKE) WITH_CUDA=0 build

dev:
	$(MAKE) WITH_CUDA=1 CUDA_ARCHS=$(DEV_ARCH) build

# The wheel: setup.py's build step runs `make build`, which takes these two from the environment.
# WITH_CUDA=0 on the command line makes a CPU wheel; otherwise CUDA whenever nvcc is there, GPU or not.
WHEEL_ARCHS ?= all
WHEEL_CUDA  := $(if $(filter command line,$(origin WITH_CUDA)),$(WITH_CUDA),$(if $(NVCC),1,0))
wheel:
	rm -f dist/tf_fftconv-*.whl
	WITH_CUDA=$(WHEEL_CUDA) CUDA_ARCHS="$(WHEEL_ARCHS)" $(PYTHON) -m pip wheel -q --no-build-isolation --no-deps -w dist .
	@ls -1 dist/tf_fftconv-*.whl

info:
	@test -n "$(TF_VERSION)" || { echo "error: TensorFlow is not importable by $(PYTHON); install it first (pip install 'tensorflow==2.21.*')"; exit 1; }
ifeq ($(WITH_CUDA),1)
	@test -n "$(NVCC)" || { echo "error: WITH_CUDA=1 but nvcc is not found"; exit 1; }
	@test -n "$(CUDART_STATIC)" || { echo "error: libcudart_static.a not found under $(CUDA_HOME)"; exit 1; }
	@test -n "$(ARCHS)" || { echo "error: this nvcc builds none of sm_$(subst $() $(),/sm_,$(WANTED_ARCHS))"; exit 1; }
	@echo "tf_fftconv: TensorFlow $(TF_VERSION), CUDA kernels for sm_$(subst $() $(),/sm_,$(ARCHS)) + PTX $(NEWEST) ($(ARCH_REASON); $(NVCC))"
	@$(if $(DROPPED),echo "tf_fftconv: note: this nvcc cannot build sm_$(subst $() $(),/sm_,$(DROPPED)); build with another CUDA toolkit for those GPUs",true)
else
	@echo "tf_fftconv: TensorFlow $(TF_VERSION), CPU kernels only$(if $(CPU_REASON), ($(CPU_REASON)))"
endif

# Relink whenever the configuration (CPU / CUDA archs / TF version) changes.
$(BUILD)/config.stamp: FORCE
	@mkdir -p $(BUILD)
	@echo "$(CONFIG) tf-$(TF_VERSION)" | cmp -s - $@ || echo "$(CONFIG) tf-$(TF_VERSION)" > $@

# The stamp first: make -j starts the objects in this order, and the XLA lowering (about 40 s of
# g++, the longest compile after the two FFT kernels), which waits on the stamp, must not be left to
# run alone at the end.
$(LIB): $(BUILD)/config.stamp $(CC_OBJS) $(GPU_OBJS)
	$(CXX) $(LDFLAGS) -o $@ $(filter %.o,$^) $(CUDA_LIBS) $(TF_LIBS)

$(INFO): $(LIB)
	@$(PYTHON) -c 'import json, sys; json.dump({"tensorflow_version": sys.argv[1], "cuda": sys.argv[2] == "1", "cuda_archs": sys.argv[3].split(), "nvcc": sys.argv[4]}, open(sys.argv[5], "w"), indent=1)' \
	  "$(TF_VERSION)" "$(WITH_CUDA)" "$(if $(filter 1,$(WITH_CUDA)),$(ARCHS))" "$(NVCC)" $@
	@echo "tf_fftconv: built $(LIB)"

# The XLA objects also depend on the configuration (FFTCONV_WITH_CUDA).
$(BUILD)/cc/xla_lowering.o: $(BUILD)/config.stamp

$(BUILD)/cc/%.o: cc/%.cc $(wildcard cc/*.h include/*.h cuda/*.h)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

# The CPU kernels alone: built from their sources with the library's flags, linked without TensorFlow.
cpu-kernel-check: $(BUILD)/cpu_kernel_check

$(BUILD)/cpu_kernel_check: cc/tests/cpu_kernel_check.cc cc/cpu_kernels.cc $(wildcard cc/*.h include/*.h)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -o $@ cc/tests/cpu_kernel_check.cc cc/cpu_kernels.cc -lpthread

ifneq ($(NVCC),)
# Library objects: position-independent, every wanted architecture plus PTX of the newest.
LIB_NVCC   = $(NVCC) $(NVCC_BASE) -Xcompiler -fPIC $(call gencode,$(ARCHS))
$(CU_DIR)/%.o: cuda/%.cu $(CU_DEPS)
	@mkdir -p $(dir $@)
	$(LIB_NVCC) -gencode arch=compute_$(NEWEST),code=compute_$(NEWEST) -c $< -o $@

cuda-check:
	$(MAKE) WITH_CUDA=1 CUDA_ARCHS=$(DEV_ARCH) cuda-objects $(CHECK_DIR)/kernel_check.o

.PHONY: cuda-objects
cuda-objects: $(CU_OBJS) $(GPU_CC_OBJS)

# ---- The standalone kernel check (no TensorFlow), for DEV_ARCH.
CHECK_DIR  := $(BUILD)/kernel_check_sm$(DEV_ARCH)
CHECK_NVCC := $(NVCC) $(NVCC_BASE) $(call gencode,$(DEV_ARCH))
CHECK_OBJS := $(CU_SRCS:cuda/%.cu=$(CHECK_DIR)/%.o)

kernel-check: $(BUILD)/kernel_check

$(BUILD)/kernel_check: $(CHECK_DIR)/kernel_check.o $(CHECK_OBJS)
	$(CHECK_NVCC) -o $@ $^

$(CHECK_DIR)/kernel_check.o: cuda/tests/kernel_check.cu $(CU_DEPS)
	@mkdir -p $(dir $@)
	$(CHECK_NVCC) -c $< -o $@

$(CHECK_DIR)/%.o: cuda/%.cu $(CU_DEPS)
	@mkdir -p $(dir $@)
	$(CHECK_NVCC) -c $< -o $@

# The forward's NHWC stage layout, checked on the host: no kernels, no GPU (seconds to build).
stage-layout-check: $(BUILD)/stage_layout_check

$(BUILD)/stage_layout_check: cuda/tests/stage_layout_check.cu $(CU_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_BASE) -o $@ $<

else
cuda-check kernel-check stage-layout-check:
	@echo "error: nvcc not found (make $@ compiles CUDA code)"; exit 1
endif

# The TensorFlow versions the package builds and passes against. `make setup` keeps one of these when
# it is importable (a Kaggle image's own, with its CUDA) and installs TENSORFLOW only otherwise; the
# rest of the requirements never name TensorFlow. TENSORFLOW may hold several requirements (CI's
# Kaggle leg: TENSORFLOW="tensorflow==2.20.* keras==3.13.2").
TF_SUPPORTED := 2.18 2.19 2.20 2.21
TENSORFLOW   ?= tensorflow==2.21.*

setup:
	@if version=$$($(PYTHON) -c 'import sys, tensorflow as tf; print(tf.__version__); sys.exit(".".join(tf.__version__.split(".")[:2]) not in sys.argv[1:])' $(TF_SUPPORTED) 2>/dev/null); \
	then echo "setup: keeping the installed TensorFlow $$version"; \
	else echo "setup: no supported TensorFlow ($(TF_SUPPORTED)) is importable$${version:+ (found $$version)}: installing $(TENSORFLOW)"; \
	  $(PYTHON) -m pip install -q $(foreach r,$(TENSORFLOW),'$(r)') || exit 1; fi
	$(PYTHON) -m pip install -q -r requirements-dev.txt
	@sh tools/install_fashion_mnist.sh

# Everything but the GPU tests (those run on a GPU host: `$(PYTHON) -m pytest -m gpu`).
test: setup
	$(MAKE) build
	$(PYTHON) -m pytest -q -m "not gpu" tests

clean:
	rm -rf $(BUILD) $(LIB) $(INFO)

FORCE:
