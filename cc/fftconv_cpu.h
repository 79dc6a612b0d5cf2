// The CPU kernels of the three ops, apart from TensorFlow's OpKernel machinery: the OpKernels run
// them on TensorFlow's CPU thread pool (cc/ops.cc), the XLA host handlers on XLA's intra-op
// pool (cc/xla_lowering.cc). Buffer layouts are those of the parameter structs (include/fftconv_params.h);
// sizes have been validated (cc/fftconv_shapes.h). Defined, for float, double, Eigen::half and
// Eigen::bfloat16, in cc/cpu_kernels.cc.
#ifndef TF_FFTCONV_CC_FFTCONV_CPU_H_
#define TF_FFTCONV_CC_FFTCONV_CPU_H_

#include <complex>
#include <cstdint>
#include <functional>

#include "cc/dtype_dispatch.h"
#include "include/fftconv_params.h"

namespace fftconv {

// Runs work(begin, end) over [0, units), split across a thread pool; cost_per_unit is a rough
// count of instructions per unit, from which the pool chooses how finely to split.
using ParallelRunner = std::function<void(int64_t units, int64_t cost_per_unit,
                                          const std::function<void(int64_t, int64_t)>& work)>;

// The element type of a spectrum whose images are `Real`: std::complex<Real> for float and double;
// for Eigen::half and Eigen::bfloat16 the same half type, a spectrum then being
// [bins, batch, channels, 2] (the trailing pair: real, imaginary), stored mean-normalised (divided
// by S^2) while the transforms and products run in float32.
template <typename Real>
using SpectrumElement = ByPrecision<Real, std::complex<Real>, Eigen::half, Eigen::bfloat16>;

// FftconvRfft2dActivationGradient: the transform takes input * activation'(z) as it reads the
// input, the derivative from the activation's output y = activation(z) (`activation_output`, of
// the input's shape and layout). The default, kLinear with no output, is FftconvRfft2d.
template <typename Real>
struct ActivationGradient {
  const Real* activation_output = nullptr;
  Activation activation = Activation::kLinear;
};

// FftconvIrfft2dBiasActivation: the inverse stores activation(value + bias[c]) for the window's
// value of channel c (`bias`: [channels], or null for none). The default is FftconvIrfft2d.
template <typename Real>
struct BiasActivation {
  const Real* bias = nullptr;
  Activation activation = Activation::kLinear;
};

// Real: float, double, Eigen::half or Eigen::bfloat16.
// input: NCHW or NHWC real images; spectrum: [bins, batch, channels] complex (or [.., 2] half).
template <typename Real>
void Rfft2dOnCpu(const ParallelRunner& parallel, const Rfft2dParams& params, const Real* input,
                 SpectrumElement<Real>* spectrum,
                 const ActivationGradient<Real>& gradient = ActivationGradient<Real>());

// spectrum: [bins, batch, channels] complex (or [.., 2] half); output: the NCHW or NHWC window.
template <typename Real>
void Irfft2dOnCpu(const ParallelRunner& parallel, const Irfft2dParams& params,
                  const SpectrumElement<Real>* spectrum, Real* output,
                  const BiasActivation<Real>& epilogue = BiasActivation<Real>());

// a, b, c: [bins, rows, cols] complex (or [.., 2] half), row-major per bin;
// c = params.alpha * op(a) op(b).
template <typename Real>
void SpectralMatmulOnCpu(const ParallelRunner& parallel, const SpectralMatmulParams& params,
                         const SpectrumElement<Real>* a, const SpectrumElement<Real>* b,
                         SpectrumElement<Real>* c);

// The copy of the kernels this process runs (cc/cpu_kernels.cc): "avx512", "avx2" or "generic".
const char* CpuKernelsName();

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_FFTCONV_CPU_H_
