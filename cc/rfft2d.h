// FftconvRfft2d(x, fft_size): forward real 2-D FFT of images placed in an S x S frame of zeros.
//   x        : NCHW [batch, channels, height, width] or NHWC [batch, height, width, channels], real
//   fft_size : S, int32 or int64 scalar (host memory), checked as given
//   spectrum : [bins, batch, channels] complex, bins = S * (S/2 + 1), bin = ky * (S/2 + 1) + kx;
//              for float16 / bfloat16 x: [bins, batch, channels, 2] of x's type, holding X / S^2
// FftconvRfft2dActivationGradient(dy, fft_size, y): the same transform of dy * activation'(z), for
// the gradient dy of a layer's output y = activation(z) (CPU only: the FFT path fuses it there).
//   dy, y    : the layer's output gradient and output, one shape, in data_format
//   spectrum : as FftconvRfft2d's, of dy * activation'(z) (ReLU: dy where y > 0, else 0)
#ifndef TF_FFTCONV_CC_RFFT2D_H_
#define TF_FFTCONV_CC_RFFT2D_H_

#include <cstdint>

#include "cc/fftconv_kernel_util.h"

namespace fftconv {

// The kernels' registrations (cc/ops.cc, cc/ops_gpu.cc): one per real type x's.
inline constexpr OpKernelTypes kRfft2dKernels = {"FftconvRfft2d", "T", BufferContents::kImages,
                                                 {"fft_size"}};
inline constexpr OpKernelTypes kRfft2dActivationGradientKernels = {
    "FftconvRfft2dActivationGradient", "T", BufferContents::kImages, {"fft_size"}};

// The parameters of a tf_fftconv_rfft2d custom call (cc/xla_lowering.cc) from its buffer and the
// attributes its lowering wrote, checked as the OpKernel checks them; for the host and CUDA
// handlers.
// A half-precision x must come with a half-precision result ([.., 2] of the same type).
absl::Status Rfft2dParamsFromCall(const ffi::AnyBuffer& x, const ffi::AnyBuffer& spectrum,
                                  int64_t fft_size, int64_t offset_h, int64_t offset_w,
                                  int64_t nhwc, int64_t round_to_tf32, Rfft2dParams* params);

// The tf_fftconv_rfft2d custom call on Device's platform (registered in cc/op_kernels.h).
template <typename Device>
ffi::Error Rfft2dCall(typename Device::FfiContext context, ffi::AnyBuffer x,
                      ffi::Result<ffi::AnyBuffer> spectrum, int64_t fft_size, int64_t offset_h,
                      int64_t offset_w, int64_t nhwc, int64_t round_to_tf32) {
  Rfft2dParams params;
  return RunFfiCall(
      Rfft2dParamsFromCall(x, *spectrum, fft_size, offset_h, offset_w, nhwc, round_to_tf32,
                           &params),
      *spectrum, x.element_type(), BufferContents::kImages,
      "FftconvRfft2d: x must be float32, float64, float16 or bfloat16", [&](auto real) {
        return Device::template Rfft2d<typename decltype(real)::type>(
            Device::StreamOf(context), params, x.untyped_data(), spectrum->untyped_data());
      });
}

// The handler of Rfft2dCall<Device>, bound (cc/fftconv_ffi.h) for FfiHandler.
template <typename Device>
auto Rfft2dHandler() {
  return BindInt64Attrs(BindCall<Device, 1>(), "fft_size", "offset_h", "offset_w", "nhwc",
                        "round_to_tf32")
      .To(Rfft2dCall<Device>);
}

// kActivationGradient: the FftconvRfft2dActivationGradient kernel (CPU only), whose x is dy and
// whose third input is y; it has no round_to_tf32 (a CPU spectrum is never rounded).
template <typename Device, typename Real, bool kActivationGradient = false>
class Rfft2dOp : public tensorflow::OpKernel {
 public:
  explicit Rfft2dOp(tensorflow::OpKernelConstruction* ctx) : tensorflow::OpKernel(ctx) {
    if constexpr (kActivationGradient) {
      static_assert(std::is_same<Device, CpuDevice>::value, "a CPU kernel only");
      OP_REQUIRES_OK(ctx, ReadFftAttrs(ctx, &attrs_));
      OP_REQUIRES_OK(ctx, ReadActivationAttr(ctx, &activation_));
    } else {
      OP_REQUIRES_OK(ctx, ReadRfft2dAttrs(ctx, &attrs_));
    }
  }

  void Compute(tensorflow::OpKernelContext* ctx) override {
    const char* x_name = kActivationGradient ? "dy" : "x";
    const tensorflow::Tensor& x = ctx->input(0);
    OP_REQUIRES_OK(ctx, CheckRank(x_name, x.shape(), 4));
    int64_t fft_size = 0;
    OP_REQUIRES_OK(ctx, ReadScalarInput(ctx, 1, "fft_size", &fft_size));
    const int64_t dims[4] = {x.dim_size(0), x.dim_size(1), x.dim_size(2), x.dim_size(3)};
    const tensorflow::Tensor* activation_output = nullptr;
    if constexpr (kActivationGradient) {
      activation_output = &ctx->input(2);
      OP_REQUIRES_OK(ctx, CheckRank("y", activation_output->shape(), 4));
      const int64_t y_dims[4] = {activation_output->dim_size(0), activation_output->dim_size(1),
                                 activation_output->dim_size(2), activation_output->dim_size(3)};
      OP_REQUIRES_OK(ctx, ValidateActivationOutput(dims, y_dims));
    }
    Rfft2dParams params;
    std::vector<int64_t> spectrum_dims;
    OP_REQUIRES_OK(ctx, MakeRfft2dParams(dims, fft_size, attrs_.offset_h, attrs_.offset_w,
                                         attrs_.nhwc,
                                         attrs_.round_to_tf32 && TensorFloat32Enabled(), &params,
                                         &spectrum_dims));
    if (kHalfSpectrum<Real>) spectrum_dims.push_back(2);

    OP_REQUIRES_OK(ctx, RunOnOutput<Device>(ctx, spectrum_dims, [&](const auto& stream,
                                                                    tensorflow::Tensor* spectrum) {
      auto* spectrum_data = spectrum->flat<SpectrumElement<Real>>().data();
      if constexpr (kActivationGradient) {
        ActivationGradient<Real> gradient;
        gradient.activation_output = activation_output->flat<Real>().data();
        gradient.activation = activation_;
        Rfft2dOnCpu<Real>(stream, params, x.flat<Real>().data(), spectrum_data, gradient);
        return absl::OkStatus();
      } else {
        return Device::template Rfft2d<Real>(stream, params, x.flat<Real>().data(), spectrum_data);
      }
    }));
  }

 private:
  FftAttrs attrs_;
  Activation activation_ = Activation::kLinear;
};

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_RFFT2D_H_
