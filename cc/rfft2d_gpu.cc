// FftconvRfft2d on the GPU: the kernel in cuda/rfft2d.cu, on TensorFlow's stream.
#include "cc/fftconv_gpu_util.h"
#include "cc/rfft2d.h"

namespace fftconv {

template <typename Real>
struct Rfft2dFunctor<GpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const Rfft2dParams& params,
                          const Real* input, std::complex<Real>* spectrum) {
    cudaStream_t stream;
    if (absl::Status s = GetCudaStream(ctx, &stream); !s.ok()) return s;
    return CudaStatus("FftconvRfft2d",
                      cuda::LaunchRfft2d<Real>(params, input, reinterpret_cast<Real*>(spectrum),
                                               stream));
  }
};

// fft_size is read on the host before anything is launched.
#define REGISTER_GPU(Real)                                                     \
  REGISTER_KERNEL_BUILDER(Name("FftconvRfft2d")                                \
                              .Device(tensorflow::DEVICE_GPU)                  \
                              .TypeConstraint<Real>("T")                       \
                              .HostMemory("fft_size"),                         \
                          Rfft2dOp<GpuDevice, Real>);
REGISTER_GPU(float)
REGISTER_GPU(double)
#undef REGISTER_GPU

}  // namespace fftconv
