// FftconvIrfft2d on the GPU: the kernel in cuda/irfft2d.cu, on TensorFlow's stream.
#include "cc/fftconv_gpu_util.h"
#include "cc/irfft2d.h"

namespace fftconv {

template <typename Real>
struct Irfft2dFunctor<GpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const Irfft2dParams& params,
                          const std::complex<Real>* spectrum, Real* output) {
    cudaStream_t stream;
    if (absl::Status s = GetCudaStream(ctx, &stream); !s.ok()) return s;
    return CudaStatus("FftconvIrfft2d",
                      cuda::LaunchIrfft2d<Real>(params, reinterpret_cast<const Real*>(spectrum),
                                                output, stream));
  }
};

// fft_size, out_h and out_w are read on the host before anything is launched.
#define REGISTER_GPU(Real)                                                     \
  REGISTER_KERNEL_BUILDER(Name("FftconvIrfft2d")                               \
                              .Device(tensorflow::DEVICE_GPU)                  \
                              .TypeConstraint<std::complex<Real>>("Tcomplex") \
                              .HostMemory("fft_size")                          \
                              .HostMemory("out_h")                             \
                              .HostMemory("out_w"),                            \
                          Irfft2dOp<GpuDevice, Real>);
REGISTER_GPU(float)
REGISTER_GPU(double)
#undef REGISTER_GPU

}  // namespace fftconv
