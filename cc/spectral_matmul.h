// FftconvSpectralMatmul: one complex matmul per frequency bin, c[f] = op_a(a[f]) * op_b(b[f]).
//   a : [bins, a_rows, a_cols], b : [bins, b_rows, b_cols], c : [bins, m, n], complex, row-major
//   op_x: identity, transpose (transpose_x), conjugate (conjugate_x) or conjugate transpose
//   (adjoint_x, or transpose_x with conjugate_x).
//   float16 / bfloat16: a [bins, a_rows, a_cols, 2], b [bins, b_rows, b_cols, 2], c [bins, m, n, 2],
//   (re, im) pairs, products accumulated in float32.
//   c = alpha * op_a(a) op_b(b), alpha (an attribute) applied before c is rounded to its type.
#ifndef TF_FFTCONV_CC_SPECTRAL_MATMUL_H_
#define TF_FFTCONV_CC_SPECTRAL_MATMUL_H_

#include <complex>
#include <utility>

#include "cc/fftconv_kernel_util.h"

namespace fftconv {

template <typename Device, typename Real>
struct SpectralMatmulFunctor {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const SpectralMatmulParams& params,
                          const SpectrumElement<Real>* a, const SpectrumElement<Real>* b,
                          SpectrumElement<Real>* c);
};

// The parameters of a tf_fftconv_spectral_matmul custom call (cc/xla_lowering.cc) from its
// buffers and the attributes its lowering wrote, checked as the OpKernel checks them; for the host
// and CUDA handlers.
absl::Status SpectralMatmulParamsFromCall(const ffi::AnyBuffer& a, const ffi::AnyBuffer& b,
                                          int64_t transpose_a, int64_t adjoint_a,
                                          int64_t conjugate_a, int64_t transpose_b,
                                          int64_t adjoint_b, int64_t conjugate_b,
                                          int64_t allow_tf32, int64_t tf32_operands, float alpha,
                                          SpectralMatmulParams* params);

// The buffers and attributes of a tf_fftconv_spectral_matmul custom call, bound after the platform's context
// (XLA's thread pool on the host, its stream on CUDA), so that both handlers decode the same call.
template <typename Binding>
auto BindSpectralMatmulCall(Binding binding) {
  return std::move(binding)
      .template Arg<ffi::AnyBuffer>()
      .template Arg<ffi::AnyBuffer>()
      .template Ret<ffi::AnyBuffer>()
      .template Attr<int64_t>("transpose_a")
      .template Attr<int64_t>("adjoint_a")
      .template Attr<int64_t>("conjugate_a")
      .template Attr<int64_t>("transpose_b")
      .template Attr<int64_t>("adjoint_b")
      .template Attr<int64_t>("conjugate_b")
      .template Attr<int64_t>("allow_tf32")
      .template Attr<int64_t>("tf32_operands")
      .template Attr<float>("alpha");
}

template <typename Device, typename Real>
class SpectralMatmulOp : public tensorflow::OpKernel {
 public:
  explicit SpectralMatmulOp(tensorflow::OpKernelConstruction* ctx) : tensorflow::OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadSpectralMatmulAttrs(ctx, &attrs_));
  }

  void Compute(tensorflow::OpKernelContext* ctx) override {
    const tensorflow::Tensor& a = ctx->input(0);
    const tensorflow::Tensor& b = ctx->input(1);
    int64_t a_dims[3], b_dims[3];
    OP_REQUIRES_OK(ctx, SpectrumDims("a", a.shape(), kHalfSpectrum<Real>, a_dims));
    OP_REQUIRES_OK(ctx, SpectrumDims("b", b.shape(), kHalfSpectrum<Real>, b_dims));
    SpectralMatmulParams params;
    std::vector<int64_t> product_dims;
    OP_REQUIRES_OK(ctx, MakeSpectralMatmulParams(a_dims, b_dims, attrs_.transpose_a,
                                                 attrs_.adjoint_a, attrs_.conjugate_a,
                                                 attrs_.transpose_b, attrs_.adjoint_b,
                                                 attrs_.conjugate_b,
                                                 attrs_.allow_tf32 && TensorFloat32Enabled(),
                                                 attrs_.tf32_operands, attrs_.alpha, &params,
                                                 &product_dims));
    if (kHalfSpectrum<Real>) product_dims.push_back(2);

    tensorflow::Tensor* c = nullptr;
    tensorflow::TensorShape c_shape;
    OP_REQUIRES_OK(ctx, OutputShape(product_dims, &c_shape));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, c_shape, &c));
    if (c->NumElements() == 0) return;

    using Element = SpectrumElement<Real>;
    OP_REQUIRES_OK(ctx, SpectralMatmulFunctor<Device, Real>()(ctx, params,
                                                              a.flat<Element>().data(),
                                                              b.flat<Element>().data(),
                                                              c->flat<Element>().data()));
  }

 private:
  SpectralMatmulAttrs attrs_;
};

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_SPECTRAL_MATMUL_H_
