// The three ops together, for the translation units that register them on a device: the OpKernels
// of every real type (cc/ops.cc on the CPU, cc/ops_gpu.cc on the GPU) and the handlers of their XLA
// custom calls on the device's platform (cc/xla_lowering.cc on "Host", cc/ops_gpu.cc on "CUDA").
// Device is CpuDevice (cc/fftconv_kernel_util.h) or GpuDevice (cc/fftconv_gpu_util.h).
#ifndef TF_FFTCONV_CC_OP_KERNELS_H_
#define TF_FFTCONV_CC_OP_KERNELS_H_

#include "cc/irfft2d.h"
#include "cc/rfft2d.h"
#include "cc/spectral_matmul.h"

namespace fftconv {

// Returns true, so that a static's initialiser can run it when the library loads.
template <typename Device>
bool RegisterOpKernels(const char* device) {
  ForEachRealType([device](auto real) {
    using Real = typename decltype(real)::type;
    RegisterOpKernel<Rfft2dOp<Device, Real>, Real>(kRfft2dKernels, device);
    RegisterOpKernel<Irfft2dOp<Device, Real>, Real>(kIrfft2dKernels, device);
    RegisterOpKernel<SpectralMatmulOp<Device, Real>, Real>(kSpectralMatmulKernels, device);
  });
  return true;
}

template <typename Device>
bool RegisterOpHandlers() {
  RegisterFfiHandler(kRfft2dTarget, Device::kFfiPlatform, FfiHandler<Rfft2dHandler<Device>>);
  RegisterFfiHandler(kIrfft2dTarget, Device::kFfiPlatform, FfiHandler<Irfft2dHandler<Device>>);
  RegisterFfiHandler(kSpectralMatmulTarget, Device::kFfiPlatform,
                     FfiHandler<SpectralMatmulHandler<Device>>);
  return true;
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_OP_KERNELS_H_
