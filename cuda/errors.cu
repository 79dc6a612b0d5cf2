// Text of the error codes returned by the launchers (they are cudaError_t values).
#include <cuda_runtime.h>

#include "fftconv_cuda.h"

namespace fftconv {
namespace cuda {

const char* FftconvCudaErrorString(int code) {
  if (code == 0) return "no error";
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

}  // namespace cuda
}  // namespace fftconv
