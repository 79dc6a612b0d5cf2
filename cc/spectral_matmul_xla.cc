// FftconvSpectralMatmul under XLA: the lowering to the tf_fftconv_spectral_matmul custom call, and
// that call's host handler (the CPU kernel on XLA's thread pool). The CUDA handler is in
// cc/spectral_matmul_gpu.cc.
#include "cc/fftconv_ffi.h"
#include "cc/fftconv_xla.h"
#include "cc/spectral_matmul.h"

namespace fftconv {

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

FFTCONV_REGISTER_KERNEL(Name("FftconvSpectralMatmul").Device(tensorflow::DEVICE_CPU_XLA_JIT),
                        SpectralMatmulXlaOp);
#ifdef FFTCONV_WITH_CUDA
FFTCONV_REGISTER_KERNEL(Name("FftconvSpectralMatmul").Device(tensorflow::DEVICE_GPU_XLA_JIT),
                        SpectralMatmulXlaOp);
#endif

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

static ffi::Error SpectralMatmulHost(ffi::ThreadPool pool, ffi::AnyBuffer a, ffi::AnyBuffer b,
                                     ffi::Result<ffi::AnyBuffer> product, int64_t transpose_a,
                                     int64_t adjoint_a, int64_t conjugate_a, int64_t transpose_b,
                                     int64_t adjoint_b, int64_t conjugate_b, int64_t allow_tf32,
                                     int64_t tf32_operands, float alpha) {
  SpectralMatmulParams params;
  if (absl::Status s = SpectralMatmulParamsFromCall(a, b, transpose_a, adjoint_a, conjugate_a,
                                                    transpose_b, adjoint_b, conjugate_b,
                                                    allow_tf32, tf32_operands, alpha, &params);
      !s.ok())
    return FfiError(s);
  if (product->element_count() == 0) return ffi::Error::Success();
  const ParallelRunner parallel = FfiParallelRunner(pool);
  switch (a.element_type()) {
    case ffi::DataType::C64:
      SpectralMatmulOnCpu<float>(parallel, params, a.typed_data<std::complex<float>>(),
                                 b.typed_data<std::complex<float>>(),
                                 static_cast<std::complex<float>*>(product->untyped_data()));
      return ffi::Error::Success();
    case ffi::DataType::C128:
      SpectralMatmulOnCpu<double>(parallel, params, a.typed_data<std::complex<double>>(),
                                  b.typed_data<std::complex<double>>(),
                                  static_cast<std::complex<double>*>(product->untyped_data()));
      return ffi::Error::Success();
    case ffi::DataType::F16:
      SpectralMatmulOnCpu<Eigen::half>(parallel, params, static_cast<const Eigen::half*>(a.untyped_data()),
                                       static_cast<const Eigen::half*>(b.untyped_data()),
                                       static_cast<Eigen::half*>(product->untyped_data()));
      return ffi::Error::Success();
    case ffi::DataType::BF16:
      SpectralMatmulOnCpu<Eigen::bfloat16>(parallel, params, static_cast<const Eigen::bfloat16*>(a.untyped_data()),
                                           static_cast<const Eigen::bfloat16*>(b.untyped_data()),
                                           static_cast<Eigen::bfloat16*>(product->untyped_data()));
      return ffi::Error::Success();
    default:
      return ffi::Error::InvalidArgument(
          "FftconvSpectralMatmul: a and b must be complex64, complex128, float16 or bfloat16");
  }
}

XLA_FFI_DEFINE_HANDLER(kSpectralMatmulHost, SpectralMatmulHost,
                       BindSpectralMatmulCall(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>()));
FFTCONV_REGISTER_FFI_HANDLER(kSpectralMatmulTarget, "Host", kSpectralMatmulHost);

}  // namespace fftconv
