// The CPU kernels of the three ops (cc/fftconv_cpu.h), compiled from cc/cpu_kernels_impl.h once per
// instruction set and chosen once per process: AVX2 with FMA (32-byte vectors) where the CPU has
// them, SSE2-width vectors (16 bytes, any x86-64 or other CPU) otherwise. The environment variable
// TF_FFTCONV_CPU_KERNELS=generic forces the second (tests compare the two).
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
#include <utility>
#include <vector>

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
#pragma GCC target("avx2,fma")
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
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return use;
#else
  return false;
#endif
}

}  // namespace

#ifdef FFTCONV_CPU_HAVE_AVX2_COPY
#define FFTCONV_CPU_DISPATCH(kernel, ...) \
  (UseAvx2Kernels() ? cpu_avx2::kernel(__VA_ARGS__) : cpu_generic::kernel(__VA_ARGS__))
#else
#define FFTCONV_CPU_DISPATCH(kernel, ...) cpu_generic::kernel(__VA_ARGS__)
#endif

template <typename Real>
void Rfft2dOnCpu(const ParallelRunner& parallel, const Rfft2dParams& params, const Real* input,
                 std::complex<Real>* spectrum) {
  FFTCONV_CPU_DISPATCH(Rfft2d<Real>, parallel, params, input, spectrum);
}

template <typename Real>
void Irfft2dOnCpu(const ParallelRunner& parallel, const Irfft2dParams& params,
                  const std::complex<Real>* spectrum, Real* output) {
  FFTCONV_CPU_DISPATCH(Irfft2d<Real>, parallel, params, spectrum, output);
}

template <typename Real>
void SpectralMatmulOnCpu(const ParallelRunner& parallel, const SpectralMatmulParams& params,
                         const std::complex<Real>* a, const std::complex<Real>* b,
                         std::complex<Real>* c) {
  FFTCONV_CPU_DISPATCH(SpectralMatmul<Real>, parallel, params, a, b, c);
}

#undef FFTCONV_CPU_DISPATCH

#define INSTANTIATE(Real)                                                                     \
  template void Rfft2dOnCpu<Real>(const ParallelRunner&, const Rfft2dParams&, const Real*,    \
                                  std::complex<Real>*);                                       \
  template void Irfft2dOnCpu<Real>(const ParallelRunner&, const Irfft2dParams&,               \
                                   const std::complex<Real>*, Real*);                         \
  template void SpectralMatmulOnCpu<Real>(const ParallelRunner&, const SpectralMatmulParams&, \
                                          const std::complex<Real>*,                          \
                                          const std::complex<Real>*, std::complex<Real>*);
INSTANTIATE(float)
INSTANTIATE(double)
#undef INSTANTIATE

}  // namespace fftconv
