// FftconvSpectralMatmul: registration, shape function and CPU kernel (cc/cpu_kernels.cc).
#include "cc/spectral_matmul.h"
#include "tensorflow/core/framework/op.h"
#include "tsl/platform/tensor_float_32_utils.h"

namespace fftconv {

using tensorflow::shape_inference::InferenceContext;

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

template <typename Real>
struct SpectralMatmulFunctor<CpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const SpectralMatmulParams& params,
                          const SpectrumElement<Real>* a, const SpectrumElement<Real>* b,
                          SpectrumElement<Real>* c) {
    SpectralMatmulOnCpu<Real>(TfParallelRunner(ctx), params, a, b, c);
    return absl::OkStatus();
  }
};

#define REGISTER_CPU(Real)                                                     \
  FFTCONV_REGISTER_KERNEL(Name("FftconvSpectralMatmul")                        \
                              .Device(tensorflow::DEVICE_CPU)                  \
                              .TypeConstraint<SpectrumElement<Real>>("T"),     \
                          SpectralMatmulOp<CpuDevice, Real>);
REGISTER_CPU(float)
REGISTER_CPU(double)
REGISTER_CPU(Eigen::half)
REGISTER_CPU(Eigen::bfloat16)
#undef REGISTER_CPU

}  // namespace fftconv
