// FftconvIrfft2d under XLA: the lowering to the tf_fftconv_irfft2d custom call, and that call's
// host handler (the CPU kernel on XLA's thread pool). The CUDA handler is in cc/irfft2d_gpu.cc.
#include "cc/fftconv_ffi.h"
#include "cc/fftconv_xla.h"
#include "cc/irfft2d.h"

namespace fftconv {

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

FFTCONV_REGISTER_KERNEL(Name("FftconvIrfft2d").Device(tensorflow::DEVICE_CPU_XLA_JIT),
                        Irfft2dXlaOp);
#ifdef FFTCONV_WITH_CUDA
FFTCONV_REGISTER_KERNEL(Name("FftconvIrfft2d").Device(tensorflow::DEVICE_GPU_XLA_JIT),
                        Irfft2dXlaOp);
#endif

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

static ffi::Error Irfft2dHost(ffi::ThreadPool pool, ffi::AnyBuffer spectrum,
                              ffi::Result<ffi::AnyBuffer> output, int64_t fft_size, int64_t out_h,
                              int64_t out_w, int64_t offset_h, int64_t offset_w, int64_t nhwc) {
  Irfft2dParams params;
  if (absl::Status s = Irfft2dParamsFromCall(spectrum, fft_size, out_h, out_w, offset_h,
                                             offset_w, nhwc, &params);
      !s.ok())
    return FfiError(s);
  if (output->element_count() == 0) return ffi::Error::Success();
  const ParallelRunner parallel = FfiParallelRunner(pool);
  switch (spectrum.element_type()) {
    case ffi::DataType::C64:
      Irfft2dOnCpu<float>(parallel, params, spectrum.typed_data<std::complex<float>>(),
                          static_cast<float*>(output->untyped_data()));
      return ffi::Error::Success();
    case ffi::DataType::C128:
      Irfft2dOnCpu<double>(parallel, params, spectrum.typed_data<std::complex<double>>(),
                           static_cast<double*>(output->untyped_data()));
      return ffi::Error::Success();
    case ffi::DataType::F16:
      Irfft2dOnCpu<Eigen::half>(parallel, params, static_cast<const Eigen::half*>(spectrum.untyped_data()),
                                static_cast<Eigen::half*>(output->untyped_data()));
      return ffi::Error::Success();
    case ffi::DataType::BF16:
      Irfft2dOnCpu<Eigen::bfloat16>(parallel, params, static_cast<const Eigen::bfloat16*>(spectrum.untyped_data()),
                                    static_cast<Eigen::bfloat16*>(output->untyped_data()));
      return ffi::Error::Success();
    default:
      return ffi::Error::InvalidArgument(
          "FftconvIrfft2d: spectrum must be complex64, complex128, float16 or bfloat16");
  }
}

XLA_FFI_DEFINE_HANDLER(kIrfft2dHost, Irfft2dHost,
                       BindIrfft2dCall(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>()));
FFTCONV_REGISTER_FFI_HANDLER(kIrfft2dTarget, "Host", kIrfft2dHost);

}  // namespace fftconv
