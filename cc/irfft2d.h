// FftconvIrfft2d(spectrum, fft_size, out_h, out_w): inverse real 2-D FFT, scaled by 1/S^2, keeping
// only a window of the frame.
//   spectrum : [bins, batch, channels] complex, bins = S * (S/2 + 1); for float16 / bfloat16 y:
//              [bins, batch, channels, 2] of y's type, mean-normalised (y = irfft(S^2 spectrum))
//   fft_size, out_h, out_w : int32 or int64 scalars (host memory), checked as given
//   y        : NCHW [batch, channels, out_h, out_w] or NHWC [batch, out_h, out_w, channels], real;
//              y[.., i, j] = frame[offset_h + i, offset_w + j]
// FftconvIrfft2dBiasActivation(spectrum, fft_size, out_h, out_w, bias): the same inverse, storing
// activation(y + bias[c]) (CPU only: the FFT path fuses a layer's bias and activation there).
//   bias     : [channels] of y's type
#ifndef TF_FFTCONV_CC_IRFFT2D_H_
#define TF_FFTCONV_CC_IRFFT2D_H_

#include <cstdint>
#include <vector>

#include "cc/fftconv_kernel_util.h"

namespace fftconv {

// The kernels' registrations (cc/ops.cc, cc/ops_gpu.cc): one per real type y's, told apart by the
// spectrum's type (Tcomplex).
inline constexpr OpKernelTypes kIrfft2dKernels = {"FftconvIrfft2d", "Tcomplex",
                                                  BufferContents::kSpectra,
                                                  {"fft_size", "out_h", "out_w"}};
inline constexpr OpKernelTypes kIrfft2dBiasActivationKernels = {
    "FftconvIrfft2dBiasActivation", "Tcomplex", BufferContents::kSpectra,
    {"fft_size", "out_h", "out_w"}};

// The parameters of a tf_fftconv_irfft2d custom call (cc/xla_lowering.cc) from its buffer and the
// attributes its lowering wrote, checked as the OpKernel checks them; for the host and CUDA
// handlers.
// A half-precision spectrum is [bins, batch, channels, 2] (and its result of the same type).
absl::Status Irfft2dParamsFromCall(const ffi::AnyBuffer& spectrum, int64_t fft_size,
                                   int64_t out_h, int64_t out_w, int64_t offset_h,
                                   int64_t offset_w, int64_t nhwc, Irfft2dParams* params);

// The tf_fftconv_irfft2d custom call on Device's platform (registered in cc/op_kernels.h).
template <typename Device>
ffi::Error Irfft2dCall(typename Device::FfiContext context, ffi::AnyBuffer spectrum,
                       ffi::Result<ffi::AnyBuffer> output, int64_t fft_size, int64_t out_h,
                       int64_t out_w, int64_t offset_h, int64_t offset_w, int64_t nhwc) {
  Irfft2dParams params;
  return RunFfiCall(
      Irfft2dParamsFromCall(spectrum, fft_size, out_h, out_w, offset_h, offset_w, nhwc, &params),
      *output, spectrum.element_type(), BufferContents::kSpectra,
      "FftconvIrfft2d: spectrum must be complex64, complex128, float16 or bfloat16",
      [&](auto real) {
        return Device::template Irfft2d<typename decltype(real)::type>(
            Device::StreamOf(context), params, spectrum.untyped_data(), output->untyped_data());
      });
}

// The handler of Irfft2dCall<Device>, bound (cc/fftconv_ffi.h) for FfiHandler.
template <typename Device>
auto Irfft2dHandler() {
  return BindInt64Attrs(BindCall<Device, 1>(), "fft_size", "out_h", "out_w", "offset_h",
                        "offset_w", "nhwc")
      .To(Irfft2dCall<Device>);
}

// kBiasActivation: the FftconvIrfft2dBiasActivation kernel (CPU only), whose fifth input is the bias.
template <typename Device, typename Real, bool kBiasActivation = false>
class Irfft2dOp : public tensorflow::OpKernel {
 public:
  explicit Irfft2dOp(tensorflow::OpKernelConstruction* ctx) : tensorflow::OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadFftAttrs(ctx, &attrs_));
    if constexpr (kBiasActivation) {
      static_assert(std::is_same<Device, CpuDevice>::value, "a CPU kernel only");
      OP_REQUIRES_OK(ctx, ReadActivationAttr(ctx, &activation_));
    }
  }

  void Compute(tensorflow::OpKernelContext* ctx) override {
    const tensorflow::Tensor& spectrum = ctx->input(0);
    int64_t dims[3];
    OP_REQUIRES_OK(ctx, SpectrumDims("spectrum", spectrum.shape(), kHalfSpectrum<Real>, dims));
    int64_t fft_size = 0, out_h = 0, out_w = 0;
    OP_REQUIRES_OK(ctx, ReadScalarInput(ctx, 1, "fft_size", &fft_size));
    OP_REQUIRES_OK(ctx, ReadScalarInput(ctx, 2, "out_h", &out_h));
    OP_REQUIRES_OK(ctx, ReadScalarInput(ctx, 3, "out_w", &out_w));
    Irfft2dParams params;
    std::vector<int64_t> output_dims;
    OP_REQUIRES_OK(ctx, MakeIrfft2dParams(dims, fft_size, out_h, out_w, attrs_.offset_h,
                                          attrs_.offset_w, attrs_.nhwc, &params, &output_dims));
    const tensorflow::Tensor* bias = nullptr;
    if constexpr (kBiasActivation) {
      bias = &ctx->input(4);
      std::vector<int64_t> bias_dims;
      for (int i = 0; i < bias->dims(); ++i) bias_dims.push_back(bias->dim_size(i));
      OP_REQUIRES_OK(ctx, ValidateBias(bias_dims, dims[2]));
    }

    OP_REQUIRES_OK(ctx, RunOnOutput<Device>(ctx, output_dims, [&](const auto& stream,
                                                                  tensorflow::Tensor* output) {
      const auto* spectrum_data = spectrum.flat<SpectrumElement<Real>>().data();
      if constexpr (kBiasActivation) {
        BiasActivation<Real> epilogue;
        epilogue.bias = bias->flat<Real>().data();
        epilogue.activation = activation_;
        Irfft2dOnCpu<Real>(stream, params, spectrum_data, output->flat<Real>().data(), epilogue);
        return absl::OkStatus();
      } else {
        return Device::template Irfft2d<Real>(stream, params, spectrum_data,
                                              output->flat<Real>().data());
      }
    }));
  }

 private:
  FftAttrs attrs_;
  Activation activation_ = Activation::kLinear;
};

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_IRFFT2D_H_
