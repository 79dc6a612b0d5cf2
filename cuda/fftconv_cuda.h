// Launchers of the tf_fftconv CUDA kernels.
//
// No TensorFlow headers here: plain pointers, sizes and a cudaStream_t, so the kernels can be built,
// tested and benchmarked on their own. Every launcher only enqueues work on `stream` (no
// synchronisation, no allocation) and returns cudaSuccess (0) or the first CUDA error it met
// (launch or configuration); FftconvCudaErrorString turns that code into text.
//
// The parameter structs and their buffer layouts are in include/fftconv_params.h. Complex buffers are
// interleaved (re, im) pairs of `Real`, i.e. float2 / double2 in memory; Real is float, double,
// Float16 or BFloat16. Sizes are validated by the
// caller (cc/fftconv_shapes.h). Empty outputs are legal and launch nothing; an image with no pixels
// gives a zero spectrum.
#ifndef TF_FFTCONV_CUDA_FFTCONV_CUDA_H_
#define TF_FFTCONV_CUDA_FFTCONV_CUDA_H_

#include "include/fftconv_params.h"

typedef struct CUstream_st* cudaStream_t;

namespace fftconv {
namespace cuda {

// Half-precision storage as the launchers take it: the 16-bit patterns of IEEE binary16 (__half,
// Eigen::half) and bfloat16 (__nv_bfloat16, Eigen::bfloat16), so that neither CUDA's nor
// TensorFlow's half types appear here. A half-precision spectrum is (re, im) pairs of them,
// [bins, rows, cols, 2], stored mean-normalised (divided by S^2; include/fftconv_params.h); the kernels
// compute in float.
struct Float16 {
  unsigned short bits;
};
struct BFloat16 {
  unsigned short bits;
};

// The element types every launcher is compiled for (each launcher's .cu instantiates it for X(type)).
#define FFTCONV_FOR_EACH_LAUNCHER_TYPE(X) X(float) X(double) X(Float16) X(BFloat16)

template <typename Real>
int LaunchRfft2d(const Rfft2dParams& params, const Real* input, Real* spectrum, cudaStream_t stream);

template <typename Real>
int LaunchIrfft2d(const Irfft2dParams& params, const Real* spectrum, Real* output,
                  cudaStream_t stream);

template <typename Real>
int LaunchSpectralMatmul(const SpectralMatmulParams& params, const Real* a, const Real* b, Real* c,
                         cudaStream_t stream);

const char* FftconvCudaErrorString(int code);

}  // namespace cuda
}  // namespace fftconv

#endif  // TF_FFTCONV_CUDA_FFTCONV_CUDA_H_
