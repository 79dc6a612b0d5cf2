// Hardware primitives of the package's kernels, nothing FFT-specific: raw PTX wrappers (TF32
// rounding, streaming stores), grid-dependency control, asynchronous copies (cp.async), shared-memory
// barriers (mbarrier) and tensor copies (the tensor memory accelerator), warp lane masks, division by
// a run-time constant, shared-memory zeroing, and the host side of a launch (dynamic shared memory,
// programmatic dependent launches, persistent grids). The FFT kernels (cuda/fft_stages.cuh) and the
// spectral matmul (cuda/spectral_matmul.cu) build on these.
#ifndef TF_FFTCONV_CUDA_HARDWARE_CUH_
#define TF_FFTCONV_CUDA_HARDWARE_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "include/fftconv_params.h"
#include "device_info.h"

namespace fftconv {
namespace cuda {
namespace detail {

// Rounding to TF32, one rule for every kernel that rounds: the matmul's tensor-core operands
// (cuda/spectral_matmul.cu) and the spectra that rfft2d stores already rounded for them
// (Rfft2dParams::round_to_tf32), so that such a spectrum holds exactly the TF32 values the matmul
// would have made of the unrounded one. sm_90+: cvt.rn (ties to even), one F2FP instruction; before
// sm_90 cvt.rna (ties away from zero), sm_80's only form, which ptxas expands to an add, an Inf /
// NaN test and a mask, three instructions per value where cvt.rn is one (docs/performance.md).
// The result's low 13 bits are not defined (the MMA does not read them). There is no TF32 before
// sm_80: there x comes back as it is (no kernel rounds there).
__device__ __forceinline__ uint32_t RoundTf32Bits(float x) {
  uint32_t r;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
#else
  r = __float_as_uint(x);
#endif
  return r;
}
// x rounded to TF32 as an FP32 value that holds it exactly (the low 13 bits cleared): what is stored.
__device__ __forceinline__ float RoundedToTf32(float x) { return __uint_as_float(RoundTf32Bits(x) & 0xffffe000u); }

// Global store of a result that is not read again by this kernel. kEvictFirst gives it the
// cache-streaming hint (st.global.cs), which the L2 evicts first. The NHWC inverses store with it: their blocks write one
// 128-byte line per output pixel, lines a row of channels apart, and on the H200 they ran 1.2-1.6x
// faster with the hint (Mathieu's y 0.118 -> 0.094 ms, dx 0.078 -> 0.048 ms), at the NCHW inverses'
// time; those, and the forward transforms' spectra (which the matmul reads next), gained nothing.
template <bool kEvictFirst = false, typename T>
__device__ __forceinline__ void StoreStreaming(T* ptr, T v) {
  if constexpr (kEvictFirst) {
    __stcs(ptr, v);
  } else {
    *ptr = v;
  }
}

// The first statement of every kernel of the package, before its first global memory access. Where
// the kernel was launched as a programmatic dependent (LaunchKernel, sm_90+), it waits until the
// grids before it on the stream have finished and their writes are visible (griddepcontrol.wait:
// before it, this kernel may neither read what they write nor write what they read). No-op in a
// plain launch; compiles to nothing before sm_90.
// No kernel calls griddepcontrol.launch_dependents, so the next grid is launched when every block
// of this one has exited (the implicit trigger), and its launch overlaps this grid's completion
// and memory flush. With the trigger here, at each block's start (so that the next grid's blocks
// become resident and wait while this grid's last blocks run), Mathieu's train step took 0.721 ms
// per step against 0.700 with plain launches and 0.683 without it (kernel check --time-chain on
// the H200); why the early blocks cost more than they save was not profiled.
__device__ __forceinline__ void AwaitPrecedingGrids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Asynchronous copy (cp.async, sm_80+) of kBytes (4, 8 or 16) from global to shared memory;
// src_bytes = 0 writes zeros. 16-byte copies bypass L1 (.cg), smaller ones cannot (.ca).
// The shared-memory address (state space .shared) of a generic pointer into shared memory, as the
// asynchronous copies and barriers below take it.
__device__ __forceinline__ unsigned SharedAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

template <int kBytes>
__device__ __forceinline__ void CpAsync(void* smem, const void* gmem, int src_bytes) {
  const unsigned dst = SharedAddress(smem);
  if constexpr (kBytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes));
  } else if constexpr (kBytes == 8) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes));
  } else {
    static_assert(kBytes == 4, "cp.async copies 4, 8 or 16 bytes");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes));
  }
}
// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// The tensor memory accelerator (sm_90+): a shared-memory barrier that counts a copy's bytes, and
// one instruction that copies a box of a tensor (described by a CUtensorMap, EncodeTensorMap4d) into
// shared memory, writing zeros where the box reaches outside the tensor. Compile to nothing before
// sm_90; only kernels launched on sm_90 code call them (RunsSm90Code).
// One arrival expected per phase (the issuing thread's), plus the copy's bytes.
__device__ __forceinline__ void BarrierInit(unsigned long long* barrier) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(SharedAddress(barrier)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// Arrives on the barrier and tells it how many bytes the copy about to be issued will bring.
__device__ __forceinline__ void BarrierExpectBytes(unsigned long long* barrier, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(SharedAddress(barrier)), "r"(bytes)
               : "memory");
#endif
}
// Waits until the barrier's phase of the given parity has completed (its copy has landed).
__device__ __forceinline__ void BarrierWait(unsigned long long* barrier, int parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned address = SharedAddress(barrier);
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(address), "r"(parity)
        : "memory");
  } while (!done);
#endif
}
// Copies the box at coordinates (c0, c1, c2, c3) of the 4-D tensor `map` into shared memory at
// `smem` (128-byte aligned), completing on `barrier`.
__device__ __forceinline__ void TensorCopy4d(void* smem, const void* map, unsigned long long* barrier, int c0, int c1,
                                             int c2, int c3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(SharedAddress(smem)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(SharedAddress(barrier))
      : "memory");
#endif
}
// Orders this thread's earlier shared-memory accesses before later tensor copies into the same
// memory (the copies are another proxy's writes).
__device__ __forceinline__ void FenceBeforeTensorCopy() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// Lanes [base, base + width) of the warp, width a power of two <= 32.
__device__ __forceinline__ unsigned LaneGroupMask(int width) {
  if (width >= 32) return 0xffffffffu;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned base = lane & ~static_cast<unsigned>(width - 1);
  return ((1u << width) - 1u) << base;
}

// ---------------------------------------------------------------------------------------------
// Division by a run-time constant (numerators in [0, 2^31)): q = umulhi(n, mul) >> shift.
struct FastDivmod {
  unsigned divisor = 1, mul = 0, shift = 0;

  FastDivmod() = default;
  explicit FastDivmod(int d) : divisor(static_cast<unsigned>(d > 0 ? d : 1)) {
    if (divisor != 1) {
      const unsigned p = 31 + Log2(divisor);
      mul = static_cast<unsigned>(((1ull << p) + divisor - 1) / divisor);
      shift = p - 32;
    }
  }
  __host__ __device__ __forceinline__ int Div(int n) const {
#ifdef __CUDA_ARCH__
    return divisor == 1 ? n : static_cast<int>(__umulhi(static_cast<unsigned>(n), mul) >> shift);
#else
    return divisor == 1
               ? n
               : static_cast<int>((static_cast<unsigned long long>(static_cast<unsigned>(n)) * mul >> 32) >>
                                  shift);
#endif
  }
  __host__ __device__ __forceinline__ void DivMod(int n, int& q, int& r) const {
    q = Div(n);
    r = n - q * static_cast<int>(divisor);
  }
};

// Zeroes `bytes` (a multiple of 4) of shared memory with the block's threads.
__device__ __forceinline__ void ZeroShared(void* ptr, int bytes, int tid, int threads) {
  uint4* p4 = static_cast<uint4*>(ptr);
  for (int k = tid; k < bytes / 16; k += threads) p4[k] = make_uint4(0u, 0u, 0u, 0u);
  unsigned* p1 = static_cast<unsigned*>(ptr);
  for (int k = (bytes / 16) * 4 + tid; k < bytes / 4; k += threads) p1[k] = 0u;
}

// Raises `kernel`'s dynamic shared memory limit to `smem` where it needs more than the default
// 48 KiB; returns the error code.
template <typename... Params>
int AllowSharedMemory(void (*kernel)(Params...), size_t smem) {
  if (smem <= 48 * 1024) return 0;
  return static_cast<int>(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
}

// Launches `kernel` on `stream`, every kernel of the package; returns the launch's error code.
// Where DependentLaunchAllowed (sm_90+), the launch is a programmatic dependent one: the kernel is
// launched once the grid before it on the stream has no block left running, and waits in
// AwaitPrecedingGrids until that grid has completed and its writes are visible, so its launch
// overlaps that grid's completion instead of following it (Mathieu's train step, nine launches:
// 0.700 -> 0.683 ms per step in kernel check --time-chain on the H200).
template <typename... Params, typename... Args>
int LaunchKernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                 Args... args) {
  cudaLaunchAttribute attribute;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attribute;
  if (DependentLaunchAllowed(reinterpret_cast<const void*>(kernel))) {
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.numAttrs = 1;
  }
  const cudaError_t err = cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
  const cudaError_t last = cudaGetLastError();  // cleared, as a <<<>>> launch's check would
  return static_cast<int>(err != cudaSuccess ? err : last);
}

// Launches `kernel` with `smem` bytes of dynamic shared memory (LaunchKernel); returns the launch's
// error code.
template <typename... Params, typename... Args>
int LaunchWithSharedMemory(void (*kernel)(Params...), dim3 grid, int threads, size_t smem,
                           cudaStream_t stream, Args... args) {
  const int err = AllowSharedMemory(kernel, smem);
  if (err != 0) return err;
  return LaunchKernel(kernel, grid, dim3(threads), smem, stream, args...);
}

// Blocks of a persistent kernel's grid with `blocks_per_sm` resident on each of `multiprocessors`
// SMs (or fewer under a test's cap, PersistentBlocksCap).
inline long long PersistentBlocks(int multiprocessors, int blocks_per_sm) {
  const long long blocks = static_cast<long long>(blocks_per_sm > 0 ? blocks_per_sm : 1) * multiprocessors;
  const int cap = PersistentBlocksCap();
  return cap > 0 && cap < blocks ? cap : blocks;
}

}  // namespace detail
}  // namespace cuda
}  // namespace fftconv

#endif  // TF_FFTCONV_CUDA_HARDWARE_CUH_
