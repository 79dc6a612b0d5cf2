// FftconvIrfft2d: registration, shape function and CPU kernel.
#include <algorithm>
#include <vector>

#include "cc/cpu_fft.h"
#include "cc/irfft2d.h"
#include "tensorflow/core/framework/op.h"

namespace fftconv {

using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

REGISTER_OP("FftconvIrfft2d")
    .Input("spectrum: Tcomplex")
    .Input("fft_size: int32")
    .Input("out_h: int32")
    .Input("out_w: int32")
    .Output("y: T")
    .Attr("T: {float, double} = DT_FLOAT")
    .Attr("Tcomplex: {complex64, complex128} = DT_COMPLEX64")
    .Attr("offset_h: int = 0")
    .Attr("offset_w: int = 0")
    .Attr("data_format: string = 'NCHW'")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      ShapeHandle spectrum;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(0), 3, &spectrum));
      FftAttrs attrs;
      TF_RETURN_IF_ERROR(ReadFftAttrs(c, &attrs));
      int64_t fft_size = 0, out_h = 0, out_w = 0;
      TF_RETURN_IF_ERROR(ReadScalarInput(c, 1, "fft_size", &fft_size));
      TF_RETURN_IF_ERROR(ReadScalarInput(c, 2, "out_h", &out_h));
      TF_RETURN_IF_ERROR(ReadScalarInput(c, 3, "out_w", &out_w));
      int64_t dims[3] = {-1, -1, -1};
      KnownDims(c, spectrum, 3, dims);
      TF_RETURN_IF_ERROR(ValidateIrfft2d(dims[0], dims[1], dims[2], fft_size, out_h, out_w,
                                         attrs.offset_h, attrs.offset_w));
      auto batch = DimOrUnknown(c, dims[1]), channels = DimOrUnknown(c, dims[2]);
      auto height = DimOrUnknown(c, out_h), width = DimOrUnknown(c, out_w);
      c->set_output(0, attrs.nhwc ? c->MakeShape({batch, height, width, channels})
                                  : c->MakeShape({batch, channels, height, width}));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Inverse real 2-D FFT of a frequency-major spectrum [bins, batch, channels], scaled by
1 / fft_size^2, writing only the window [offset_h, offset_h + out_h) x [offset_w, offset_w + out_w)
of the frame. fft_size, out_h and out_w are int32 scalar inputs. As numpy.fft.irfft2, the imaginary
parts of the kx = 0 and kx = S/2 columns are ignored.
)doc");

// One task per (batch, channel) image: inverse column FFTs over ky for each kx, then the
// complex-to-real row transforms of the window rows, two rows packed into one complex FFT.
template <typename Real>
void Irfft2dOnCpu(const ParallelRunner& parallel, const Irfft2dParams& p,
                  const std::complex<Real>* spectrum, Real* output) {
  using Complex = std::complex<Real>;
  const int size = p.fft_size;
  const int half = static_cast<int>(HalfWidth(size));
  const int64_t images = static_cast<int64_t>(p.batch) * p.channels;
  const Real scale = Real(1) / (Real(size) * Real(size));
  const FftPlan<Real>& plan = GetFftPlan<Real>(size);
  auto store = [&](int64_t image, int i, int j, Real value) {
    output[ImageElementOffset(p.nhwc, p.channels, p.out_h, p.out_w, image / p.channels,
                              image % p.channels, i, j)] = value * scale;
  };
  auto work = [&](int64_t begin, int64_t end) {
    // window_rows: [out_h window rows][S/2 + 1 kx], after the inverse transform over ky.
    std::vector<Complex> window_rows(static_cast<size_t>(p.out_h) * half);
    std::vector<Complex> line(size);
    for (int64_t image = begin; image < end; ++image) {
      for (int kx = 0; kx < half; ++kx) {
        for (int ky = 0; ky < size; ++ky) line[ky] = spectrum[BinIndex(size, ky, kx) * images + image];
        plan.Inverse(line.data());
        for (int i = 0; i < p.out_h; ++i) window_rows[static_cast<size_t>(i) * half + kx] = line[p.offset_h + i];
      }
      for (int i = 0; i < p.out_h; i += 2) {
        const bool pair = i + 1 < p.out_h;
        const Complex* first = &window_rows[static_cast<size_t>(i) * half];
        const Complex* second = pair ? first + half : nullptr;
        // Hermitian extension of both rows, packed as e1 + i e2 so one inverse gives y1 + i y2.
        auto packed = [&](int kx, bool mirror) {
          const Complex e1 = mirror ? std::conj(first[kx]) : first[kx];
          const Complex e2 = pair ? (mirror ? std::conj(second[kx]) : second[kx]) : Complex(0);
          return e1 + Complex(0, 1) * e2;
        };
        line[0] = Complex(first[0].real(), pair ? second[0].real() : Real(0));
        line[size / 2] = Complex(first[size / 2].real(), pair ? second[size / 2].real() : Real(0));
        for (int kx = 1; kx < size / 2; ++kx) {
          line[kx] = packed(kx, false);
          line[size - kx] = packed(kx, true);
        }
        plan.Inverse(line.data());
        for (int j = 0; j < p.out_w; ++j) {
          const Complex v = line[p.offset_w + j];
          store(image, i, j, v.real());
          if (pair) store(image, i + 1, j, v.imag());
        }
      }
    }
  };
  parallel(images, int64_t{12} * size * size * Log2(size), work);
}

template void Irfft2dOnCpu<float>(const ParallelRunner&, const Irfft2dParams&,
                                   const std::complex<float>*, float*);
template void Irfft2dOnCpu<double>(const ParallelRunner&, const Irfft2dParams&,
                                    const std::complex<double>*, double*);

template <typename Real>
struct Irfft2dFunctor<CpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const Irfft2dParams& params,
                          const std::complex<Real>* spectrum, Real* output) {
    Irfft2dOnCpu<Real>(TfParallelRunner(ctx), params, spectrum, output);
    return absl::OkStatus();
  }
};

#define REGISTER_CPU(Real)                                                     \
  FFTCONV_REGISTER_KERNEL(Name("FftconvIrfft2d")                               \
                              .Device(tensorflow::DEVICE_CPU)                  \
                              .TypeConstraint<std::complex<Real>>("Tcomplex"), \
                          Irfft2dOp<CpuDevice, Real>);
REGISTER_CPU(float)
REGISTER_CPU(double)
#undef REGISTER_CPU

}  // namespace fftconv
