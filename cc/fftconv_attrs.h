// The attributes of each op, read in one place: by its shape function (InferenceContext), by its
// OpKernel constructor and by anything else that builds the op from a node (OpKernelConstruction,
// e.g. an XLA kernel). Ctx is any of them: all it needs is `absl::Status GetAttr(name, T*)`.
// The data format and the dtype pair are checked here, the rest with the shapes (cc/fftconv_shapes.h).
#ifndef TF_FFTCONV_CC_FFTCONV_ATTRS_H_
#define TF_FFTCONV_CC_FFTCONV_ATTRS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cc/fftconv_shapes.h"
#include "tensorflow/core/framework/types.h"

namespace fftconv {

// The half-precision types: their spectra are real tensors of the same type with a trailing
// (re, im) dimension of 2, stored mean-normalised (include/fftconv_params.h); arithmetic is float32.
inline bool IsHalfType(tensorflow::DataType type) {
  return type == tensorflow::DT_HALF || type == tensorflow::DT_BFLOAT16;
}

// The spectrum type that goes with a real type: complex64 with float32, complex128 with float64,
// and the same type for float16 and bfloat16.
inline tensorflow::DataType SpectrumTypeOf(tensorflow::DataType real) {
  switch (real) {
    case tensorflow::DT_DOUBLE:
      return tensorflow::DT_COMPLEX128;
    case tensorflow::DT_HALF:
    case tensorflow::DT_BFLOAT16:
      return real;
    default:
      return tensorflow::DT_COMPLEX64;
  }
}

// The FFT ops carry both type attributes (T real, Tcomplex the spectrum's type); they must be
// partners.
inline absl::Status CheckDtypePair(tensorflow::DataType real, tensorflow::DataType spectrum) {
  const bool known_real = real == tensorflow::DT_FLOAT || real == tensorflow::DT_DOUBLE ||
                          IsHalfType(real);
  if (!known_real || SpectrumTypeOf(real) != spectrum) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dtype mismatch: T = ", tensorflow::DataTypeString(real),
        " goes with Tcomplex = ", tensorflow::DataTypeString(SpectrumTypeOf(real)), ", got ",
        tensorflow::DataTypeString(spectrum),
        " (float32 <-> complex64, float64 <-> complex128, float16 <-> float16 and bfloat16 <-> "
        "bfloat16 with a trailing (re, im) dimension of 2)"));
  }
  return absl::OkStatus();
}

// FftconvRfft2d and FftconvIrfft2d have the same attributes: the offsets of the image (or window) in
// the frame, the image layout and the dtype pair.
struct FftAttrs {
  int64_t offset_h = 0, offset_w = 0;
  bool nhwc = false;
  tensorflow::DataType real_type = tensorflow::DT_FLOAT;
  tensorflow::DataType complex_type = tensorflow::DT_COMPLEX64;
  // float16 / bfloat16: the spectrum is [bins, batch, channels, 2] of that type.
  bool half_spectrum = false;
  // FftconvRfft2d only (ReadRfft2dAttrs): float32 spectra stored rounded to TF32 for TF32 products
  // (include/fftconv_params.h, Rfft2dParams), where TensorFlow's TF32 switch is on.
  bool round_to_tf32 = false;
};

template <class Ctx>
absl::Status ReadFftAttrs(Ctx* ctx, FftAttrs* attrs) {
  std::string data_format;
  if (absl::Status s = ctx->GetAttr("offset_h", &attrs->offset_h); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("offset_w", &attrs->offset_w); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("data_format", &data_format); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("T", &attrs->real_type); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("Tcomplex", &attrs->complex_type); !s.ok()) return s;
  if (absl::Status s = ParseDataFormat(data_format, &attrs->nhwc); !s.ok()) return s;
  attrs->half_spectrum = IsHalfType(attrs->real_type);
  return CheckDtypePair(attrs->real_type, attrs->complex_type);
}

// FftconvRfft2d's attributes: FftconvIrfft2d's and round_to_tf32.
template <class Ctx>
absl::Status ReadRfft2dAttrs(Ctx* ctx, FftAttrs* attrs) {
  if (absl::Status s = ctx->GetAttr("round_to_tf32", &attrs->round_to_tf32); !s.ok()) return s;
  return ReadFftAttrs(ctx, attrs);
}

// The activation attribute of FftconvRfft2dActivationGradient and FftconvIrfft2dBiasActivation.
template <class Ctx>
absl::Status ReadActivationAttr(Ctx* ctx, Activation* activation) {
  std::string name;
  if (absl::Status s = ctx->GetAttr("activation", &name); !s.ok()) return s;
  return ParseActivation(name, activation);
}

// FftconvSpectralMatmul(a, b): how each operand enters the product (ValidateSpectralMatmul checks
// that adjoint_x comes without transpose_x and conjugate_x), the scale alpha of the product, and
// whether the operands are half-precision spectra [bins, rows, cols, 2].
struct SpectralMatmulAttrs {
  bool transpose_a = false, transpose_b = false, adjoint_a = false, adjoint_b = false;
  bool conjugate_a = false, conjugate_b = false;
  float alpha = 1.0f;
  // false: FP32 products even where TensorFlow's TF32 switch is on (fft_conv2d's float32 spectra
  // of half-precision inputs, whose accuracy TF32's 10-bit operands would undo).
  bool allow_tf32 = true;
  // a and b hold TF32 values already (rfft2d's round_to_tf32): the TF32 kernels take their bits
  // unconverted (include/fftconv_params.h, SpectralMatmulParams).
  bool tf32_operands = false;
  bool half_spectrum = false;
};

template <class Ctx>
absl::Status ReadSpectralMatmulAttrs(Ctx* ctx, SpectralMatmulAttrs* attrs) {
  if (absl::Status s = ctx->GetAttr("transpose_a", &attrs->transpose_a); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("transpose_b", &attrs->transpose_b); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("adjoint_a", &attrs->adjoint_a); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("adjoint_b", &attrs->adjoint_b); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("conjugate_a", &attrs->conjugate_a); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("conjugate_b", &attrs->conjugate_b); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("alpha", &attrs->alpha); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("allow_tf32", &attrs->allow_tf32); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("tf32_operands", &attrs->tf32_operands); !s.ok()) return s;
  tensorflow::DataType type;
  if (absl::Status s = ctx->GetAttr("T", &type); !s.ok()) return s;
  attrs->half_spectrum = IsHalfType(type);
  return ValidateAlpha(attrs->alpha);
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_FFTCONV_ATTRS_H_
