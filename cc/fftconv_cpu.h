// The CPU kernels of the three ops, apart from TensorFlow's OpKernel machinery: the OpKernels run
// them on TensorFlow's CPU thread pool (cc/<op>_op.cc), the XLA host handlers on XLA's intra-op
// pool (cc/<op>_xla.cc). Buffer layouts are those of the parameter structs (cc/fftconv_params.h);
// sizes have been validated (cc/fftconv_shapes.h). Defined, for float and double, in cc/cpu_kernels.cc.
#ifndef TF_FFTCONV_CC_FFTCONV_CPU_H_
#define TF_FFTCONV_CC_FFTCONV_CPU_H_

#include <complex>
#include <cstdint>
#include <functional>

#include "cc/fftconv_params.h"

namespace fftconv {

// Runs work(begin, end) over [0, units), split across a thread pool; cost_per_unit is a rough
// count of instructions per unit, from which the pool chooses how finely to split.
using ParallelRunner = std::function<void(int64_t units, int64_t cost_per_unit,
                                          const std::function<void(int64_t, int64_t)>& work)>;

// input: NCHW or NHWC real images; spectrum: [bins, batch, channels] complex.
template <typename Real>
void Rfft2dOnCpu(const ParallelRunner& parallel, const Rfft2dParams& params, const Real* input,
                 std::complex<Real>* spectrum);

// spectrum: [bins, batch, channels] complex; output: the NCHW or NHWC real window.
template <typename Real>
void Irfft2dOnCpu(const ParallelRunner& parallel, const Irfft2dParams& params,
                  const std::complex<Real>* spectrum, Real* output);

// a, b, c: [bins, rows, cols] complex, row-major per bin.
template <typename Real>
void SpectralMatmulOnCpu(const ParallelRunner& parallel, const SpectralMatmulParams& params,
                         const std::complex<Real>* a, const std::complex<Real>* b,
                         std::complex<Real>* c);

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_FFTCONV_CPU_H_
