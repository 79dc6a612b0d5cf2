// The XLA side of the three ops: each op's lowering to its custom call (an XlaOpKernel registered
// for XLA_CPU_JIT and, in CUDA builds, XLA_GPU_JIT), the checks of that call's parameters, and the
// registration of its host handler (the CPU kernels on XLA's thread pool, cc/op_kernels.h); the
// CUDA handlers are registered in cc/ops_gpu.cc. One translation unit for the
// three because the tf2xla and XLA headers they share dominate their compile: on 2 cores g++ took
// 54-64 s for each of three files, 45 s for the three together.
#include "cc/fftconv_ffi.h"
#include "cc/fftconv_xla.h"
#include "cc/op_kernels.h"

namespace fftconv {

// -------------------------------------------------------------------------------------------------
// FftconvRfft2d under XLA: the lowering to the tf_fftconv_rfft2d custom call, and that call's
// parameters from its buffers and attributes.

// x [B, C, H, W] or [B, H, W, C] real -> spectrum [bins, B, C] complex ([bins, B, C, 2] of x's type
// for float16 / bfloat16); fft_size must be a
// compile-time constant (it sets the output shape), as tf.signal.rfft2d's fft_length is.
class Rfft2dXlaOp : public tensorflow::XlaOpKernel {
 public:
  explicit Rfft2dXlaOp(tensorflow::OpKernelConstruction* ctx) : tensorflow::XlaOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadRfft2dAttrs(ctx, &attrs_));
  }

  void Compile(tensorflow::XlaOpKernelContext* ctx) override {
    std::vector<int64_t> x_dims(4);
    OP_REQUIRES_OK(ctx, StaticInputDims(ctx, 0, "x", 4, x_dims.data()));
    int64_t fft_size = 0;
    OP_REQUIRES_OK(ctx, ctx->ConstantInputAsIntScalar("fft_size", &fft_size));
    // TensorFlow's TF32 switch is read when the call is compiled, as FftconvSpectralMatmul's.
    const bool round_to_tf32 = attrs_.round_to_tf32 && TensorFloat32Enabled();
    Rfft2dParams params;
    std::vector<int64_t> spectrum_dims;
    OP_REQUIRES_OK(ctx, MakeRfft2dParams(x_dims.data(), fft_size, attrs_.offset_h, attrs_.offset_w,
                                         attrs_.nhwc, round_to_tf32, &params, &spectrum_dims));
    if (attrs_.half_spectrum) spectrum_dims.push_back(2);
    absl::StatusOr<xla::XlaOp> spectrum = EmitCustomCall(
        ctx, kRfft2dTarget, {{0, x_dims}}, ComplexXlaType(ctx->input_xla_type(0)), spectrum_dims,
        {{"fft_size", fft_size},
         {"offset_h", attrs_.offset_h},
         {"offset_w", attrs_.offset_w},
         {"nhwc", attrs_.nhwc},
         {"round_to_tf32", round_to_tf32}});
    OP_REQUIRES_OK(ctx, spectrum.status());
    ctx->SetOutput(0, *spectrum);
  }

 private:
  FftAttrs attrs_;
};

absl::Status Rfft2dParamsFromCall(const ffi::AnyBuffer& x, const ffi::AnyBuffer& spectrum,
                                  int64_t fft_size, int64_t offset_h, int64_t offset_w,
                                  int64_t nhwc, int64_t round_to_tf32, Rfft2dParams* params) {
  int64_t x_dims[4];
  if (!BufferDims(x, 4, x_dims)) return absl::InvalidArgumentError("x must have rank 4");
  if (IsHalfFfiType(x.element_type()) != IsHalfFfiType(spectrum.element_type())) {
    return absl::InvalidArgumentError(
        "FftconvRfft2d: a float16 / bfloat16 x needs a spectrum of its own type and no other x does");
  }
  bool nhwc_flag = false, round_flag = false;
  if (absl::Status s = FlagFromAttribute("nhwc", nhwc, &nhwc_flag); !s.ok()) return s;
  if (absl::Status s = FlagFromAttribute("round_to_tf32", round_to_tf32, &round_flag); !s.ok())
    return s;
  return MakeRfft2dParams(x_dims, fft_size, offset_h, offset_w, nhwc_flag, round_flag, params);
}

// -------------------------------------------------------------------------------------------------
// FftconvIrfft2d under XLA: the lowering to the tf_fftconv_irfft2d custom call, and that call's
// parameters from its buffers and attributes.

// spectrum [bins, B, C] complex (or [bins, B, C, 2] float16 / bfloat16) -> the window [B, C, out_h, out_w] or [B, out_h, out_w, C], real;
// fft_size, out_h and out_w must be compile-time constants (they set the output shape).
class Irfft2dXlaOp : public tensorflow::XlaOpKernel {
 public:
  explicit Irfft2dXlaOp(tensorflow::OpKernelConstruction* ctx) : tensorflow::XlaOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadFftAttrs(ctx, &attrs_));
  }

  void Compile(tensorflow::XlaOpKernelContext* ctx) override {
    std::vector<int64_t> spectrum_dims;
    OP_REQUIRES_OK(ctx, StaticSpectrumDims(ctx, 0, "spectrum", attrs_.half_spectrum,
                                           &spectrum_dims));
    int64_t fft_size = 0, out_h = 0, out_w = 0;
    OP_REQUIRES_OK(ctx, ctx->ConstantInputAsIntScalar("fft_size", &fft_size));
    OP_REQUIRES_OK(ctx, ctx->ConstantInputAsIntScalar("out_h", &out_h));
    OP_REQUIRES_OK(ctx, ctx->ConstantInputAsIntScalar("out_w", &out_w));
    Irfft2dParams params;
    std::vector<int64_t> output_dims;
    OP_REQUIRES_OK(ctx, MakeIrfft2dParams(spectrum_dims.data(), fft_size, out_h, out_w,
                                          attrs_.offset_h, attrs_.offset_w, attrs_.nhwc, &params,
                                          &output_dims));
    absl::StatusOr<xla::XlaOp> output = EmitCustomCall(
        ctx, kIrfft2dTarget, {{0, spectrum_dims}}, RealXlaType(ctx->input_xla_type(0)), output_dims,
        {{"fft_size", fft_size},
         {"out_h", out_h},
         {"out_w", out_w},
         {"offset_h", attrs_.offset_h},
         {"offset_w", attrs_.offset_w},
         {"nhwc", attrs_.nhwc}});
    OP_REQUIRES_OK(ctx, output.status());
    ctx->SetOutput(0, *output);
  }

 private:
  FftAttrs attrs_;
};

absl::Status Irfft2dParamsFromCall(const ffi::AnyBuffer& spectrum, int64_t fft_size,
                                   int64_t out_h, int64_t out_w, int64_t offset_h,
                                   int64_t offset_w, int64_t nhwc, Irfft2dParams* params) {
  const bool half_spectrum = IsHalfFfiType(spectrum.element_type());
  int64_t spectrum_dims[4];
  if (!BufferDims(spectrum, SpectrumRank(half_spectrum), spectrum_dims)) {
    return absl::InvalidArgumentError(half_spectrum
                                          ? "spectrum must have rank 4 ([bins, batch, channels, 2])"
                                          : "spectrum must have rank 3");
  }
  if (half_spectrum) {
    if (absl::Status s = ValidatePairDim("spectrum", spectrum_dims[3]); !s.ok()) return s;
  }
  bool nhwc_flag = false;
  if (absl::Status s = FlagFromAttribute("nhwc", nhwc, &nhwc_flag); !s.ok()) return s;
  return MakeIrfft2dParams(spectrum_dims, fft_size, out_h, out_w, offset_h, offset_w, nhwc_flag,
                           params);
}

// -------------------------------------------------------------------------------------------------
// FftconvSpectralMatmul under XLA: the lowering to the tf_fftconv_spectral_matmul custom call, and
// that call's parameters from its buffers and attributes.

// a [bins, ., .], b [bins, ., .] complex -> [bins, m, n] (float16 / bfloat16: [.., 2] each).
// TensorFlow's TF32 switch (and the allow_tf32 attribute) is read when the call is compiled, as
// XLA's own dot does; tf32_operands is passed on as it is.
class SpectralMatmulXlaOp : public tensorflow::XlaOpKernel {
 public:
  explicit SpectralMatmulXlaOp(tensorflow::OpKernelConstruction* ctx)
      : tensorflow::XlaOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadSpectralMatmulAttrs(ctx, &attrs_));
  }

  void Compile(tensorflow::XlaOpKernelContext* ctx) override {
    std::vector<int64_t> a_dims, b_dims;
    OP_REQUIRES_OK(ctx, StaticSpectrumDims(ctx, 0, "a", attrs_.half_spectrum, &a_dims));
    OP_REQUIRES_OK(ctx, StaticSpectrumDims(ctx, 1, "b", attrs_.half_spectrum, &b_dims));
    SpectralMatmulParams params;
    const bool allow_tf32 = attrs_.allow_tf32 && TensorFloat32Enabled();
    std::vector<int64_t> product_dims;
    OP_REQUIRES_OK(ctx, MakeSpectralMatmulParams(a_dims.data(), b_dims.data(), attrs_.transpose_a,
                                                 attrs_.adjoint_a, attrs_.conjugate_a,
                                                 attrs_.transpose_b, attrs_.adjoint_b,
                                                 attrs_.conjugate_b, allow_tf32,
                                                 attrs_.tf32_operands, attrs_.alpha, &params,
                                                 &product_dims));
    if (attrs_.half_spectrum) product_dims.push_back(2);
    absl::StatusOr<xla::XlaOp> product = EmitCustomCall(
        ctx, kSpectralMatmulTarget, {{0, a_dims}, {1, b_dims}}, ctx->input_xla_type(0),
        product_dims,
        {{"transpose_a", attrs_.transpose_a},
         {"adjoint_a", attrs_.adjoint_a},
         {"conjugate_a", attrs_.conjugate_a},
         {"transpose_b", attrs_.transpose_b},
         {"adjoint_b", attrs_.adjoint_b},
         {"conjugate_b", attrs_.conjugate_b},
         {"allow_tf32", allow_tf32},
         {"tf32_operands", attrs_.tf32_operands}},
        {{"alpha", attrs_.alpha}});
    OP_REQUIRES_OK(ctx, product.status());
    ctx->SetOutput(0, *product);
  }

 private:
  SpectralMatmulAttrs attrs_;
};

absl::Status SpectralMatmulParamsFromCall(const ffi::AnyBuffer& a, const ffi::AnyBuffer& b,
                                          int64_t transpose_a, int64_t adjoint_a,
                                          int64_t conjugate_a, int64_t transpose_b,
                                          int64_t adjoint_b, int64_t conjugate_b,
                                          int64_t allow_tf32, int64_t tf32_operands, float alpha,
                                          SpectralMatmulParams* params) {
  if (a.element_type() != b.element_type()) {
    return absl::InvalidArgumentError("a and b must have the same dtype");
  }
  const bool half_spectrum = IsHalfFfiType(a.element_type());
  const int rank = SpectrumRank(half_spectrum);
  int64_t a_dims[4], b_dims[4];
  if (!BufferDims(a, rank, a_dims) || !BufferDims(b, rank, b_dims)) {
    return absl::InvalidArgumentError(half_spectrum
                                          ? "a and b must have rank 4 ([bins, rows, cols, 2])"
                                          : "a and b must have rank 3");
  }
  if (half_spectrum) {
    if (absl::Status s = ValidatePairDim("a", a_dims[3]); !s.ok()) return s;
    if (absl::Status s = ValidatePairDim("b", b_dims[3]); !s.ok()) return s;
  }
  bool flags[8];
  const std::pair<const char*, int64_t> attributes[8] = {
      {"transpose_a", transpose_a}, {"adjoint_a", adjoint_a}, {"conjugate_a", conjugate_a},
      {"transpose_b", transpose_b}, {"adjoint_b", adjoint_b}, {"conjugate_b", conjugate_b},
      {"allow_tf32", allow_tf32},   {"tf32_operands", tf32_operands}};
  for (int i = 0; i < 8; ++i) {
    if (absl::Status s = FlagFromAttribute(attributes[i].first, attributes[i].second, &flags[i]);
        !s.ok())
      return s;
  }
  return MakeSpectralMatmulParams(a_dims, b_dims, flags[0], flags[1], flags[2], flags[3],
                                  flags[4], flags[5], flags[6], flags[7], alpha, params);
}

// -------------------------------------------------------------------------------------------------
// The lowerings, registered for XLA_CPU_JIT and, where the CUDA handlers exist, XLA_GPU_JIT; and the
// custom calls' host handlers (the CPU kernels on XLA's thread pool).

template <typename XlaOp>
void RegisterLowering(const char* op, const char* kernel_name) {
  using ::tensorflow::register_kernel::Name;
  RegisterKernel<XlaOp>(Name(op).Device(tensorflow::DEVICE_CPU_XLA_JIT), kernel_name);
#ifdef FFTCONV_WITH_CUDA
  RegisterKernel<XlaOp>(Name(op).Device(tensorflow::DEVICE_GPU_XLA_JIT), kernel_name);
#endif
}

[[maybe_unused]] static const bool lowerings_registered = [] {
  RegisterLowering<Rfft2dXlaOp>("FftconvRfft2d", "Rfft2dXlaOp");
  RegisterLowering<Irfft2dXlaOp>("FftconvIrfft2d", "Irfft2dXlaOp");
  RegisterLowering<SpectralMatmulXlaOp>("FftconvSpectralMatmul", "SpectralMatmulXlaOp");
  return RegisterOpHandlers<CpuDevice>();
}();

}  // namespace fftconv
