// The GPU side of the OpKernels and the XLA handlers: TensorFlow's CUDA stream for an op, CUDA error
// codes from the launchers turned into statuses, and GpuDevice. Compiled only when the CUDA kernels
// are built.
#ifndef TF_FFTCONV_CC_FFTCONV_GPU_UTIL_H_
#define TF_FFTCONV_CC_FFTCONV_GPU_UTIL_H_

#include "cc/fftconv_kernel_util.h"
#include "cuda/fftconv_cuda.h"
#include "tensorflow/core/framework/device_base.h"
#include "xla/stream_executor/stream.h"

namespace fftconv {

inline absl::Status GetCudaStream(tensorflow::OpKernelContext* ctx, cudaStream_t* stream) {
  auto* device_context = ctx->op_device_context();
  if (device_context == nullptr || device_context->stream() == nullptr) {
    return absl::InternalError("tf_fftconv: no GPU stream for this op");
  }
  *stream = reinterpret_cast<cudaStream_t>(
      device_context->stream()->platform_specific_handle().stream);
  if (*stream == nullptr) return absl::InternalError("tf_fftconv: the GPU stream has no handle");
  return absl::OkStatus();
}

// The launchers' element type for an op's real type: itself for float and double, the 16-bit
// storage types of cuda/fftconv_cuda.h for Eigen::half and Eigen::bfloat16 (same bits).
template <typename Real>
using LauncherType = ByPrecision<Real, Real, cuda::Float16, cuda::BFloat16>;
static_assert(sizeof(Eigen::half) == sizeof(cuda::Float16) &&
                  sizeof(Eigen::bfloat16) == sizeof(cuda::BFloat16),
              "the launchers take Eigen's half types by their 16-bit patterns");

inline absl::Status CudaStatus(const char* what, int code) {
  if (code == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("tf_fftconv: ", what, " failed on the GPU: ",
                                          cuda::FftconvCudaErrorString(code), " (CUDA error ",
                                          code, ")"));
}

// The GPU as a device of the OpKernels and the XLA handlers (CpuDevice, cc/fftconv_kernel_util.h):
// the cuda/ launchers on TensorFlow's stream or XLA's, CUDA errors turned into statuses.
struct GpuDevice {
  using Stream = cudaStream_t;
  using FfiContext = cudaStream_t;  // the handler's argument, and its binding
  using FfiContextBinding = ffi::PlatformStream<cudaStream_t>;
  static constexpr const char* kFfiPlatform = "CUDA";

  static absl::Status StreamOf(tensorflow::OpKernelContext* ctx, Stream* stream) {
    return GetCudaStream(ctx, stream);
  }
  static Stream StreamOf(FfiContext stream) { return stream; }

  // The launchers' buffers: operands read, results written, as LauncherType<Real>.
  template <typename Real>
  static const LauncherType<Real>* Operand(const void* buffer) {
    return static_cast<const LauncherType<Real>*>(buffer);
  }
  template <typename Real>
  static LauncherType<Real>* Result(void* buffer) {
    return static_cast<LauncherType<Real>*>(buffer);
  }

  // input: NCHW or NHWC real; spectrum: [bins, batch, channels] complex (interleaved Real pairs),
  // or for Eigen::half / Eigen::bfloat16 [bins, batch, channels, 2], mean-normalised.
  template <typename Real>
  static absl::Status Rfft2d(Stream stream, const Rfft2dParams& params, const void* input,
                             void* spectrum) {
    return CudaStatus("FftconvRfft2d", cuda::LaunchRfft2d(params, Operand<Real>(input),
                                                          Result<Real>(spectrum), stream));
  }
  // a, b, c: [bins, rows, cols] complex, as interleaved Real pairs (for Eigen::half /
  // Eigen::bfloat16: [bins, rows, cols, 2]).
  template <typename Real>
  static absl::Status SpectralMatmul(Stream stream, const SpectralMatmulParams& params,
                                     const void* a, const void* b, void* c) {
    return CudaStatus("FftconvSpectralMatmul",
                      cuda::LaunchSpectralMatmul(params, Operand<Real>(a), Operand<Real>(b),
                                                 Result<Real>(c), stream));
  }
  // spectrum: as Rfft2d's; output: the real window.
  template <typename Real>
  static absl::Status Irfft2d(Stream stream, const Irfft2dParams& params, const void* spectrum,
                              void* output) {
    return CudaStatus("FftconvIrfft2d", cuda::LaunchIrfft2d(params, Operand<Real>(spectrum),
                                                            Result<Real>(output), stream));
  }
};

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_FFTCONV_GPU_UTIL_H_
