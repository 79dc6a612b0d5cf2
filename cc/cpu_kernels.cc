// The CPU kernels of the three ops (cc/fftconv_cpu.h), compiled from cc/cpu_kernels_impl.h once per
// instruction set and chosen once per process, the widest the CPU has: AVX-512 (F, DQ, BW, VL;
// 64-byte vectors), AVX2 with FMA and F16C (32-byte vectors), or SSE2-width vectors (16 bytes, any
// x86-64 or other CPU). The environment variable TF_FFTCONV_CPU_KERNELS=generic, avx2 or avx512
// asks for one copy (the widest the CPU has up to it; tests compare them). Each kernel is compiled
// for float32 and float64 and for the two half-precision storage types (computing in float32).
//
// The wider copies are compiled under `#pragma GCC target` rather than with -mavx2 on the command
// line: the headers above them (the standard library, cc/) are then compiled for the baseline only,
// so no inline function that the baseline copy shares can be emitted with wider instructions, and
// being baseline functions they can still be inlined into the wide ones (a callee whose target
// options differ otherwise, e.g. in tuning, is not).

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>  // the wide copies' float16 conversions (cc/cpu_kernels_impl.h)
#endif

#include "Eigen/Core"  // Eigen::half, Eigen::bfloat16 and their float conversions
#include "cc/cpu_fft.h"
#include "cc/fftconv_cpu.h"
#include "cc/fftconv_shapes.h"

namespace fftconv {

namespace cpu_generic {
#define FFTCONV_CPU_VECTOR_BYTES 16
#include "cc/cpu_kernels_impl.h"
#undef FFTCONV_CPU_VECTOR_BYTES
}  // namespace cpu_generic

#if defined(__x86_64__)
#define FFTCONV_CPU_HAVE_AVX2_COPY 1
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace cpu_avx2 {
#define FFTCONV_CPU_VECTOR_BYTES 32
#include "cc/cpu_kernels_impl.h"
#undef FFTCONV_CPU_VECTOR_BYTES
}  // namespace cpu_avx2
#pragma GCC pop_options

// The same 2 x 2 matmul tile as the AVX2 copy: with the 32 registers of AVX-512, 4 x 2, 2 x 4 and
// 3 x 2 tiles were no faster on the CPU cases (docs/performance.md).
// GCC 12 warns inside its own avx512fintrin.h that the _mm512_undefined_* operand of
// _mm512_cvtph_ps / _mm512_cvtps_ph may be used uninitialized; the operand is undefined by design.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,f16c")
namespace cpu_avx512 {
#define FFTCONV_CPU_VECTOR_BYTES 64
#include "cc/cpu_kernels_impl.h"
#undef FFTCONV_CPU_VECTOR_BYTES
}  // namespace cpu_avx512
#pragma GCC pop_options
#pragma GCC diagnostic pop
#endif

namespace {

enum class CpuKernels { kGeneric, kAvx2, kAvx512 };

// The widest copy that the CPU runs, capped by TF_FFTCONV_CPU_KERNELS when it names one.
CpuKernels ChosenCpuKernels() {
#ifdef FFTCONV_CPU_HAVE_AVX2_COPY
  static const CpuKernels chosen = [] {
    CpuKernels cap = CpuKernels::kAvx512;
    if (const char* forced = std::getenv("TF_FFTCONV_CPU_KERNELS")) {
      const std::string name(forced);
      if (name == "generic") cap = CpuKernels::kGeneric;
      if (name == "avx2") cap = CpuKernels::kAvx2;
    }
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      __builtin_cpu_supports("f16c");
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl");
    if (avx512 && cap == CpuKernels::kAvx512) return CpuKernels::kAvx512;
    if (avx2 && cap != CpuKernels::kGeneric) return CpuKernels::kAvx2;
    return CpuKernels::kGeneric;
  }();
  return chosen;
#else
  return CpuKernels::kGeneric;
#endif
}

}  // namespace

const char* CpuKernelsName() {
  switch (ChosenCpuKernels()) {
    case CpuKernels::kAvx512:
      return "avx512";
    case CpuKernels::kAvx2:
      return "avx2";
    default:
      return "generic";
  }
}

#ifdef FFTCONV_CPU_HAVE_AVX2_COPY
// FFTCONV_CPU_DISPATCH(Kernel<Compute, Io>(arguments)): the call in the copy chosen for this CPU.
#define FFTCONV_CPU_DISPATCH(...)                                        \
  (ChosenCpuKernels() == CpuKernels::kAvx512 ? cpu_avx512::__VA_ARGS__ \
   : ChosenCpuKernels() == CpuKernels::kAvx2 ? cpu_avx2::__VA_ARGS__   \
                                             : cpu_generic::__VA_ARGS__)
#else
#define FFTCONV_CPU_DISPATCH(...) cpu_generic::__VA_ARGS__
#endif

// The compute type of each storage type: float and double compute in themselves, the half types
// in float; a spectrum is handed to the kernels as its (re, im) pairs of the storage type.
template <typename Real>
struct ComputeOf {
  using type = Real;
};
template <>
struct ComputeOf<Eigen::half> {
  using type = float;
};
template <>
struct ComputeOf<Eigen::bfloat16> {
  using type = float;
};

template <typename Real>
const Real* Pairs(const SpectrumElement<Real>* spectrum) {
  return reinterpret_cast<const Real*>(spectrum);
}
template <typename Real>
Real* Pairs(SpectrumElement<Real>* spectrum) {
  return reinterpret_cast<Real*>(spectrum);
}

template <typename Real>
void Rfft2dOnCpu(const ParallelRunner& parallel, const Rfft2dParams& params, const Real* input,
                 SpectrumElement<Real>* spectrum, const ActivationGradient<Real>& gradient) {
  using Compute = typename ComputeOf<Real>::type;
  FFTCONV_CPU_DISPATCH(Rfft2d<Compute, Real>(parallel, params, input, Pairs<Real>(spectrum),
                                             gradient));
}

template <typename Real>
void Irfft2dOnCpu(const ParallelRunner& parallel, const Irfft2dParams& params,
                  const SpectrumElement<Real>* spectrum, Real* output,
                  const BiasActivation<Real>& epilogue) {
  using Compute = typename ComputeOf<Real>::type;
  FFTCONV_CPU_DISPATCH(Irfft2d<Compute, Real>(parallel, params, Pairs<Real>(spectrum), output,
                                              epilogue));
}

template <typename Real>
void SpectralMatmulOnCpu(const ParallelRunner& parallel, const SpectralMatmulParams& params,
                         const SpectrumElement<Real>* a, const SpectrumElement<Real>* b,
                         SpectrumElement<Real>* c) {
  using Compute = typename ComputeOf<Real>::type;
  FFTCONV_CPU_DISPATCH(SpectralMatmul<Compute, Real>(parallel, params, Pairs<Real>(a),
                                                      Pairs<Real>(b), Pairs<Real>(c)));
}

#undef FFTCONV_CPU_DISPATCH

#define INSTANTIATE(Real)                                                                      \
  template void Rfft2dOnCpu<Real>(const ParallelRunner&, const Rfft2dParams&, const Real*,     \
                                  SpectrumElement<Real>*, const ActivationGradient<Real>&);    \
  template void Irfft2dOnCpu<Real>(const ParallelRunner&, const Irfft2dParams&,                \
                                   const SpectrumElement<Real>*, Real*,                        \
                                   const BiasActivation<Real>&);                               \
  template void SpectralMatmulOnCpu<Real>(const ParallelRunner&, const SpectralMatmulParams&,  \
                                          const SpectrumElement<Real>*,                        \
                                          const SpectrumElement<Real>*, SpectrumElement<Real>*);
INSTANTIATE(float)
INSTANTIATE(double)
INSTANTIATE(Eigen::half)
INSTANTIATE(Eigen::bfloat16)
#undef INSTANTIATE

}  // namespace fftconv
