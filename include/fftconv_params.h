// Definitions shared by the TensorFlow side (cc/) and the CUDA kernels (cuda/): the launch parameters
// of the three ops, the FFT size limits and the spectrum geometry. No TensorFlow or CUDA headers, so
// the CPU-only build and the standalone kernel check both include it as it is.
//
// Every size in the parameter structs has been validated by cc/fftconv_shapes.h: element counts fit
// in int32, fft_size is one of kFftSizes (IsFftSize), windows lie inside the frame.
#ifndef TF_FFTCONV_INCLUDE_FFTCONV_PARAMS_H_
#define TF_FFTCONV_INCLUDE_FFTCONV_PARAMS_H_

#include <cstdint>

#ifdef __CUDACC__
#define FFTCONV_HOST_DEVICE __host__ __device__
#else
#define FFTCONV_HOST_DEVICE
#endif

namespace fftconv {

// fft_size S: a power of two in [kMinFftSize, kMaxFftSize], three times a power of two in
// [kMinFftSize3, kMaxFftSize3] or five times one in [kMinFftSize5, kMaxFftSize5] (a padded image
// that barely overflows a power of two then needs fewer bins than the next one, e.g. 48 * 25 or
// 40 * 21 against 64 * 33). S is always even, so a spectrum keeps S/2 + 1 columns. The CUDA
// kernels have one family per size and twiddle tables of the 128th, 96th and 80th roots of unity
// (cuda/fft_stages.cuh); tf_fftconv/geometry.py's MAX_FFT_SIZE and FFT_SIZES repeat the values
// (tests/test_conv.py checks they agree).
constexpr int kMinFftSize = 2;
constexpr int kMaxFftSize = 128;
constexpr int kMinFftSize3 = 6;
constexpr int kMaxFftSize3 = 96;
constexpr int kMinFftSize5 = 10;
constexpr int kMaxFftSize5 = 80;
// Every allowed size, ascending.
constexpr int kFftSizes[] = {2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128};
// The allowed sizes as the error messages name them.
#define FFTCONV_FFT_SIZES_TEXT "2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128"

// True when n is a power of two (n >= 1).
FFTCONV_HOST_DEVICE constexpr bool IsPowerOfTwo(int64_t n) { return n >= 1 && (n & (n - 1)) == 0; }

// True for the sizes that carry a radix-3 stage: 3 * 2^k in [kMinFftSize3, kMaxFftSize3].
FFTCONV_HOST_DEVICE constexpr bool IsRadix3FftSize(int64_t n) {
  return n >= kMinFftSize3 && n <= kMaxFftSize3 && n % 3 == 0 && IsPowerOfTwo(n / 3);
}

// True for the sizes that carry a radix-5 stage: 5 * 2^k in [kMinFftSize5, kMaxFftSize5].
FFTCONV_HOST_DEVICE constexpr bool IsRadix5FftSize(int64_t n) {
  return n >= kMinFftSize5 && n <= kMaxFftSize5 && n % 5 == 0 && IsPowerOfTwo(n / 5);
}

// True for every allowed fft_size.
FFTCONV_HOST_DEVICE constexpr bool IsFftSize(int64_t n) {
  return (n >= kMinFftSize && n <= kMaxFftSize && IsPowerOfTwo(n)) || IsRadix3FftSize(n) ||
         IsRadix5FftSize(n);
}

// The odd factor of an allowed size: 3 or 5 for the sizes with a radix-3 or radix-5 stage, 1 for
// the powers of two.
FFTCONV_HOST_DEVICE constexpr int OddFftFactor(int64_t n) {
  return IsRadix3FftSize(n) ? 3 : IsRadix5FftSize(n) ? 5 : 1;
}

// ceil(log2(n)) for n >= 1: the exponent of a power of two, or of the next one up.
FFTCONV_HOST_DEVICE constexpr int Log2(int64_t n) {
  int log2 = 0;
  while ((int64_t{1} << log2) < n) ++log2;
  return log2;
}

// Bins of an S x S real FFT: S rows (ky) by S/2 + 1 columns (kx, the half axis).
FFTCONV_HOST_DEVICE constexpr int64_t HalfWidth(int64_t fft_size) { return fft_size / 2 + 1; }
FFTCONV_HOST_DEVICE constexpr int64_t NumBins(int64_t fft_size) {
  return fft_size * HalfWidth(fft_size);
}

// FftconvRfft2d: forward real 2-D FFT of a batch of images, padded implicitly into an S x S frame.
//   input    : NCHW [batch, channels, height, width] or NHWC [batch, height, width, channels], real.
//   spectrum : frequency-major [bins, batch, channels] complex, bins = S * (S/2 + 1), bin index
//              ky * (S/2 + 1) + kx (kx on the half axis).
// Image pixel (h, w) sits at frame position (offset_h + h, offset_w + w); the rest of the frame is 0.
// Half precision (float16, bfloat16 images): the spectrum is [bins, batch, channels, 2] of the same
// half type (the trailing pair: real, imaginary) and holds X / S^2 ("mean-normalised"): every bin is
// then at most the mean magnitude of the frame, so it overflows only where the input does. The
// transform itself runs in float32.
// round_to_tf32: float spectra on sm_80+ are stored rounded to TF32, by the rule the matmul's TF32
// kernels round their operands with (cvt.rn on sm_90+, cvt.rna before; the low 13 bits zero), so
// that a product of such spectra with tf32_operands (SpectralMatmulParams) needs no conversion. The
// caller sets it only where TensorFlow's TF32 switch is on; other types and devices ignore it.
struct Rfft2dParams {
  int batch, channels, height, width;
  int fft_size, offset_h, offset_w;
  bool nhwc;
  // Last and defaulted, as SpectralMatmulParams' conjugate flags.
  bool round_to_tf32 = false;
};

// FftconvIrfft2d: the inverse, scaled by 1/S^2, writing only the window
// [offset_h, offset_h + out_h) x [offset_w, offset_w + out_w) of the S x S frame.
//   spectrum : [bins, batch, channels] complex (Hermitian half spectrum; the imaginary parts of the
//              kx = 0 and kx = S/2 columns are ignored, as numpy.fft.irfft2 does).
//   output   : NCHW [batch, channels, out_h, out_w] or NHWC [batch, out_h, out_w, channels], real.
// Half precision: spectrum [bins, batch, channels, 2], mean-normalised (see Rfft2dParams), so the
// output is irfft(S^2 * spectrum): the unscaled sum; irfft2d(rfft2d(x)) is x in every dtype.
struct Irfft2dParams {
  int batch, channels;
  int fft_size, out_h, out_w, offset_h, offset_w;
  bool nhwc;
};

// The activation of a convolution layer that the CPU transforms take in: FftconvIrfft2dBiasActivation
// applies it to the inverse plus a bias per channel as it stores them, and
// FftconvRfft2dActivationGradient multiplies its input by the activation's derivative as it reads
// it (the derivative taken from the activation's output: ReLU's is 1 where the output is > 0 and 0
// elsewhere, as TensorFlow's ReluGrad takes it). kLinear is the identity.
enum class Activation { kLinear, kRelu };

// FftconvSpectralMatmul: one complex matmul per frequency bin, c[f] = op_a(a[f]) * op_b(b[f]).
//   a : [bins, a_rows, a_cols], b : [bins, b_rows, b_cols], c : [bins, m, n], all complex, row-major.
//   op_x is the identity, the transpose (transpose_x), the conjugate (conjugate_x) or the conjugate
//   transpose (adjoint_x, or transpose_x with conjugate_x); adjoint_x comes alone.
//   An operand is transposed when transpose_x || adjoint_x, conjugated when conjugate_x || adjoint_x.
//   m, n, k are the sizes after op: op_a(a[f]) is m x k and op_b(b[f]) is k x n.
// allow_tf32: the caller's TensorFlow TF32 switch; only float on sm_80+ may use tensor cores.
// tf32_operands: a and b hold TF32 values already (rfft2d's round_to_tf32), so the TF32 kernels take
// their bits unconverted; only the TF32 product (float, allow_tf32, sm_80+) reads it.
// alpha: c[f] = alpha * op_a(a[f]) * op_b(b[f]), applied in the compute type (float32 for the half
// types) before c is rounded to its storage type. fft_conv2d passes S^2 for half-precision spectra,
// whose product is then again mean-normalised (see Rfft2dParams), and 1 otherwise.
struct SpectralMatmulParams {
  int bins, m, n, k;
  bool transpose_a, adjoint_a, transpose_b, adjoint_b;
  bool allow_tf32;
  float alpha = 1.0f;
  // Last and defaulted, so that an aggregate initialiser naming only the fields above still means
  // what it says.
  bool conjugate_a = false, conjugate_b = false;
  bool tf32_operands = false;
};

}  // namespace fftconv

#endif  // TF_FFTCONV_INCLUDE_FFTCONV_PARAMS_H_
