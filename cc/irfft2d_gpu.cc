// FftconvIrfft2d on the GPU: the kernel in cuda/irfft2d.cu, on TensorFlow's stream (the
// OpKernel) or on XLA's (the tf_fftconv_irfft2d custom call).
#include "cc/fftconv_gpu_util.h"
#include "cc/irfft2d.h"

namespace fftconv {

// spectrum: [bins, batch, channels] complex (interleaved Real pairs), or for Eigen::half /
// Eigen::bfloat16 [bins, batch, channels, 2], mean-normalised; output: the real window.
template <typename Real>
absl::Status Irfft2dOnGpu(cudaStream_t stream, const Irfft2dParams& params, const void* spectrum,
                          void* output) {
  using L = typename LauncherType<Real>::type;
  return CudaStatus("FftconvIrfft2d",
                    cuda::LaunchIrfft2d<L>(params, static_cast<const L*>(spectrum),
                                           static_cast<L*>(output), stream));
}

template <typename Real>
struct Irfft2dFunctor<GpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const Irfft2dParams& params,
                          const SpectrumElement<Real>* spectrum, Real* output) {
    cudaStream_t stream;
    if (absl::Status s = GetCudaStream(ctx, &stream); !s.ok()) return s;
    return Irfft2dOnGpu<Real>(stream, params, spectrum, output);
  }
};

// fft_size, out_h and out_w are read on the host before anything is launched.
#define REGISTER_GPU(Real)                                                     \
  FFTCONV_REGISTER_KERNEL(Name("FftconvIrfft2d")                               \
                              .Device(tensorflow::DEVICE_GPU)                  \
                              .TypeConstraint<SpectrumElement<Real>>("Tcomplex") \
                              .HostMemory("fft_size")                          \
                              .HostMemory("out_h")                             \
                              .HostMemory("out_w"),                            \
                          Irfft2dOp<GpuDevice, Real>);
REGISTER_GPU(float)
REGISTER_GPU(double)
REGISTER_GPU(Eigen::half)
REGISTER_GPU(Eigen::bfloat16)
#undef REGISTER_GPU

// The tf_fftconv_irfft2d custom call (cc/xla_lowering.cc) on XLA's stream.
static ffi::Error Irfft2dCuda(cudaStream_t stream, ffi::AnyBuffer spectrum,
                              ffi::Result<ffi::AnyBuffer> output, int64_t fft_size, int64_t out_h,
                              int64_t out_w, int64_t offset_h, int64_t offset_w, int64_t nhwc) {
  Irfft2dParams params;
  if (absl::Status s = Irfft2dParamsFromCall(spectrum, fft_size, out_h, out_w, offset_h,
                                             offset_w, nhwc, &params);
      !s.ok())
    return FfiError(s);
  if (output->element_count() == 0) return ffi::Error::Success();
  switch (spectrum.element_type()) {
    case ffi::DataType::C64:
      return FfiError(Irfft2dOnGpu<float>(stream, params, spectrum.untyped_data(),
                                          output->untyped_data()));
    case ffi::DataType::C128:
      return FfiError(Irfft2dOnGpu<double>(stream, params, spectrum.untyped_data(),
                                           output->untyped_data()));
    case ffi::DataType::F16:
      return FfiError(Irfft2dOnGpu<Eigen::half>(stream, params, spectrum.untyped_data(),
                                                output->untyped_data()));
    case ffi::DataType::BF16:
      return FfiError(Irfft2dOnGpu<Eigen::bfloat16>(stream, params, spectrum.untyped_data(),
                                                    output->untyped_data()));
    default:
      return ffi::Error::InvalidArgument(
          "FftconvIrfft2d: spectrum must be complex64, complex128, float16 or bfloat16");
  }
}

XLA_FFI_DEFINE_HANDLER(kIrfft2dCuda, Irfft2dCuda,
                       BindIrfft2dCall(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()));
FFTCONV_REGISTER_FFI_HANDLER(kIrfft2dTarget, "CUDA", kIrfft2dCuda);

}  // namespace fftconv
