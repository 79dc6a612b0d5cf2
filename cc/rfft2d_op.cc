// FftconvRfft2d: registration, shape function and CPU kernel (cc/cpu_kernels.cc).
#include "cc/rfft2d.h"
#include "tensorflow/core/framework/op.h"

namespace fftconv {

using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

REGISTER_OP("FftconvRfft2d")
    .Input("x: T")
    .Input("fft_size: Tfft_size")
    .Output("spectrum: Tcomplex")
    .Attr("T: {float, double, half, bfloat16} = DT_FLOAT")
    .Attr("Tcomplex: {complex64, complex128, half, bfloat16} = DT_COMPLEX64")
    .Attr("offset_h: int = 0")
    .Attr("offset_w: int = 0")
    .Attr("data_format: string = 'NCHW'")
    .Attr("round_to_tf32: bool = false")
    // No default: a Python integer then becomes int32 or int64 by its value, never an int32 that
    // wrapped around (a default would be the conversion's target type).
    .Attr("Tfft_size: {int32, int64}")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      ShapeHandle x;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(0), 4, &x));
      FftAttrs attrs;
      TF_RETURN_IF_ERROR(ReadFftAttrs(c, &attrs));
      ScalarValue fft_size;
      TF_RETURN_IF_ERROR(ReadScalarInput(c, 1, "fft_size", &fft_size));
      int64_t dims[4] = {-1, -1, -1, -1};
      KnownDims(c, x, 4, dims);
      const ImageDims image = ImageDimsFrom(dims, attrs.nhwc);
      TF_RETURN_IF_ERROR(ValidateRfft2d(image, fft_size, attrs.offset_h, attrs.offset_w));
      const int64_t bins = fft_size ? NumBins(*fft_size) : -1;
      std::vector<tensorflow::shape_inference::DimensionHandle> dims_out = {
          DimOrUnknown(c, bins), DimOrUnknown(c, image.batch), DimOrUnknown(c, image.channels)};
      if (attrs.half_spectrum) dims_out.push_back(c->MakeDim(2));
      c->set_output(0, c->MakeShape(dims_out));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Forward real 2-D FFT of a batch of images placed at (offset_h, offset_w) in an fft_size x fft_size
frame of zeros (the padding is implicit). fft_size is an int32 or int64 scalar input (as
tf.signal's fft_length), so it may be computed at run time; it is checked as given. Output is
frequency-major: [bins, batch, channels] with bins = fft_size * (fft_size / 2 + 1), bin index
ky * (fft_size / 2 + 1) + kx.
Tcomplex is the spectrum's type: complex64 for float32 x, complex128 for float64. For float16 and
bfloat16 x it is x's own type and the spectrum is [bins, batch, channels, 2] (real, imaginary),
computed in float32 and stored divided by fft_size^2, so that no bin exceeds the largest |x|.
With round_to_tf32 true, a float32 x's spectrum is stored rounded to TF32 (10 mantissa bits), as
the TF32 spectral_matmul rounds its operands (to nearest even on compute capability 9.0 and later,
ties away from zero on 8.x), for spectra that feed only TF32 products (spectral_matmul with
tf32_operands). That applies on a GPU of compute capability 8.0 or later where TensorFlow's TF32
switch is on (read when the op runs, or when XLA compiles it); elsewhere (CPU, other types, older
GPUs, TF32 off) the attribute changes nothing.
)doc");

template <typename Real>
struct Rfft2dFunctor<CpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const Rfft2dParams& params,
                          const Real* input, SpectrumElement<Real>* spectrum) {
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
REGISTER_CPU(Eigen::half)
REGISTER_CPU(Eigen::bfloat16)
#undef REGISTER_CPU

}  // namespace fftconv
