// The CPU kernels of the three ops (cc/fftconv_cpu.h), compiled from cc/cpu_kernels_impl.h once per
// instruction set and chosen once per process: AVX2 with FMA and F16C (32-byte vectors) where the
// CPU has them, SSE2-width vectors (16 bytes, any x86-64 or other CPU) otherwise. The environment variable
// TF_FFTCONV_CPU_KERNELS=generic forces the second (tests compare the two). Each kernel is compiled
// for float32 and float64 and for the two half-precision storage types (computing in float32).
//
// The AVX2 copy is compiled under `#pragma GCC target` rather than with -mavx2 on the command line:
// the headers above it (the standard library, cc/) are then compiled for the baseline only, so no
// inline function that the baseline copy shares can be emitted with AVX2 instructions, and being
// baseline functions they can still be inlined into the AVX2 ones (a callee whose target options
// differ otherwise, e.g. in tuning, is not).

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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
#endif

namespace {

bool UseAvx2Kernels() {
#ifdef FFTCONV_CPU_HAVE_AVX2_COPY
  static const bool use = [] {
    const char* forced = std::getenv("TF_FFTCONV_CPU_KERNELS");
    if (forced != nullptr && std::string(forced) == "generic") return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
  }();
  return use;
#else
  return false;
#endif
}

}  // namespace

#ifdef FFTCONV_CPU_HAVE_AVX2_COPY
// FFTCONV_CPU_DISPATCH(Kernel<Compute, Io>(arguments)): the call in the copy chosen for this CPU.
#define FFTCONV_CPU_DISPATCH(...) \
  (UseAvx2Kernels() ? cpu_avx2::__VA_ARGS__ : cpu_generic::__VA_ARGS__)
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
                 SpectrumElement<Real>* spectrum) {
  using Compute = typename ComputeOf<Real>::type;
  FFTCONV_CPU_DISPATCH(Rfft2d<Compute, Real>(parallel, params, input, Pairs<Real>(spectrum)));
}

template <typename Real>
void Irfft2dOnCpu(const ParallelRunner& parallel, const Irfft2dParams& params,
                  const SpectrumElement<Real>* spectrum, Real* output) {
  using Compute = typename ComputeOf<Real>::type;
  FFTCONV_CPU_DISPATCH(Irfft2d<Compute, Real>(parallel, params, Pairs<Real>(spectrum), output));
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
                                  SpectrumElement<Real>*);                                     \
  template void Irfft2dOnCpu<Real>(const ParallelRunner&, const Irfft2dParams&,                \
                                   const SpectrumElement<Real>*, Real*);                       \
  template void SpectralMatmulOnCpu<Real>(const ParallelRunner&, const SpectralMatmulParams&,  \
                                          const SpectrumElement<Real>*,                        \
                                          const SpectrumElement<Real>*, SpectrumElement<Real>*);
INSTANTIATE(float)
INSTANTIATE(double)
INSTANTIATE(Eigen::half)
INSTANTIATE(Eigen::bfloat16)
#undef INSTANTIATE

}  // namespace fftconv
