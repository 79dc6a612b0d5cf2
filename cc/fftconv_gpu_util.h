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

inline absl::Status CudaStatus(const char* what, int code) {
  if (code == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("tf_fftconv: ", what, " failed on the GPU: ",
                                          cuda::FftconvCudaErrorString(code), " (CUDA error ",
                                          code, ")"));
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_FFTCONV_GPU_UTIL_H_
