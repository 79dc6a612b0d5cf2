// FftconvSpectralMatmul on the GPU: the kernels in cuda/spectral_matmul.cu, on TensorFlow's stream
// (the OpKernel) or on XLA's (the tf_fftconv_spectral_matmul custom call).
#include "cc/fftconv_gpu_util.h"
#include "cc/spectral_matmul.h"

namespace fftconv {

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
