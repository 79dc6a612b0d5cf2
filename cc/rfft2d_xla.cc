// FftconvRfft2d under XLA: the lowering to the tf_fftconv_rfft2d custom call, and that call's
// host handler (the CPU kernel on XLA's thread pool). The CUDA handler is in cc/rfft2d_gpu.cc.
#include "cc/fftconv_ffi.h"
#include "cc/fftconv_xla.h"
#include "cc/rfft2d.h"

namespace fftconv {

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

FFTCONV_REGISTER_KERNEL(Name("FftconvRfft2d").Device(tensorflow::DEVICE_CPU_XLA_JIT),
                        Rfft2dXlaOp);
#ifdef FFTCONV_WITH_CUDA
FFTCONV_REGISTER_KERNEL(Name("FftconvRfft2d").Device(tensorflow::DEVICE_GPU_XLA_JIT),
                        Rfft2dXlaOp);
#endif

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

static ffi::Error Rfft2dHost(ffi::ThreadPool pool, ffi::AnyBuffer x,
                             ffi::Result<ffi::AnyBuffer> spectrum, int64_t fft_size,
                             int64_t offset_h, int64_t offset_w, int64_t nhwc,
                             int64_t round_to_tf32) {
  Rfft2dParams params;
  if (absl::Status s = Rfft2dParamsFromCall(x, *spectrum, fft_size, offset_h, offset_w, nhwc,
                                            round_to_tf32, &params);
      !s.ok())
    return FfiError(s);
  if (spectrum->element_count() == 0) return ffi::Error::Success();
  const ParallelRunner parallel = FfiParallelRunner(pool);
  switch (x.element_type()) {
    case ffi::DataType::F32:
      Rfft2dOnCpu<float>(parallel, params, x.typed_data<float>(),
                         static_cast<std::complex<float>*>(spectrum->untyped_data()));
      return ffi::Error::Success();
    case ffi::DataType::F64:
      Rfft2dOnCpu<double>(parallel, params, x.typed_data<double>(),
                          static_cast<std::complex<double>*>(spectrum->untyped_data()));
      return ffi::Error::Success();
    case ffi::DataType::F16:
      Rfft2dOnCpu<Eigen::half>(parallel, params, static_cast<const Eigen::half*>(x.untyped_data()),
                               static_cast<Eigen::half*>(spectrum->untyped_data()));
      return ffi::Error::Success();
    case ffi::DataType::BF16:
      Rfft2dOnCpu<Eigen::bfloat16>(parallel, params, static_cast<const Eigen::bfloat16*>(x.untyped_data()),
                                   static_cast<Eigen::bfloat16*>(spectrum->untyped_data()));
      return ffi::Error::Success();
    default:
      return ffi::Error::InvalidArgument(
          "FftconvRfft2d: x must be float32, float64, float16 or bfloat16");
  }
}

XLA_FFI_DEFINE_HANDLER(kRfft2dHost, Rfft2dHost,
                       BindRfft2dCall(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>()));
FFTCONV_REGISTER_FFI_HANDLER(kRfft2dTarget, "Host", kRfft2dHost);

}  // namespace fftconv
