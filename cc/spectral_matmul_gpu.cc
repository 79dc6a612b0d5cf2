// FftconvSpectralMatmul on the GPU: the kernels in cuda/spectral_matmul.cu, on TensorFlow's stream.
#include "cc/fftconv_gpu_util.h"
#include "cc/spectral_matmul.h"

namespace fftconv {

template <typename Real>
struct SpectralMatmulFunctor<GpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const SpectralMatmulParams& params,
                          const std::complex<Real>* a, const std::complex<Real>* b,
                          std::complex<Real>* c) {
    cudaStream_t stream;
    if (absl::Status s = GetCudaStream(ctx, &stream); !s.ok()) return s;
    return CudaStatus("FftconvSpectralMatmul",
                      cuda::LaunchSpectralMatmul<Real>(params, reinterpret_cast<const Real*>(a),
                                                       reinterpret_cast<const Real*>(b),
                                                       reinterpret_cast<Real*>(c), stream));
  }
};

#define REGISTER_GPU(Real)                                                     \
  REGISTER_KERNEL_BUILDER(Name("FftconvSpectralMatmul")                        \
                              .Device(tensorflow::DEVICE_GPU)                  \
                              .TypeConstraint<std::complex<Real>>("T"),        \
                          SpectralMatmulOp<GpuDevice, Real>);
REGISTER_GPU(float)
REGISTER_GPU(double)
#undef REGISTER_GPU

}  // namespace fftconv
