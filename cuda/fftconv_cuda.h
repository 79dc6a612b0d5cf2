// Launchers of the tf_fftconv CUDA kernels.
//
// No TensorFlow headers here: plain pointers, sizes and a cudaStream_t, so the kernels can be built,
// tested and benchmarked on their own. Every launcher only enqueues work on `stream` (no
// synchronisation, no allocation) and returns cudaSuccess (0) or the first CUDA error it met
// (launch or configuration); FftconvCudaErrorString turns that code into text.
//
// Complex buffers are interleaved (re, im) pairs of `Real`, i.e. float2 / double2 in memory.
// Sizes are validated by the caller (cc/fftconv_shapes.h): every element count fits in int32,
// fft_size is a power of two in [2, 128], windows lie inside the S x S frame. Empty sizes are legal
// and launch nothing.
#ifndef TF_FFTCONV_CUDA_FFTCONV_CUDA_H_
#define TF_FFTCONV_CUDA_FFTCONV_CUDA_H_

typedef struct CUstream_st* cudaStream_t;

namespace fftconv {
namespace cuda {

// Forward real 2-D FFT of a batch of images, padded implicitly into an S x S frame.
//   input    : NCHW [batch, channels, height, width] or NHWC [batch, height, width, channels], real.
//   spectrum : frequency-major [bins, batch, channels] complex, bins = S * (S/2 + 1), bin index
//              ky * (S/2 + 1) + kx (kx on the half axis).
// Image pixel (h, w) sits at frame position (offset_h + h, offset_w + w); the rest of the frame is 0.
struct Rfft2dParams {
  int batch, channels, height, width;
  int fft_size, offset_h, offset_w;
  bool nhwc;
};

// Inverse of the above, scaled by 1/S^2, writing only the window
// [offset_h, offset_h + out_h) x [offset_w, offset_w + out_w) of the S x S frame.
//   spectrum : [bins, batch, channels] complex (Hermitian half spectrum; the imaginary parts of the
//              kx = 0 and kx = S/2 columns are ignored, as numpy.fft.irfft2 does).
//   output   : NCHW [batch, channels, out_h, out_w] or NHWC [batch, out_h, out_w, channels], real.
struct Irfft2dParams {
  int batch, channels;
  int fft_size, out_h, out_w, offset_h, offset_w;
  bool nhwc;
};

// One complex matmul per frequency bin: c[f] = op_a(a[f]) * op_b(b[f]).
//   a : [bins, a_rows, a_cols], b : [bins, b_rows, b_cols], c : [bins, m, n], all complex, row-major.
//   op_x is identity, transpose (transpose_x) or conjugate transpose (adjoint_x); never both.
//   m, n, k are the sizes after op: op_a(a[f]) is m x k and op_b(b[f]) is k x n.
// allow_tf32: the caller's TensorFlow TF32 switch; only float on sm_80+ may use tensor cores.
struct SpectralMatmulParams {
  int bins, m, n, k;
  bool transpose_a, adjoint_a, transpose_b, adjoint_b;
  bool allow_tf32;
};

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
