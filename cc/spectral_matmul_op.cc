// FftconvSpectralMatmul: registration, shape function and CPU kernel (cc/cpu_kernels.cc).
#include "cc/spectral_matmul.h"
#include "tensorflow/core/framework/op.h"
#include "tsl/platform/tensor_float_32_utils.h"

namespace fftconv {

using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

bool TensorFloat32Enabled() { return tsl::tensor_float_32_execution_enabled(); }

REGISTER_OP("FftconvSpectralMatmul")
    .Input("a: T")
    .Input("b: T")
    .Output("product: T")
    .Attr("T: {complex64, complex128}")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr("adjoint_a: bool = false")
    .Attr("adjoint_b: bool = false")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      ShapeHandle a, b;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(0), 3, &a));
      TF_RETURN_IF_ERROR(c->WithRank(c->input(1), 3, &b));
      SpectralMatmulAttrs attrs;
      TF_RETURN_IF_ERROR(ReadSpectralMatmulAttrs(c, &attrs));
      int64_t a_dims[3] = {-1, -1, -1}, b_dims[3] = {-1, -1, -1};
      KnownDims(c, a, 3, a_dims);
      KnownDims(c, b, 3, b_dims);
      MatmulDims dims;
      TF_RETURN_IF_ERROR(ValidateSpectralMatmul(a_dims, b_dims, attrs.transpose_a,
                                                attrs.adjoint_a, attrs.transpose_b,
                                                attrs.adjoint_b, &dims));
      c->set_output(0, c->MakeShape({DimOrUnknown(c, dims.bins), DimOrUnknown(c, dims.m),
                                     DimOrUnknown(c, dims.n)}));
      return absl::OkStatus();
    })
    .Doc(R"doc(
One complex matrix product per frequency bin: product[f] = op(a[f]) * op(b[f]), where op is the
identity, the transpose or the conjugate transpose (adjoint) as the flags say.
)doc");

template <typename Real>
struct SpectralMatmulFunctor<CpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const SpectralMatmulParams& params,
                          const std::complex<Real>* a, const std::complex<Real>* b,
                          std::complex<Real>* c) {
    SpectralMatmulOnCpu<Real>(TfParallelRunner(ctx), params, a, b, c);
    return absl::OkStatus();
  }
};

#define REGISTER_CPU(Real)                                                     \
  FFTCONV_REGISTER_KERNEL(Name("FftconvSpectralMatmul")                        \
                              .Device(tensorflow::DEVICE_CPU)                  \
                              .TypeConstraint<std::complex<Real>>("T"),        \
                          SpectralMatmulOp<CpuDevice, Real>);
REGISTER_CPU(float)
REGISTER_CPU(double)
#undef REGISTER_CPU

}  // namespace fftconv
