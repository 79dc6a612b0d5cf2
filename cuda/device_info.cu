// Cached device queries (compute capability, shared-memory limit, SM count) for the launchers.
#include "device_info.h"

#include <cuda_runtime.h>

#include <atomic>
#include <map>
#include <mutex>
#include <utility>

namespace fftconv {
namespace cuda {
namespace detail {
namespace {

constexpr int kMaxDevices = 64;
// 0 = not queried yet; otherwise (value + 1) so that a stored 0 is never ambiguous.
std::atomic<int> g_compute_capability[kMaxDevices];
std::atomic<int> g_max_shared[kMaxDevices];
std::atomic<int> g_multiprocessors[kMaxDevices];
std::atomic<int> g_shared_cap{0};
std::atomic<int> g_compute_capability_cap{0};
std::atomic<int> g_persistent_blocks_cap{0};
std::atomic<bool> g_dependent_launch{true};

// (device, kernel) -> whether the kernel's code on that device was compiled for sm_90+.
std::mutex g_kernel_ptx_mutex;
std::map<std::pair<int, const void*>, bool> g_kernel_sm90;

void ApplyCap(DeviceLimits* limits) {
  const int cap = g_shared_cap.load(std::memory_order_relaxed);
  if (cap > 0 && cap < limits->max_shared_per_block) limits->max_shared_per_block = cap;
  const int cc_cap = g_compute_capability_cap.load(std::memory_order_relaxed);
  if (cc_cap > 0 && cc_cap < limits->compute_capability) limits->compute_capability = cc_cap;
}

}  // namespace

int CurrentDeviceLimits(DeviceLimits* limits) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return static_cast<int>(err);
  limits->device = device;
  if (device >= 0 && device < kMaxDevices) {
    const int cc = g_compute_capability[device].load(std::memory_order_acquire);
    const int smem = g_max_shared[device].load(std::memory_order_acquire);
    const int sms = g_multiprocessors[device].load(std::memory_order_acquire);
    if (cc != 0 && smem != 0 && sms != 0) {
      limits->compute_capability = cc - 1;
      limits->max_shared_per_block = smem - 1;
      limits->multiprocessors = sms - 1;
      ApplyCap(limits);
      return 0;
    }
  }
  int major = 0, minor = 0, optin = 0, plain = 0, sms = 0;
  if ((err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) != cudaSuccess ||
      (err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device)) != cudaSuccess ||
      (err = cudaDeviceGetAttribute(&plain, cudaDevAttrMaxSharedMemoryPerBlock, device)) != cudaSuccess ||
      (err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) {
    return static_cast<int>(err);
  }
  // Devices without an opt-in limit report 0 here: fall back to the plain per-block limit.
  if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
    (void)cudaGetLastError();
    optin = 0;
  }
  limits->compute_capability = 10 * major + minor;
  limits->max_shared_per_block = optin > plain ? optin : plain;
  limits->multiprocessors = sms > 0 ? sms : 1;
  if (device >= 0 && device < kMaxDevices) {
    g_compute_capability[device].store(limits->compute_capability + 1, std::memory_order_release);
    g_max_shared[device].store(limits->max_shared_per_block + 1, std::memory_order_release);
    g_multiprocessors[device].store(limits->multiprocessors + 1, std::memory_order_release);
  }
  ApplyCap(limits);
  return 0;
}

void SetSharedMemoryCapForTesting(int bytes) { g_shared_cap.store(bytes > 0 ? bytes : 0, std::memory_order_relaxed); }

void SetComputeCapabilityCapForTesting(int compute_capability) {
  g_compute_capability_cap.store(compute_capability > 0 ? compute_capability : 0, std::memory_order_relaxed);
}

void SetPersistentBlocksCapForTesting(int blocks) {
  g_persistent_blocks_cap.store(blocks > 0 ? blocks : 0, std::memory_order_relaxed);
}

int PersistentBlocksCap() { return g_persistent_blocks_cap.load(std::memory_order_relaxed); }

bool RunsSm90Code(const void* kernel) {
  DeviceLimits limits;
  if (CurrentDeviceLimits(&limits) != 0 || limits.compute_capability < 90) return false;
  std::lock_guard<std::mutex> lock(g_kernel_ptx_mutex);
  const auto key = std::make_pair(limits.device, kernel);
  const auto found = g_kernel_sm90.find(key);
  if (found != g_kernel_sm90.end()) return found->second;
  cudaFuncAttributes attributes;
  bool sm90 = false;
  if (cudaFuncGetAttributes(&attributes, kernel) == cudaSuccess) {
    sm90 = attributes.ptxVersion >= 90;
  } else {
    (void)cudaGetLastError();   // the launch itself reports what is wrong with the kernel
  }
  g_kernel_sm90.emplace(key, sm90);
  return sm90;
}

bool DependentLaunchAllowed(const void* kernel) {
  return g_dependent_launch.load(std::memory_order_relaxed) && RunsSm90Code(kernel);
}

int EncodeTensorMap4d(CUtensorMap* map, const void* base, const cuuint64_t dims[4],
                      const cuuint64_t strides[3], const cuuint32_t box[4]) {
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static const Encode encode = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found;
    // The function as CUDA 12.0 defined it; toolkits before 12.5 only have the unversioned query.
#if CUDART_VERSION >= 12050
    const cudaError_t err =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault, &found);
#else
    const cudaError_t err = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &function, cudaEnableDefault, &found);
#endif
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      function = nullptr;
    }
    return reinterpret_cast<Encode>(function);
  }();
  if (encode == nullptr) return 1;
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, const_cast<void*>(base), dims, strides, box,
                element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS
             ? 0
             : 1;
}

void SetDependentLaunchForTesting(bool enabled) { g_dependent_launch.store(enabled, std::memory_order_relaxed); }

}  // namespace detail
}  // namespace cuda
}  // namespace fftconv
