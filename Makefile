# tf_fftconv build: the one place where compile and link flags are written down (setup.py calls it).
#
#   make build        the op library, with the CUDA kernels for every architecture nvcc supports
#                     out of CUDA_ARCHS (CPU-only, with a message, when nvcc is absent)
#   make cpu          CPU kernels only
#   make dev          CUDA for one architecture (DEV_ARCH, default 90): fast rebuilds while developing
#   make cuda-check   compile the CUDA sources only (what CI does to keep them building)
#   make setup        the Python requirements (TensorFlow only when no supported one is importable)
#                     and Debian's Fashion-MNIST where apt is usable
#   make test         setup, build, and the test suite (README's command)
#   make clean
#
# The library lands in tf_fftconv/ next to _build_info.json, which records the TensorFlow it was
# built against (the loader refuses another version with a "rebuild" message).

PYTHON    ?= python3
CXX       ?= g++
NVCC      ?= $(shell command -v nvcc 2>/dev/null)
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
# Architectures wanted; the ones this nvcc cannot build (e.g. 60/70 with CUDA >= 13) are dropped
# with a message. PTX of the newest one is embedded too, for newer GPUs.
CUDA_ARCHS ?= 60 70 75 80 86 89 90
DEV_ARCH  ?= 90
WITH_CUDA ?= auto

LIB       := tf_fftconv/_fftconv_ops.so
INFO      := tf_fftconv/_build_info.json
BUILD     := build

# One Python start for all three TensorFlow facts (importing TensorFlow takes seconds).
define newline


endef
TF_FACTS  := $(shell $(PYTHON) -c 'import tensorflow as tf, tensorflow.sysconfig as c; print("TF_VERSION := " + tf.__version__ + "@@TF_CFLAGS := " + " ".join(c.get_compile_flags()) + "@@TF_LFLAGS := " + " ".join(c.get_link_flags()))' 2>/dev/null)
$(eval $(subst @@,$(newline),$(TF_FACTS)))

CXXFLAGS  := -O3 -fPIC -Wall -Wno-sign-compare -Wno-unused-function -Wno-deprecated-declarations -Wno-interference-size -I. $(TF_CFLAGS)
LDFLAGS   := -shared -Wl,--no-undefined

ifeq ($(WITH_CUDA),auto)
  WITH_CUDA := $(if $(NVCC),1,0)
endif

CC_OPS    := $(wildcard cc/*_op.cc)
CC_GPU    := $(wildcard cc/*_gpu.cc)
CU_SRCS   := $(wildcard cuda/*.cu)
CC_OBJS   := $(CC_OPS:%.cc=$(BUILD)/%.o)

ifeq ($(WITH_CUDA),1)
  # nvcc may be a wrapper script: ask it where its toolkit is.
  CUDA_HOME ?= $(abspath $(shell $(NVCC) -dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$$ TOP=//p' | head -1))
  CUDART_STATIC ?= $(firstword $(wildcard $(CUDA_HOME)/lib64/libcudart_static.a \
                      $(CUDA_HOME)/targets/x86_64-linux/lib/libcudart_static.a $(CUDA_HOME)/lib/libcudart_static.a))
  NVCC_CODES := $(shell $(NVCC) --list-gpu-code 2>/dev/null | sed 's/sm_//')
  ARCHS     := $(filter $(NVCC_CODES),$(CUDA_ARCHS))
  DROPPED   := $(filter-out $(NVCC_CODES),$(CUDA_ARCHS))
  NEWEST    := $(lastword $(sort $(ARCHS)))
  GENCODE   := $(foreach a,$(ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
               -gencode arch=compute_$(NEWEST),code=compute_$(NEWEST)
  NVCCFLAGS := -std=c++17 -O3 -Xcompiler -fPIC --expt-relaxed-constexpr -I. $(GENCODE)
  CU_OBJS   := $(CU_SRCS:%.cu=$(BUILD)/%.cu.o)
  GPU_OBJS  := $(CC_GPU:%.cc=$(BUILD)/%.o) $(CU_OBJS)
  # Our own static CUDA runtime, its symbols kept private (--exclude-libs) so that the library
  # never binds to the runtime that libtensorflow_framework exports.
  CUDA_LIBS := $(CUDART_STATIC) -Wl,--exclude-libs,libcudart_static.a -ldl -lrt -lpthread
  CONFIG    := cuda $(ARCHS)
else
  CONFIG    := cpu
endif

.PHONY: setup build cpu dev cuda-check test clean info
.DEFAULT_GOAL := build

build: info $(LIB) $(INFO)

cpu:
	$(MAKE) WITH_CUDA=0 build

dev:
	$(MAKE) WITH_CUDA=1 CUDA_ARCHS=$(DEV_ARCH) build

info:
	@test -n "$(TF_VERSION)" || { echo "error: TensorFlow is not importable by $(PYTHON); install it first (pip install 'tensorflow==2.21.*')"; exit 1; }
ifeq ($(WITH_CUDA),1)
	@test -n "$(CUDART_STATIC)" || { echo "error: libcudart_static.a not found under $(CUDA_HOME)"; exit 1; }
	@echo "tf_fftconv: TensorFlow $(TF_VERSION), CUDA kernels for sm_$(subst $() $(),/sm_,$(ARCHS)) + PTX $(NEWEST) ($(NVCC))"
	@$(if $(DROPPED),echo "tf_fftconv: note: this nvcc cannot build sm_$(subst $() $(),/sm_,$(DROPPED)); build with an older CUDA toolkit for those GPUs",true)
else
	@echo "tf_fftconv: TensorFlow $(TF_VERSION), CPU kernels only$(if $(NVCC),, (nvcc not found: GPU kernels are not built))"
endif

# Relink whenever the configuration (CPU / CUDA archs / TF version) changes.
$(BUILD)/config.stamp: FORCE
	@mkdir -p $(BUILD)
	@echo "$(CONFIG) tf-$(TF_VERSION)" | cmp -s - $@ || echo "$(CONFIG) tf-$(TF_VERSION)" > $@

$(LIB): $(CC_OBJS) $(GPU_OBJS) $(BUILD)/config.stamp
	$(CXX) $(LDFLAGS) -o $@ $(CC_OBJS) $(GPU_OBJS) $(CUDA_LIBS) $(TF_LFLAGS)

$(INFO): $(LIB)
	@$(PYTHON) -c 'import json, sys; json.dump({"tensorflow_version": sys.argv[1], "cuda": sys.argv[2] == "1", "cuda_archs": sys.argv[3].split(), "nvcc": sys.argv[4]}, open(sys.argv[5], "w"), indent=1)' \
	  "$(TF_VERSION)" "$(WITH_CUDA)" "$(ARCHS)" "$(NVCC)" $@
	@echo "tf_fftconv: built $(LIB)"

$(BUILD)/cc/%.o: cc/%.cc $(wildcard cc/*.h) cuda/fftconv_cuda.h
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/cuda/%.cu.o: cuda/%.cu $(wildcard cuda/*.h cuda/*.cuh cuda/*.inc)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

cuda-check:
	@test -n "$(NVCC)" || { echo "error: nvcc not found"; exit 1; }
	$(MAKE) WITH_CUDA=1 $(CU_SRCS:%.cu=$(BUILD)/%.cu.o)

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
