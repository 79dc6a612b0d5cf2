// FftconvIrfft2d(spectrum, fft_size, out_h, out_w): inverse real 2-D FFT, scaled by 1/S^2, keeping
// only a window of the frame.
//   spectrum : [bins, batch, channels] complex, bins = S * (S/2 + 1)
//   fft_size, out_h, out_w : int32 scalars (host memory)
//   y        : NCHW [batch, channels, out_h, out_w] or NHWC [batch, out_h, out_w, channels], real;
//              y[.., i, j] = frame[offset_h + i, offset_w + j]
#ifndef TF_FFTCONV_CC_IRFFT2D_H_
#define TF_FFTCONV_CC_IRFFT2D_H_

#include <complex>

#include "cc/fftconv_kernel_util.h"

namespace fftconv {

template <typename Device, typename Real>
struct Irfft2dFunctor {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const Irfft2dParams& params,
                          const std::complex<Real>* spectrum, Real* output);
};

template <typename Device, typename Real>
class Irfft2dOp : public tensorflow::OpKernel {
 public:
  explicit Irfft2dOp(tensorflow::OpKernelConstruction* ctx) : tensorflow::OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadFftAttrs(ctx, &attrs_));
  }

  void Compute(tensorflow::OpKernelContext* ctx) override {
    const tensorflow::Tensor& spectrum = ctx->input(0);
    OP_REQUIRES_OK(ctx, CheckRank("spectrum", spectrum.shape(), 3));
    int64_t fft_size = 0, out_h = 0, out_w = 0;
    OP_REQUIRES_OK(ctx, ReadScalarInput(ctx, 1, "fft_size", &fft_size));
    OP_REQUIRES_OK(ctx, ReadScalarInput(ctx, 2, "out_h", &out_h));
    OP_REQUIRES_OK(ctx, ReadScalarInput(ctx, 3, "out_w", &out_w));
    const int64_t batch = spectrum.dim_size(1), channels = spectrum.dim_size(2);
    OP_REQUIRES_OK(ctx, ValidateIrfft2d(spectrum.dim_size(0), batch, channels, fft_size, out_h,
                                        out_w, attrs_.offset_h, attrs_.offset_w));

    tensorflow::Tensor* output = nullptr;
    const tensorflow::TensorShape shape =
        attrs_.nhwc ? tensorflow::TensorShape({batch, out_h, out_w, channels})
                    : tensorflow::TensorShape({batch, channels, out_h, out_w});
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &output));
    if (output->NumElements() == 0) return;

    Irfft2dParams params;
    params.batch = static_cast<int>(batch);
    params.channels = static_cast<int>(channels);
    params.fft_size = static_cast<int>(fft_size);
    params.out_h = static_cast<int>(out_h);
    params.out_w = static_cast<int>(out_w);
    params.offset_h = static_cast<int>(attrs_.offset_h);
    params.offset_w = static_cast<int>(attrs_.offset_w);
    params.nhwc = attrs_.nhwc;
    OP_REQUIRES_OK(ctx, Irfft2dFunctor<Device, Real>()(
                            ctx, params, spectrum.flat<std::complex<Real>>().data(),
                            output->flat<Real>().data()));
  }

 private:
  FftAttrs attrs_;
};

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_IRFFT2D_H_
