// The GPU side of the OpKernels: TensorFlow's CUDA stream for this op, and CUDA error codes from
// the launchers turned into TensorFlow errors. Compiled only when the CUDA kernels are built.
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
struct LauncherType {
  using type = Real;
};
template <>
struct LauncherType<Eigen::half> {
  using type = cuda::Float16;
};
template <>
struct LauncherType<Eigen::bfloat16> {
  using type = cuda::BFloat16;
};
static_assert(sizeof(Eigen::half) == sizeof(cuda::Float16) &&
                  sizeof(Eigen::bfloat16) == sizeof(cuda::BFloat16),
              "the launchers take Eigen's half types by their 16-bit patterns");

inline absl::Status CudaStatus(const char* what, int code) {
  if (code == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("tf_fftconv: ", what, " failed on the GPU: ",
                                          cuda::FftconvCudaErrorString(code), " (CUDA error ",
                                          code, ")"));
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_FFTCONV_GPU_UTIL_H_
