// The three ops on the GPU: each op's OpKernel on TensorFlow's stream and the CUDA handler of its
// XLA custom call on XLA's stream, both over the launchers of cuda/ (cuda/fftconv_cuda.h), with CUDA
// errors turned into TensorFlow's. Compiled only when the CUDA kernels are built. One translation
// unit for the three because TensorFlow's and XLA's headers dominate their compile: g++ took 8-9 s
// for one op's file alone on 2 cores, 9-10 s for the three together.
#include "cc/fftconv_gpu_util.h"
#include "cc/irfft2d.h"
#include "cc/rfft2d.h"
#include "cc/spectral_matmul.h"

namespace fftconv {

// -------------------------------------------------------------------------------------------------
// FftconvRfft2d on the GPU: the kernel in cuda/rfft2d.cu, on TensorFlow's stream (the OpKernel)
// or on XLA's (the tf_fftconv_rfft2d custom call).

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

// -------------------------------------------------------------------------------------------------
// FftconvIrfft2d on the GPU: the kernel in cuda/irfft2d.cu, on TensorFlow's stream (the
// OpKernel) or on XLA's (the tf_fftconv_irfft2d custom call).

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

// -------------------------------------------------------------------------------------------------
// FftconvSpectralMatmul on the GPU: the kernels in cuda/spectral_matmul.cu, on TensorFlow's stream
// (the OpKernel) or on XLA's (the tf_fftconv_spectral_matmul custom call).

// a, b, c: [bins, rows, cols] complex, as interleaved Real pairs (for Eigen::half /
// Eigen::bfloat16: [bins, rows, cols, 2]).
template <typename Real>
absl::Status SpectralMatmulOnGpu(cudaStream_t stream, const SpectralMatmulParams& params,
                                 const void* a, const void* b, void* c) {
  using L = typename LauncherType<Real>::type;
  return CudaStatus("FftconvSpectralMatmul",
                    cuda::LaunchSpectralMatmul<L>(params, static_cast<const L*>(a),
                                                  static_cast<const L*>(b), static_cast<L*>(c),
                                                  stream));
}

template <typename Real>
struct SpectralMatmulFunctor<GpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const SpectralMatmulParams& params,
                          const SpectrumElement<Real>* a, const SpectrumElement<Real>* b,
                          SpectrumElement<Real>* c) {
    cudaStream_t stream;
    if (absl::Status s = GetCudaStream(ctx, &stream); !s.ok()) return s;
    return SpectralMatmulOnGpu<Real>(stream, params, a, b, c);
  }
};

#define REGISTER_GPU(Real)                                                     \
  FFTCONV_REGISTER_KERNEL(Name("FftconvSpectralMatmul")                        \
                              .Device(tensorflow::DEVICE_GPU)                  \
                              .TypeConstraint<SpectrumElement<Real>>("T"),     \
                          SpectralMatmulOp<GpuDevice, Real>);
REGISTER_GPU(float)
REGISTER_GPU(double)
REGISTER_GPU(Eigen::half)
REGISTER_GPU(Eigen::bfloat16)
#undef REGISTER_GPU

// The tf_fftconv_spectral_matmul custom call (cc/xla_lowering.cc) on XLA's stream.
static ffi::Error SpectralMatmulCuda(cudaStream_t stream, ffi::AnyBuffer a, ffi::AnyBuffer b,
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
  switch (a.element_type()) {
    case ffi::DataType::C64:
      return FfiError(SpectralMatmulOnGpu<float>(stream, params, a.untyped_data(),
                                                 b.untyped_data(), product->untyped_data()));
    case ffi::DataType::C128:
      return FfiError(SpectralMatmulOnGpu<double>(stream, params, a.untyped_data(),
                                                  b.untyped_data(), product->untyped_data()));
    case ffi::DataType::F16:
      return FfiError(SpectralMatmulOnGpu<Eigen::half>(stream, params, a.untyped_data(),
                                                       b.untyped_data(), product->untyped_data()));
    case ffi::DataType::BF16:
      return FfiError(SpectralMatmulOnGpu<Eigen::bfloat16>(
          stream, params, a.untyped_data(), b.untyped_data(), product->untyped_data()));
    default:
      return ffi::Error::InvalidArgument(
          "FftconvSpectralMatmul: a and b must be complex64, complex128, float16 or bfloat16");
  }
}

XLA_FFI_DEFINE_HANDLER(
    kSpectralMatmulCuda, SpectralMatmulCuda,
    BindSpectralMatmulCall(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()));
FFTCONV_REGISTER_FFI_HANDLER(kSpectralMatmulTarget, "CUDA", kSpectralMatmulCuda);

}  // namespace fftconv
