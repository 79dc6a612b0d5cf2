# tf_fftconv build: the one place where compile and link flags are written down (setup.py calls it;
# BUILD's copts for the Bazel build mirror CXXFLAGS; tools/ scripts call the targets below).
#
#   make build          the op library. With a GPU on this host (nvidia-smi -L or /dev/nvidia0) and
#                       nvcc: CUDA kernels for every architecture nvcc supports out of CUDA_ARCHS.
#                       Without a GPU: the CPU kernels only, with a message (WITH_CUDA=1 forces CUDA)
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
#   make kernel-variants  tuning builds of the kernel check with other FFT block shapes,
#                       build/variants/kc_<name> (VARIANTS below; timed by tools/tune.sh)
#   make lib-variants LIB_VARIANTS="<name> ..."  the op library built with those variants' flags,
#                       build/libvariants/<name>/_fftconv_ops.so (timed inside TensorFlow by
#                       tools/gpu_session.sh lib-variants)
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
# Architectures wanted; the ones this nvcc cannot build (e.g. 60/70 with CUDA >= 13, 100/120 before
# 12.8) are dropped with a message. PTX of the newest one is embedded too, for newer GPUs.
CUDA_ARCHS ?= 60 70 75 80 86 89 90 100 120
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

# The XLA lowering (cc/*_xla.cc) includes tf2xla headers, which need two more of TensorFlow's
# bundled header trees, and links the tf2xla symbols from libtensorflow_cc.
TF_INCLUDE := $(patsubst -I%,%,$(firstword $(filter -I%,$(TF_CFLAGS))))
CXXFLAGS  := -O3 -fPIC -Wall -Wno-sign-compare -Wno-unused-function -Wno-deprecated-declarations -Wno-interference-size -I. $(TF_CFLAGS) \
             -I$(TF_INCLUDE)/external/highwayhash -I$(TF_INCLUDE)/external/farmhash_archive/src
LDFLAGS   := -shared -Wl,--no-undefined
TF_LIBS   := $(TF_LFLAGS) -l:libtensorflow_cc.so.2
# nvcc flags of every CUDA build (library, kernel check, variants); -gencode is added per target.
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

CC_OPS    := $(wildcard cc/*_op.cc) $(wildcard cc/*_xla.cc) cc/cpu_kernels.cc
CC_GPU    := $(wildcard cc/*_gpu.cc)
CU_SRCS   := $(wildcard cuda/*.cu)
CC_OBJS   := $(CC_OPS:%.cc=$(BUILD)/%.o)
GPU_CC_OBJS := $(CC_GPU:%.cc=$(BUILD)/%.o)
CU_DEPS   := $(wildcard cuda/*.h cuda/*.cuh cuda/*.inc include/*.h)

ifneq ($(NVCC),)
  NVCC_CODES := $(shell $(NVCC) --list-gpu-code 2>/dev/null | sed 's/sm_//')
  ARCHS     := $(filter $(NVCC_CODES),$(CUDA_ARCHS))
  DROPPED   := $(filter-out $(NVCC_CODES),$(CUDA_ARCHS))
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

.PHONY: setup build cpu dev cuda-check kernel-check kernel-variants lib-variants cpu-kernel-check stage-layout-check test clean info
.DEFAULT_GOAL := build

build: info $(LIB) $(INFO)

cpu:
	$(MAKE) WITH_CUDA=0 build

dev:
	$(MAKE) WITH_CUDA=1 CUDA_ARCHS=$(DEV_ARCH) build

info:
	@test -n "$(TF_VERSION)" || { echo "error: TensorFlow is not importable by $(PYTHON); install it first (pip install 'tensorflow==2.21.*')"; exit 1; }
ifeq ($(WITH_CUDA),1)
	@test -n "$(NVCC)" || { echo "error: WITH_CUDA=1 but nvcc is not found"; exit 1; }
	@test -n "$(CUDART_STATIC)" || { echo "error: libcudart_static.a not found under $(CUDA_HOME)"; exit 1; }
	@echo "tf_fftconv: TensorFlow $(TF_VERSION), CUDA kernels for sm_$(subst $() $(),/sm_,$(ARCHS)) + PTX $(NEWEST) ($(NVCC))"
	@$(if $(DROPPED),echo "tf_fftconv: note: this nvcc cannot build sm_$(subst $() $(),/sm_,$(DROPPED)); build with another CUDA toolkit for those GPUs",true)
else
	@echo "tf_fftconv: TensorFlow $(TF_VERSION), CPU kernels only$(if $(CPU_REASON), ($(CPU_REASON)))"
endif

# Relink whenever the configuration (CPU / CUDA archs / TF version) changes.
$(BUILD)/config.stamp: FORCE
	@mkdir -p $(BUILD)
	@echo "$(CONFIG) tf-$(TF_VERSION)" | cmp -s - $@ || echo "$(CONFIG) tf-$(TF_VERSION)" > $@

# The link of the op library and of its variants (make lib-variants): every object prerequisite.
LINK_LIB   = $(CXX) $(LDFLAGS) -o $@ $(filter %.o,$^) $(CUDA_LIBS) $(TF_LIBS)

$(LIB): $(CC_OBJS) $(GPU_OBJS) $(BUILD)/config.stamp
	$(LINK_LIB)

$(INFO): $(LIB)
	@$(PYTHON) -c 'import json, sys; json.dump({"tensorflow_version": sys.argv[1], "cuda": sys.argv[2] == "1", "cuda_archs": sys.argv[3].split(), "nvcc": sys.argv[4]}, open(sys.argv[5], "w"), indent=1)' \
	  "$(TF_VERSION)" "$(WITH_CUDA)" "$(if $(filter 1,$(WITH_CUDA)),$(ARCHS))" "$(NVCC)" $@
	@echo "tf_fftconv: built $(LIB)"

# The XLA objects also depend on the configuration (FFTCONV_WITH_CUDA).
$(patsubst %.cc,$(BUILD)/%.o,$(wildcard cc/*_xla.cc)): $(BUILD)/config.stamp

$(BUILD)/cc/%.o: cc/%.cc $(wildcard cc/*.h include/*.h cuda/*.h)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

# The CPU kernels alone: built from their sources with the library's flags, linked without TensorFlow.
cpu-kernel-check: $(BUILD)/cpu_kernel_check

$(BUILD)/cpu_kernel_check: cc/tests/cpu_kernel_check.cc cc/cpu_kernels.cc $(wildcard cc/*.h include/*.h)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -o $@ cc/tests/cpu_kernel_check.cc cc/cpu_kernels.cc -lpthread

ifneq ($(NVCC),)
# Library objects: position-independent, every wanted architecture plus PTX of the newest (library
# variants, below, leave the PTX out).
LIB_NVCC   = $(NVCC) $(NVCC_BASE) -Xcompiler -fPIC $(call gencode,$(ARCHS))
$(CU_DIR)/%.o: cuda/%.cu $(CU_DEPS)
	@mkdir -p $(dir $@)
	$(LIB_NVCC) -gencode arch=compute_$(NEWEST),code=compute_$(NEWEST) -c $< -o $@

cuda-check:
	$(MAKE) WITH_CUDA=1 CUDA_ARCHS=$(DEV_ARCH) cuda-objects $(CHECK_DIR)/kernel_check.o

.PHONY: cuda-objects
cuda-objects: $(CU_OBJS) $(GPU_CC_OBJS)

# ---- The standalone kernel check and its tuning variants (no TensorFlow), for DEV_ARCH.
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
# VARIANT=<name> builds it with that tuning variant's flags (VARIANTS below), e.g. n20_stage_padded.
stage-layout-check: $(BUILD)/stage_layout_check

$(BUILD)/stage_layout_check: cuda/tests/stage_layout_check.cu $(CU_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_BASE) $(VARIANT_FLAGS_$(VARIANT)) -o $@ $<

# Kernel shapes to time against the defaults (make kernel-variants VARIANTS="..." builds a subset):
# FFT block shapes as FFTCONV_SHAPE_<real>_<S>_<FWD|INV>[_LARGE[_NHWC]] overrides L * 10000 + G * 100
# + MINB (lanes per transform, images per block, minimum blocks per SM: FftShape and LargeShape in
# cuda/fft_common.cuh), and the matmul's tile switches (cuda/spectral_matmul.cu). Only the kernels'
# own objects are rebuilt for each.
VARIANTS := n0_default n1_f3_i2 n2_lanes2 n3_mixed n4_no_large n5_loads32 n6_streaming n7_nhwc_inv16 n8_no_pipeline n10_no_inv_pipeline n11_scalar_zero n12_no_tf32_spectra \
            m2_tile32 m3_tile48 m4_tile64 m5_stages2 m6_stages4 m7_noswap m8_bk32 m9_evict_first \
            m11_tf32_rna m12_tf32_no_round s0_simt_four s1_simt128x64 s2_simt128x32 s3_simt64x64 \
            n13_large_before n14_lanes2_g8 n15_lanes2_g4 n16_no_leading n17_no_kept n18_no_dependent n19_job0_apart \
            n20_stage_padded n21_twiddle_bank n22_inv_stage_image_major n23_inv_copies_whole \
            n24_fwd_copies_split n25_inv_first_with_next n26_fwd_first_alone n27_store_index \
            n28_no_tensor_copy n29_cluster n30_cluster_minb4 n31_cluster_k2
VARIANT_FLAGS_n0_default :=
VARIANT_FLAGS_n1_f3_i2   := -DFFTCONV_SHAPE_float_32_FWD=10803 -DFFTCONV_SHAPE_float_32_INV=21602
VARIANT_FLAGS_n2_lanes2  := -DFFTCONV_SHAPE_float_32_FWD=20804 -DFFTCONV_SHAPE_float_32_INV=20804 \
                            -DFFTCONV_SHAPE_float_16_FWD=21604 -DFFTCONV_SHAPE_float_16_INV=21604
VARIANT_FLAGS_n3_mixed   := -DFFTCONV_SHAPE_float_32_FWD=21602 -DFFTCONV_SHAPE_float_32_INV=11603 \
                            -DFFTCONV_SHAPE_float_64_FWD=40402 -DFFTCONV_SHAPE_float_64_INV=40402
VARIANT_FLAGS_n4_no_large := -DFFTCONV_SHAPE_float_16_INV_LARGE_NHWC=11604 -DFFTCONV_SHAPE_float_32_INV_LARGE_NHWC=10804 \
                            -DFFTCONV_SHAPE_float_40_FWD_LARGE=40801 -DFFTCONV_SHAPE_float_40_INV_LARGE=40801
VARIANT_FLAGS_n5_loads32 := -DFFTCONV_RFFT_LOADS=32
VARIANT_FLAGS_n6_streaming := -DFFTCONV_STREAMING_STORES=1
VARIANT_FLAGS_n7_nhwc_inv16 := -DFFTCONV_SHAPE_float_32_INV_LARGE_NHWC=11602
VARIANT_FLAGS_n8_no_pipeline := -DFFTCONV_RFFT_PIPELINE=0 -DFFTCONV_IRFFT_PIPELINE=0
VARIANT_FLAGS_n10_no_inv_pipeline := -DFFTCONV_IRFFT_PIPELINE=0
VARIANT_FLAGS_n11_scalar_zero := -DFFTCONV_RFFT_VECTOR_ZERO=0
VARIANT_FLAGS_n12_no_tf32_spectra := -DFFTCONV_TF32_SPECTRA=0
# The shapes of the 48 frame's forward and the 64 frame's NCHW inverse before they were timed (the
# same kernels as FftShape's 40801 in both).
VARIANT_FLAGS_n13_large_before := -DFFTCONV_SHAPE_float_48_FWD=40801 -DFFTCONV_SHAPE_float_64_INV_LARGE=40801
# More resident warps for the 32 frame's plan 0 (three blocks of four warps per SM by default, held
# there by 167 registers and two 34 KB buffers): two lanes per transform, so that a thread holds 16
# complex values, with a register budget of 128: two blocks of 8 warps, or four of 4 with G = 4. (A
# budget of 85, for three blocks of 8 or six of 4, spilled 256-424 bytes per thread in a first build.)
# Both lost on the H200 in every 32-frame transform (h200-2026-12-02-04415fb: Mathieu's NHWC x 0.058
# and 0.063 ms against 0.049-0.053, the NHWC inverse of y 0.119 and 0.207 against 0.084-0.086), so
# the defaults stay.
VARIANT_FLAGS_n14_lanes2_g8 := -DFFTCONV_SHAPE_float_32_FWD=20802 -DFFTCONV_SHAPE_float_32_INV=20802
VARIANT_FLAGS_n15_lanes2_g4 := -DFFTCONV_SHAPE_float_32_FWD=20404 -DFFTCONV_SHAPE_float_32_INV=20404
# The forward transforms without the pruning of images in the first quarter of their frames.
VARIANT_FLAGS_n16_no_leading := -DFFTCONV_RFFT_LEADING=0
# The inverse transforms computing every output, also where the window lies in the first quarter.
VARIANT_FLAGS_n17_no_kept := -DFFTCONV_IRFFT_KEPT=0
# Every launch a plain one: no programmatic dependent launches on sm_90+.
VARIANT_FLAGS_n18_no_dependent := -DFFTCONV_DEPENDENT_LAUNCH=0
# The forward's column job 0 with both of its stores in a branch of its own, apart from the other
# jobs' stores (a warp holding job 0 and other jobs runs both).
VARIANT_FLAGS_n19_job0_apart := -DFFTCONV_RFFT_JOB0_SPLIT=0
# The forward's NHWC stage (plan 0) with padded rows, 16-byte aligned, instead of swizzled columns
# in 128-byte aligned rows (PixelMajorStage in cuda/fft_common.cuh).
VARIANT_FLAGS_n20_stage_padded := -DFFTCONV_STAGE_SWIZZLE=0
# Twiddles of a compile-time index read from the __constant__ tables (a constant-bank load per use)
# instead of folded into the instructions as immediates (FFTCONV_TWIDDLE_IMMEDIATE in fft_common.cuh).
VARIANT_FLAGS_n21_twiddle_bank := -DFFTCONV_TWIDDLE_IMMEDIATE=0
# The inverse's NHWC stage (plan 0) image-major, as plans 1 and 2 have it, instead of pixel-major
# (InverseStageAt in cuda/fft_common.cuh).
VARIANT_FLAGS_n22_inv_stage_image_major := -DFFTCONV_IRFFT_PIXEL_MAJOR=0
# Plan 0 issuing a group's copies in one piece, before the group before it is processed, or in two,
# half there and half between that group's passes (RunPipelinedGroups in cuda/fft_common.cuh): the
# inverse in one piece (its default is two), the forward in two (its default is one).
VARIANT_FLAGS_n23_inv_copies_whole := -DFFTCONV_IRFFT_COPY_PARTS=1
VARIANT_FLAGS_n24_fwd_copies_split := -DFFTCONV_RFFT_COPY_PARTS=2
# Plan 0's persistent blocks waiting for their first group's copies before they issue the second
# group's, or issuing both at once (RunPipelinedGroups' kFirstAlone in cuda/fft_common.cuh): the
# inverse issuing both at once (its default waits), the forward waiting (its default issues both).
VARIANT_FLAGS_n25_inv_first_with_next := -DFFTCONV_IRFFT_FIRST_ALONE=0
VARIANT_FLAGS_n26_fwd_first_alone := -DFFTCONV_RFFT_FIRST_ALONE=1
# The forward's column stores each addressed from its bin's index, as before they walked the bins
# (FFTCONV_RFFT_STORE_WALK in cuda/rfft2d.cu).
VARIANT_FLAGS_n27_store_index := -DFFTCONV_RFFT_STORE_WALK=0
# The forward's NHWC stage of plan 0 filled by every thread's cp.async copies and zero fill on sm_90
# too, as before the tensor copies (FFTCONV_RFFT_TENSOR_COPY in cuda/rfft2d.cu).
VARIANT_FLAGS_n28_no_tensor_copy := -DFFTCONV_RFFT_TENSOR_COPY=0
# The 40, 48 and 64 frames' forward on the cluster plan (FFTCONV_RFFT_CLUSTER in cuda/rfft2d.cu, off
# by default until the GPU has checked and timed it); the same with four blocks per SM promised to
# the compiler (64 registers), and with clusters of two blocks.
VARIANT_FLAGS_n29_cluster := -DFFTCONV_RFFT_CLUSTER=1
VARIANT_FLAGS_n30_cluster_minb4 := -DFFTCONV_RFFT_CLUSTER=1 -DFFTCONV_SHAPE_float_40_FWD_CLUSTER=440804 \
    -DFFTCONV_SHAPE_float_48_FWD_CLUSTER=440804 -DFFTCONV_SHAPE_float_64_FWD_CLUSTER=440804
VARIANT_FLAGS_n31_cluster_k2 := -DFFTCONV_RFFT_CLUSTER=1 -DFFTCONV_SHAPE_float_40_FWD_CLUSTER=240803 \
    -DFFTCONV_SHAPE_float_48_FWD_CLUSTER=240802 -DFFTCONV_SHAPE_float_64_FWD_CLUSTER=240802
VARIANT_FLAGS_m2_tile32  := -DFFTCONV_TF32_TILE=32
VARIANT_FLAGS_m3_tile48  := -DFFTCONV_TF32_TILE=48
VARIANT_FLAGS_m4_tile64  := -DFFTCONV_TF32_TILE=64
VARIANT_FLAGS_m5_stages2 := -DFFTCONV_TF32_STAGES=2
VARIANT_FLAGS_m6_stages4 := -DFFTCONV_TF32_STAGES=4
VARIANT_FLAGS_m7_noswap  := -DFFTCONV_MATMUL_SWAP=0
VARIANT_FLAGS_m8_bk32    := -DFFTCONV_TF32_BK=32 -DFFTCONV_TF32_STAGES=2
VARIANT_FLAGS_m9_evict_first := -DFFTCONV_MATMUL_EVICT_FIRST=1
VARIANT_FLAGS_m11_tf32_rna := -DFFTCONV_TF32_ROUND_RN=0
VARIANT_FLAGS_m12_tf32_no_round := -DFFTCONV_TF32_NO_ROUND=1
VARIANT_FLAGS_s0_simt_four := -DFFTCONV_SIMT_GAUSS=0
VARIANT_FLAGS_s1_simt128x64 := -DFFTCONV_SIMT_TILE=3
VARIANT_FLAGS_s2_simt128x32 := -DFFTCONV_SIMT_TILE=4
VARIANT_FLAGS_s3_simt64x64 := -DFFTCONV_SIMT_TILE=5
VARIANT_DIR := $(BUILD)/variants
VARIANT_KERNELS := rfft2d irfft2d spectral_matmul

kernel-variants: $(VARIANTS:%=$(VARIANT_DIR)/kc_%)

$(VARIANT_DIR)/kc_%: $(VARIANT_DIR)/rfft2d_%.o $(VARIANT_DIR)/irfft2d_%.o $(VARIANT_DIR)/spectral_matmul_%.o \
                     $(CHECK_DIR)/kernel_check.o $(filter-out $(VARIANT_KERNELS:%=$(CHECK_DIR)/%.o),$(CHECK_OBJS))
	$(CHECK_NVCC) -o $@ $^

define variant_kernel_rule
.PRECIOUS: $(VARIANT_DIR)/$(1)_%.o
$(VARIANT_DIR)/$(1)_%.o: cuda/$(1).cu $(CU_DEPS)
	@mkdir -p $$(dir $$@)
	$$(CHECK_NVCC) $$(VARIANT_FLAGS_$$*) -c $$< -o $$@
endef
$(foreach kernel,$(VARIANT_KERNELS),$(eval $(call variant_kernel_rule,$(kernel))))

# ---- The op library built with a variant's flags (VARIANT_FLAGS_<name>; every CUDA source
# recompiled with them for DEV_ARCH, the C++ objects shared with make dev), to time the variant
# inside TensorFlow against the library: make lib-variants LIB_VARIANTS="<name> ..." writes
# build/libvariants/<name>/_fftconv_ops.so, which tools/gpu_session.sh's step lib-variants times.
LIBVARIANT_DIR := $(BUILD)/libvariants
lib-variants:
	@test -n "$(LIB_VARIANTS)" || { echo "error: name the variants: make lib-variants LIB_VARIANTS=\"<name> ...\" (VARIANTS lists them)"; exit 1; }
	@test -z "$(filter-out $(VARIANTS),$(LIB_VARIANTS))" || { echo "error: no such variant: $(filter-out $(VARIANTS),$(LIB_VARIANTS)) (VARIANTS lists them)"; exit 1; }
	$(MAKE) WITH_CUDA=1 CUDA_ARCHS=$(DEV_ARCH) $(LIB_VARIANTS:%=$(LIBVARIANT_DIR)/%/_fftconv_ops.so)

ifeq ($(WITH_CUDA),1)
LIBVARIANT_OBJS := $(subst @NAME@,%,$(patsubst cuda/%.cu,$(LIBVARIANT_DIR)/@NAME@/%.o,$(CU_SRCS)))
$(LIBVARIANT_DIR)/%/_fftconv_ops.so: $(CC_OBJS) $(GPU_CC_OBJS) $(LIBVARIANT_OBJS)
	$(LINK_LIB)

define lib_variant_kernel_rule
.PRECIOUS: $(LIBVARIANT_DIR)/%/$(1).o
$(LIBVARIANT_DIR)/%/$(1).o: cuda/$(1).cu $(CU_DEPS)
	@mkdir -p $$(dir $$@)
	$$(LIB_NVCC) $$(VARIANT_FLAGS_$$*) -c $$< -o $$@
endef
$(foreach kernel,$(CU_SRCS:cuda/%.cu=%),$(eval $(call lib_variant_kernel_rule,$(kernel))))
endif
else
cuda-check kernel-check kernel-variants lib-variants stage-layout-check:
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
