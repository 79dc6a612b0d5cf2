// Element types and complex arithmetic of the package's kernels: the storage and compute types of a
// tensor (float, double, and the half-precision types that compute in float), conversions between
// them, and the complex operations on float2 / double2. Shared by the FFT kernels
// (cuda/fft_stages.cuh) and the spectral matmul (cuda/spectral_matmul.cu).
#ifndef TF_FFTCONV_CUDA_COMPLEX_MATH_CUH_
#define TF_FFTCONV_CUDA_COMPLEX_MATH_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "fftconv_cuda.h"

namespace fftconv {
namespace cuda {
namespace detail {

// ---------------------------------------------------------------------------------------------
// Complex values: float2 / double2, (x, y) = (re, im).
template <typename Real>
struct ComplexOf;
template <>
struct ComplexOf<float> {
  using type = float2;
};
template <>
struct ComplexOf<double> {
  using type = double2;
};
template <typename Real>
using complex_t = typename ComplexOf<Real>::type;

// ---------------------------------------------------------------------------------------------
// Storage and arithmetic types. A kernel reads and writes tensors of a storage type Io and computes
// in Storage<Io>::Compute: float and double compute in themselves, __half and __nv_bfloat16 in
// float. A spectrum element is Storage<Io>::Pair: float2 / double2, or the (re, im) pair
// __half2 / __nv_bfloat162 of a half-precision spectrum [bins, rows, cols, 2].
template <typename Io>
struct Storage {
  using Compute = Io;
  using Pair = complex_t<Io>;
  static constexpr bool kHalf = false;
};
template <>
struct Storage<__half> {
  using Compute = float;
  using Pair = __half2;
  static constexpr bool kHalf = true;
};
template <>
struct Storage<__nv_bfloat16> {
  using Compute = float;
  using Pair = __nv_bfloat162;
  static constexpr bool kHalf = true;
};

}  // namespace detail

// The device type behind each launcher type (cuda/fftconv_cuda.h): Float16 and BFloat16 are the
// 16-bit patterns of __half and __nv_bfloat16.
template <typename T>
struct DeviceType {
  using type = std::conditional_t<std::is_same<T, Float16>::value, __half,
                                  std::conditional_t<std::is_same<T, BFloat16>::value, __nv_bfloat16, T>>;
};
static_assert(sizeof(Float16) == sizeof(__half) && sizeof(BFloat16) == sizeof(__nv_bfloat16),
              "Float16 / BFloat16 must be the 16-bit patterns of __half / __nv_bfloat16");

namespace detail {

template <typename T>
__device__ __forceinline__ T ToCompute(T v) {
  return v;
}
__device__ __forceinline__ float ToCompute(__half v) { return __half2float(v); }
__device__ __forceinline__ float ToCompute(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float2 ToCompute(__half2 v) { return __half22float2(v); }
__device__ __forceinline__ float2 ToCompute(__nv_bfloat162 v) { return __bfloat1622float2(v); }

// Rounds a computed value (real or complex) to its storage type (to nearest even).
template <typename Io, typename T>
__device__ __forceinline__ Io ToStorage(T v) {
  if constexpr (std::is_same<Io, __half>::value) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same<Io, __nv_bfloat16>::value) {
    return __float2bfloat16_rn(v);
  } else if constexpr (std::is_same<Io, __half2>::value) {
    return __floats2half2_rn(v.x, v.y);
  } else if constexpr (std::is_same<Io, __nv_bfloat162>::value) {
    return __floats2bfloat162_rn(v.x, v.y);
  } else {
    return v;
  }
}

template <typename C>
__device__ __forceinline__ C CAdd(C a, C b) {
  return C{a.x + b.x, a.y + b.y};
}
template <typename C>
__device__ __forceinline__ C CSub(C a, C b) {
  return C{a.x - b.x, a.y - b.y};
}
template <typename C>
__device__ __forceinline__ C CMul(C a, C b) {
  return C{a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};
}
template <typename C>
__device__ __forceinline__ C CScale(C a, decltype(a.x) s) {
  return C{a.x * s, a.y * s};
}

}  // namespace detail
}  // namespace cuda
}  // namespace fftconv

#endif  // TF_FFTCONV_CUDA_COMPLEX_MATH_CUH_
