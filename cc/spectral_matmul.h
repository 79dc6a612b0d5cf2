// FftconvSpectralMatmul: one complex matmul per frequency bin, c[f] = op_a(a[f]) * op_b(b[f]).
//   a : [bins, a_rows, a_cols], b : [bins, b_rows, b_cols], c : [bins, m, n], complex, row-major
//   op_x: identity, transpose (transpose_x), conjugate (conjugate_x) or conjugate transpose
//   (adjoint_x, or transpose_x with conjugate_x).
//   float16 / bfloat16: a [bins, a_rows, a_cols, 2], b [bins, b_rows, b_cols, 2], c [bins, m, n, 2],
//   (re, im) pairs, products accumulated in float32.
//   c = alpha * op_a(a) op_b(b), alpha (an attribute) applied before c is rounded to its type.
#ifndef TF_FFTCONV_CC_SPECTRAL_MATMUL_H_
#define TF_FFTCONV_CC_SPECTRAL_MATMUL_H_

#include <cstdint>
#include <vector>

#include "cc/fftconv_kernel_util.h"

namespace fftconv {

// The kernels' registrations (cc/ops.cc, cc/ops_gpu.cc): one per spectrum type.
inline constexpr OpKernelTypes kSpectralMatmulKernels = {"FftconvSpectralMatmul", "T",
                                                         BufferContents::kSpectra, {}};

// The parameters of a tf_fftconv_spectral_matmul custom call (cc/xla_lowering.cc) from its
// buffers and the attributes its lowering wrote, checked as the OpKernel checks them; for the host
// and CUDA handlers.
absl::Status SpectralMatmulParamsFromCall(const ffi::AnyBuffer& a, const ffi::AnyBuffer& b,
                                          int64_t transpose_a, int64_t adjoint_a,
                                          int64_t conjugate_a, int64_t transpose_b,
                                          int64_t adjoint_b, int64_t conjugate_b,
                                          int64_t allow_tf32, int64_t tf32_operands, float alpha,
                                          SpectralMatmulParams* params);

// The tf_fftconv_spectral_matmul custom call on Device's platform (registered in
// cc/op_kernels.h).
template <typename Device>
ffi::Error SpectralMatmulCall(typename Device::FfiContext context, ffi::AnyBuffer a,
                              ffi::AnyBuffer b, ffi::Result<ffi::AnyBuffer> product,
                              int64_t transpose_a, int64_t adjoint_a, int64_t conjugate_a,
                              int64_t transpose_b, int64_t adjoint_b, int64_t conjugate_b,
                              int64_t allow_tf32, int64_t tf32_operands, float alpha) {
  SpectralMatmulParams params;
  return RunFfiCall(
      SpectralMatmulParamsFromCall(a, b, transpose_a, adjoint_a, conjugate_a, transpose_b,
                                   adjoint_b, conjugate_b, allow_tf32, tf32_operands, alpha,
                                   &params),
      *product, a.element_type(), BufferContents::kSpectra,
      "FftconvSpectralMatmul: a and b must be complex64, complex128, float16 or bfloat16",
      [&](auto real) {
        return Device::template SpectralMatmul<typename decltype(real)::type>(
            Device::StreamOf(context), params, a.untyped_data(), b.untyped_data(),
            product->untyped_data());
      });
}

// The handler of SpectralMatmulCall<Device>, bound (cc/fftconv_ffi.h) for FfiHandler.
template <typename Device>
auto SpectralMatmulHandler() {
  return BindInt64Attrs(BindCall<Device, 2>(), "transpose_a", "adjoint_a", "conjugate_a",
                        "transpose_b", "adjoint_b", "conjugate_b", "allow_tf32", "tf32_operands")
      .template Attr<float>("alpha")
      .To(SpectralMatmulCall<Device>);
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

    using Element = SpectrumElement<Real>;
    OP_REQUIRES_OK(ctx, RunOnOutput<Device>(ctx, product_dims, [&](const auto& stream,
                                                                   tensorflow::Tensor* c) {
      return Device::template SpectralMatmul<Real>(stream, params, a.flat<Element>().data(),
                                                   b.flat<Element>().data(),
                                                   c->flat<Element>().data());
    }));
  }

 private:
  SpectralMatmulAttrs attrs_;
};

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_SPECTRAL_MATMUL_H_
