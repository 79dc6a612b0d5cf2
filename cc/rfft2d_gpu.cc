// FftconvRfft2d on the GPU: the kernel in cuda/rfft2d.cu, on TensorFlow's stream (the OpKernel)
// or on XLA's (the tf_fftconv_rfft2d custom call).
#include "cc/fftconv_gpu_util.h"
#include "cc/rfft2d.h"

namespace fftconv {

// input: NCHW or NHWC real; spectrum: [bins, batch, channels] complex (interleaved Real pairs), or
// for Eigen::half / Eigen::bfloat16 [bins, batch, channels, 2], mean-normalised.
template <typename Real>
absl::Status Rfft2dOnGpu(cudaStream_t stream, const Rfft2dParams& params, const void* input,
                         void* spectrum) {
  using L = typename LauncherType<Real>::type;
  return CudaStatus("FftconvRfft2d",
                    cuda::LaunchRfft2d<L>(params, static_cast<const L*>(input),
                                          static_cast<L*>(spectrum), stream));
}

template <typename Real>
struct Rfft2dFunctor<GpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const Rfft2dParams& params,
                          const Real* input, SpectrumElement<Real>* spectrum) {
    cudaStream_t stream;
    if (absl::Status s = GetCudaStream(ctx, &stream); !s.ok()) return s;
    return Rfft2dOnGpu<Real>(stream, params, input, spectrum);
  }
};

// fft_size is read on the host before anything is launched.
#define REGISTER_GPU(Real)                                                     \
  FFTCONV_REGISTER_KERNEL(Name("FftconvRfft2d")                                \
                              .Device(tensorflow::DEVICE_GPU)                  \
                              .TypeConstraint<Real>("T")                       \
                              .HostMemory("fft_size"),                         \
                          Rfft2dOp<GpuDevice, Real>);
REGISTER_GPU(float)
REGISTER_GPU(double)
REGISTER_GPU(Eigen::half)
REGISTER_GPU(Eigen::bfloat16)
#undef REGISTER_GPU

// The tf_fftconv_rfft2d custom call (cc/xla_lowering.cc) on XLA's stream.
static ffi::Error Rfft2dCuda(cudaStream_t stream, ffi::AnyBuffer x,
                             ffi::Result<ffi::AnyBuffer> spectrum, int64_t fft_size,
                             int64_t offset_h, int64_t offset_w, int64_t nhwc,
                             int64_t round_to_tf32) {
  Rfft2dParams params;
  if (absl::Status s = Rfft2dParamsFromCall(x, *spectrum, fft_size, offset_h, offset_w, nhwc,
                                            round_to_tf32, &params);
      !s.ok())
    return FfiError(s);
  if (spectrum->element_count() == 0) return ffi::Error::Success();
  switch (x.element_type()) {
    case ffi::DataType::F32:
      return FfiError(Rfft2dOnGpu<float>(stream, params, x.untyped_data(),
                                         spectrum->untyped_data()));
    case ffi::DataType::F64:
      return FfiError(Rfft2dOnGpu<double>(stream, params, x.untyped_data(),
                                          spectrum->untyped_data()));
    case ffi::DataType::F16:
      return FfiError(Rfft2dOnGpu<Eigen::half>(stream, params, x.untyped_data(),
                                               spectrum->untyped_data()));
    case ffi::DataType::BF16:
      return FfiError(Rfft2dOnGpu<Eigen::bfloat16>(stream, params, x.untyped_data(),
                                                   spectrum->untyped_data()));
    default:
      return ffi::Error::InvalidArgument(
          "FftconvRfft2d: x must be float32, float64, float16 or bfloat16");
  }
}

XLA_FFI_DEFINE_HANDLER(kRfft2dCuda, Rfft2dCuda,
                       BindRfft2dCall(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()));
FFTCONV_REGISTER_FFI_HANDLER(kRfft2dTarget, "CUDA", kRfft2dCuda);

}  // namespace fftconv
