// FftconvIrfft2d: registration, shape function and CPU kernel (cc/cpu_kernels.cc).
#include "cc/irfft2d.h"
#include "tensorflow/core/framework/op.h"

namespace fftconv {

using tensorflow::shape_inference::InferenceContext;

REGISTER_OP("FftconvIrfft2d")
    .Input("spectrum: Tcomplex")
    .Input("fft_size: Tfft_size")
    .Input("out_h: Tout_h")
    .Input("out_w: Tout_w")
    .Output("y: T")
    .Attr("T: {float, double, half, bfloat16} = DT_FLOAT")
    .Attr("Tcomplex: {complex64, complex128, half, bfloat16} = DT_COMPLEX64")
    .Attr("offset_h: int = 0")
    .Attr("offset_w: int = 0")
    .Attr("data_format: string = 'NCHW'")
    // One type per size and no defaults: a Python integer then becomes int32 or int64 by its own
    // value, never an int32 that wrapped around (a default, or the type of an earlier size sharing
    // the attribute, would be the conversion's target type).
    .Attr("Tfft_size: {int32, int64}")
    .Attr("Tout_h: {int32, int64}")
    .Attr("Tout_w: {int32, int64}")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      FftAttrs attrs;
      TF_RETURN_IF_ERROR(ReadFftAttrs(c, &attrs));
      int64_t dims[3];
      TF_RETURN_IF_ERROR(SpectrumDims(c, 0, "spectrum", attrs.half_spectrum, dims));
      ScalarValue fft_size, out_h, out_w;
      TF_RETURN_IF_ERROR(ReadScalarInput(c, 1, "fft_size", &fft_size));
      TF_RETURN_IF_ERROR(ReadScalarInput(c, 2, "out_h", &out_h));
      TF_RETURN_IF_ERROR(ReadScalarInput(c, 3, "out_w", &out_w));
      TF_RETURN_IF_ERROR(ValidateIrfft2d(dims[0], dims[1], dims[2], fft_size, out_h, out_w,
                                         attrs.offset_h, attrs.offset_w));
      auto batch = DimOrUnknown(c, dims[1]), channels = DimOrUnknown(c, dims[2]);
      auto height = DimOrUnknown(c, out_h.value_or(-1));
      auto width = DimOrUnknown(c, out_w.value_or(-1));
      c->set_output(0, attrs.nhwc ? c->MakeShape({batch, height, width, channels})
                                  : c->MakeShape({batch, channels, height, width}));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Inverse real 2-D FFT of a frequency-major spectrum [bins, batch, channels], scaled by
1 / fft_size^2, writing only the window [offset_h, offset_h + out_h) x [offset_w, offset_w + out_w)
of the frame. fft_size, out_h and out_w are int32 or int64 scalar inputs, checked as given. As
numpy.fft.irfft2, the imaginary parts of the kx = 0 and kx = S/2 columns are ignored. T is the
output's type, Tcomplex the spectrum's: complex64 with float32, complex128 with float64; float16
and bfloat16 take a spectrum of their own type [bins, batch, channels, 2] (real, imaginary), stored
divided by fft_size^2 as FftconvRfft2d writes it, so that the output is the unscaled inverse of the
stored values (irfft2d(rfft2d(x)) = x in every type); computed in float32.
)doc");

template <typename Real>
struct Irfft2dFunctor<CpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const Irfft2dParams& params,
                          const SpectrumElement<Real>* spectrum, Real* output) {
    Irfft2dOnCpu<Real>(TfParallelRunner(ctx), params, spectrum, output);
    return absl::OkStatus();
  }
};

#define REGISTER_CPU(Real)                                                     \
  FFTCONV_REGISTER_KERNEL(Name("FftconvIrfft2d")                               \
                              .Device(tensorflow::DEVICE_CPU)                  \
                              .TypeConstraint<SpectrumElement<Real>>("Tcomplex"), \
                          Irfft2dOp<CpuDevice, Real>);
REGISTER_CPU(float)
REGISTER_CPU(double)
REGISTER_CPU(Eigen::half)
REGISTER_CPU(Eigen::bfloat16)
#undef REGISTER_CPU

}  // namespace fftconv
