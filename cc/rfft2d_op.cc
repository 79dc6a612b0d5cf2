// FftconvRfft2d: registration, shape function and CPU kernel.
#include <algorithm>
#include <vector>

#include "cc/cpu_fft.h"
#include "cc/rfft2d.h"
#include "tensorflow/core/framework/op.h"

namespace fftconv {

using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

REGISTER_OP("FftconvRfft2d")
    .Input("x: T")
    .Input("fft_size: int32")
    .Output("spectrum: Tcomplex")
    .Attr("T: {float, double} = DT_FLOAT")
    .Attr("Tcomplex: {complex64, complex128} = DT_COMPLEX64")
    .Attr("offset_h: int = 0")
    .Attr("offset_w: int = 0")
    .Attr("data_format: string = 'NCHW'")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      ShapeHandle x;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(0), 4, &x));
      FftAttrs attrs;
      TF_RETURN_IF_ERROR(ReadFftAttrs(c, &attrs));
      int64_t fft_size = 0;
      TF_RETURN_IF_ERROR(ReadScalarInput(c, 1, "fft_size", &fft_size));
      int64_t dims[4] = {-1, -1, -1, -1};
      KnownDims(c, x, 4, dims);
      const ImageDims image = ImageDimsFrom(dims, attrs.nhwc);
      TF_RETURN_IF_ERROR(ValidateRfft2d(image, fft_size, attrs.offset_h, attrs.offset_w));
      const int64_t bins = KnownValue(fft_size) ? NumBins(fft_size) : -1;
      c->set_output(0, c->MakeShape({DimOrUnknown(c, bins), DimOrUnknown(c, image.batch),
                                     DimOrUnknown(c, image.channels)}));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Forward real 2-D FFT of a batch of images placed at (offset_h, offset_w) in an fft_size x fft_size
frame of zeros (the padding is implicit). fft_size is an int32 scalar input (as tf.signal's
fft_length), so it may be computed at run time. Output is frequency-major: [bins, batch, channels]
with bins = fft_size * (fft_size / 2 + 1), bin index ky * (fft_size / 2 + 1) + kx.
)doc");

// One task per (batch, channel) image: a row pass over the image rows, two real rows packed into
// one complex FFT, then a column pass over the S/2 + 1 half-spectrum columns.
template <typename Real>
void Rfft2dOnCpu(const ParallelRunner& parallel, const Rfft2dParams& p, const Real* input,
                 std::complex<Real>* spectrum) {
  using Complex = std::complex<Real>;
  const int size = p.fft_size;
  const int half = static_cast<int>(HalfWidth(size));
  const int64_t images = static_cast<int64_t>(p.batch) * p.channels;
  const FftPlan<Real>& plan = GetFftPlan<Real>(size);
  auto pixel = [&](int64_t image, int h, int w) {
    return input[ImageElementOffset(p.nhwc, p.channels, p.height, p.width, image / p.channels,
                                    image % p.channels, h, w)];
  };
  auto work = [&](int64_t begin, int64_t end) {
    // row_spectra: [S frame rows][S/2 + 1 kx], the row transforms of the frame.
    std::vector<Complex> row_spectra(static_cast<size_t>(size) * half);
    std::vector<Complex> line(size);
    for (int64_t image = begin; image < end; ++image) {
      std::fill(row_spectra.begin(), row_spectra.end(), Complex(0));
      for (int h = 0; h < p.height; h += 2) {
        const bool pair = h + 1 < p.height;
        std::fill(line.begin(), line.end(), Complex(0));
        for (int w = 0; w < p.width; ++w) {
          line[p.offset_w + w] = Complex(pixel(image, h, w), pair ? pixel(image, h + 1, w) : 0);
        }
        plan.Forward(line.data());
        // Unpack z = r1 + i r2: R1[k] = (Z[k] + conj Z[-k]) / 2, R2[k] = (Z[k] - conj Z[-k]) / 2i.
        Complex* first = &row_spectra[static_cast<size_t>(p.offset_h + h) * half];
        for (int kx = 0; kx < half; ++kx) {
          const Complex z = line[kx];
          const Complex z_mirror = std::conj(line[(size - kx) & (size - 1)]);
          first[kx] = (z + z_mirror) * Real(0.5);
          if (pair) first[half + kx] = (z - z_mirror) * Complex(0, Real(-0.5));
        }
      }
      for (int kx = 0; kx < half; ++kx) {
        for (int ky = 0; ky < size; ++ky) line[ky] = row_spectra[static_cast<size_t>(ky) * half + kx];
        plan.Forward(line.data());
        for (int ky = 0; ky < size; ++ky) {
          spectrum[BinIndex(size, ky, kx) * images + image] = line[ky];
        }
      }
    }
  };
  parallel(images, int64_t{12} * size * size * Log2(size), work);
}

template void Rfft2dOnCpu<float>(const ParallelRunner&, const Rfft2dParams&, const float*,
                                  std::complex<float>*);
template void Rfft2dOnCpu<double>(const ParallelRunner&, const Rfft2dParams&, const double*,
                                   std::complex<double>*);

template <typename Real>
struct Rfft2dFunctor<CpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const Rfft2dParams& params,
                          const Real* input, std::complex<Real>* spectrum) {
    Rfft2dOnCpu<Real>(TfParallelRunner(ctx), params, input, spectrum);
    return absl::OkStatus();
  }
};

#define REGISTER_CPU(Real)                                                                  \
  FFTCONV_REGISTER_KERNEL(                                                                  \
      Name("FftconvRfft2d").Device(tensorflow::DEVICE_CPU).TypeConstraint<Real>("T"), \
      Rfft2dOp<CpuDevice, Real>);
REGISTER_CPU(float)
REGISTER_CPU(double)
#undef REGISTER_CPU

}  // namespace fftconv
