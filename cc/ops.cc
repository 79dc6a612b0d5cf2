// The ops' registrations: each op's REGISTER_OP with its shape function, and the CPU OpKernels over
// the CPU kernels (cc/cpu_kernels.cc). The GPU OpKernels are in cc/ops_gpu.cc and the XLA lowerings
// in cc/xla_lowering.cc. One translation unit for the three because TensorFlow's
// framework headers dominate their compile: g++ took 7-8 s for one op's file alone on 2 cores, and
// as long for the three together.
#include "cc/op_kernels.h"
#include "tensorflow/core/framework/op.h"
#include "tsl/platform/tensor_float_32_utils.h"

namespace fftconv {

using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

// FftconvRfft2d's shape function; FftconvRfft2dActivationGradient's checks its third input too.
absl::Status Rfft2dShape(InferenceContext* c) {
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
}

// FftconvIrfft2d's shape function; FftconvIrfft2dBiasActivation's checks its bias too.
absl::Status Irfft2dShape(InferenceContext* c) {
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
}

// The attributes of the four FFT ops, in this order in each: the images' and the spectra's types,
// where the images sit in the frame, and their layout (ReadFftAttrs, cc/fftconv_attrs.h).
#define FFTCONV_FFT_ATTRS                                                       \
  .Attr("T: {float, double, half, bfloat16} = DT_FLOAT")                        \
      .Attr("Tcomplex: {complex64, complex128, half, bfloat16} = DT_COMPLEX64") \
      .Attr("offset_h: int = 0")                                                \
      .Attr("offset_w: int = 0")                                                \
      .Attr("data_format: string = 'NCHW'")

// -------------------------------------------------------------------------------------------------
// FftconvRfft2d and FftconvRfft2dActivationGradient: registrations and shape functions.

REGISTER_OP("FftconvRfft2d")
    .Input("x: T")
    .Input("fft_size: Tfft_size")
    .Output("spectrum: Tcomplex")
    FFTCONV_FFT_ATTRS
    .Attr("round_to_tf32: bool = false")
    // No default: a Python integer then becomes int32 or int64 by its value, never an int32 that
    // wrapped around (a default would be the conversion's target type).
    .Attr("Tfft_size: {int32, int64}")
    .SetShapeFn(Rfft2dShape)
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

// FftconvRfft2dActivationGradient: FftconvRfft2d of dy * activation'(z), the activation's
// derivative read from its output y; a CPU kernel only (the FFT path uses it on a CPU, where the
// layer's ReluGrad would be a pass of its own over dy).
REGISTER_OP("FftconvRfft2dActivationGradient")
    .Input("dy: T")
    .Input("fft_size: Tfft_size")
    .Input("y: T")
    .Output("spectrum: Tcomplex")
    FFTCONV_FFT_ATTRS
    .Attr("activation: string = 'relu'")
    .Attr("Tfft_size: {int32, int64}")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      Activation activation;
      TF_RETURN_IF_ERROR(ReadActivationAttr(c, &activation));
      ShapeHandle y;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(2), 4, &y));
      int64_t dy_dims[4] = {-1, -1, -1, -1}, y_dims[4] = {-1, -1, -1, -1};
      KnownDims(c, c->input(0), 4, dy_dims);
      KnownDims(c, y, 4, y_dims);
      TF_RETURN_IF_ERROR(ValidateActivationOutput(dy_dims, y_dims));
      return Rfft2dShape(c);
    })
    .Doc(R"doc(
FftconvRfft2d of dy * activation'(z) for the gradient dy of an activation's output
y = activation(z): the spectrum FftconvRfft2d(dy * activation'(z)) would give, with the derivative
applied as dy is read (no pass of its own). y has dy's shape and layout. activation is "relu"
(dy where y > 0, zero elsewhere, as TensorFlow's ReluGrad) or "linear" (dy unchanged). CPU only.
)doc");

// -------------------------------------------------------------------------------------------------
// FftconvIrfft2d and FftconvIrfft2dBiasActivation: registrations and shape functions.

REGISTER_OP("FftconvIrfft2d")
    .Input("spectrum: Tcomplex")
    .Input("fft_size: Tfft_size")
    .Input("out_h: Tout_h")
    .Input("out_w: Tout_w")
    .Output("y: T")
    FFTCONV_FFT_ATTRS
    // One type per size and no defaults: a Python integer then becomes int32 or int64 by its own
    // value, never an int32 that wrapped around (a default, or the type of an earlier size sharing
    // the attribute, would be the conversion's target type).
    .Attr("Tfft_size: {int32, int64}")
    .Attr("Tout_h: {int32, int64}")
    .Attr("Tout_w: {int32, int64}")
    .SetShapeFn(Irfft2dShape)
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

// FftconvIrfft2dBiasActivation: FftconvIrfft2d followed by a bias per channel and an activation,
// applied as the window is written; a CPU kernel only (the FFT path uses it on a CPU, where a
// layer's bias and activation after the inverse would be passes of their own over its output).
REGISTER_OP("FftconvIrfft2dBiasActivation")
    .Input("spectrum: Tcomplex")
    .Input("fft_size: Tfft_size")
    .Input("out_h: Tout_h")
    .Input("out_w: Tout_w")
    .Input("bias: T")
    .Output("y: T")
    FFTCONV_FFT_ATTRS
    .Attr("activation: string = 'linear'")
    .Attr("Tfft_size: {int32, int64}")
    .Attr("Tout_h: {int32, int64}")
    .Attr("Tout_w: {int32, int64}")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      Activation activation;
      TF_RETURN_IF_ERROR(ReadActivationAttr(c, &activation));
      TF_RETURN_IF_ERROR(Irfft2dShape(c));
      FftAttrs attrs;
      TF_RETURN_IF_ERROR(ReadFftAttrs(c, &attrs));
      int64_t dims[3];
      TF_RETURN_IF_ERROR(SpectrumDims(c, 0, "spectrum", attrs.half_spectrum, dims));
      ShapeHandle bias = c->input(4);
      if (!c->RankKnown(bias)) return absl::OkStatus();
      std::vector<int64_t> bias_dims(c->Rank(bias));
      for (int i = 0; i < c->Rank(bias); ++i) bias_dims[i] = c->Value(c->Dim(bias, i));
      return ValidateBias(bias_dims, dims[2]);
    })
    .Doc(R"doc(
FftconvIrfft2d, then y = activation(y + bias[c]) for every value of channel c, applied in the
compute type as the window is written (one rounding for float16 and bfloat16). bias is [channels]
of y's type. activation is "linear" (the bias alone) or "relu" (max(., 0), keeping NaN). CPU only.
)doc");

// -------------------------------------------------------------------------------------------------
// FftconvSpectralMatmul: registration and shape function.

// Declared in cc/fftconv_kernel_util.h; FftconvRfft2d reads it too.
bool TensorFloat32Enabled() { return tsl::tensor_float_32_execution_enabled(); }

REGISTER_OP("FftconvSpectralMatmul")
    .Input("a: T")
    .Input("b: T")
    .Output("product: T")
    .Attr("T: {complex64, complex128, half, bfloat16}")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr("adjoint_a: bool = false")
    .Attr("adjoint_b: bool = false")
    .Attr("conjugate_a: bool = false")
    .Attr("conjugate_b: bool = false")
    .Attr("alpha: float = 1.0")
    .Attr("allow_tf32: bool = true")
    .Attr("tf32_operands: bool = false")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      SpectralMatmulAttrs attrs;
      TF_RETURN_IF_ERROR(ReadSpectralMatmulAttrs(c, &attrs));
      int64_t a_dims[3], b_dims[3];
      TF_RETURN_IF_ERROR(SpectrumDims(c, 0, "a", attrs.half_spectrum, a_dims));
      TF_RETURN_IF_ERROR(SpectrumDims(c, 1, "b", attrs.half_spectrum, b_dims));
      MatmulDims dims;
      TF_RETURN_IF_ERROR(ValidateSpectralMatmul(a_dims, b_dims, attrs.transpose_a,
                                                attrs.adjoint_a, attrs.conjugate_a,
                                                attrs.transpose_b, attrs.adjoint_b,
                                                attrs.conjugate_b, &dims));
      std::vector<tensorflow::shape_inference::DimensionHandle> product = {
          DimOrUnknown(c, dims.bins), DimOrUnknown(c, dims.m), DimOrUnknown(c, dims.n)};
      if (attrs.half_spectrum) product.push_back(c->MakeDim(2));
      c->set_output(0, c->MakeShape(product));
      return absl::OkStatus();
    })
    .Doc(R"doc(
One complex matrix product per frequency bin: product[f] = alpha * op(a[f]) * op(b[f]), where op
is the identity, the transpose (transpose_x), the conjugate (conjugate_x) or the conjugate
transpose (adjoint_x, or transpose_x with conjugate_x) as the flags say; adjoint_x with either of
the other two is refused. complex64 and complex128 operands are [bins, rows, cols]; float16 and
bfloat16 ones are half-precision spectra [bins, rows, cols, 2] (real, imaginary), multiplied and
accumulated in float32, alpha applied in float32 before the product is rounded (fft_conv2d passes
fft_size^2, which keeps a product of mean-normalised spectra mean-normalised).
complex64 products on a GPU use TF32 tensor cores where TensorFlow's TF32 switch is on and
allow_tf32 is true; allow_tf32 = false keeps them in FP32.
With tf32_operands true, a and b hold TF32 values already (rfft2d with round_to_tf32) and the TF32
kernels take their bits unconverted, which gives the same product as rounding them. Only the TF32
products read the attribute; the FP32 products (TF32 off or allow_tf32 false), complex128, half
precision and the CPU ignore it. Operands that are not TF32 values give a product of truncated
operands instead of rounded ones.
)doc");

// -------------------------------------------------------------------------------------------------
// The CPU kernels (cc/cpu_kernels.cc) of the three ops and of the two fused ones, which have no
// GPU kernel (the FFT path fuses a layer's activation gradient, bias and activation only on a CPU,
// where they would be passes of their own).
[[maybe_unused]] static const bool cpu_kernels_registered = [] {
  RegisterOpKernels<CpuDevice>(tensorflow::DEVICE_CPU);
  ForEachRealType([](auto real) {
    using Real = typename decltype(real)::type;
    RegisterOpKernel<Rfft2dOp<CpuDevice, Real, true>, Real>(kRfft2dActivationGradientKernels,
                                                            tensorflow::DEVICE_CPU);
    RegisterOpKernel<Irfft2dOp<CpuDevice, Real, true>, Real>(kIrfft2dBiasActivationKernels,
                                                             tensorflow::DEVICE_CPU);
  });
  return true;
}();

}  // namespace fftconv
