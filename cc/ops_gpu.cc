// The three ops on the GPU: their OpKernels on TensorFlow's stream and the CUDA handlers of their XLA
// custom calls on XLA's stream, both over the launchers of cuda/ (GpuDevice, cc/fftconv_gpu_util.h).
// Compiled only when the CUDA kernels are built.
#include "cc/fftconv_gpu_util.h"
#include "cc/op_kernels.h"

namespace fftconv {

// The sizes (fft_size, out_h, out_w) are read on the host before anything is launched
// (OpKernelTypes::host_inputs).
[[maybe_unused]] static const bool gpu_kernels_registered =
    RegisterOpKernels<GpuDevice>(tensorflow::DEVICE_GPU) && RegisterOpHandlers<GpuDevice>();

}  // namespace fftconv
