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

// A real op input or output goes with the complex type of the same precision.
inline tensorflow::DataType ComplexTypeOf(tensorflow::DataType real) {
  return real == tensorflow::DT_DOUBLE ? tensorflow::DT_COMPLEX128 : tensorflow::DT_COMPLEX64;
}

// The FFT ops carry both type attributes (T real, Tcomplex complex); they must be partners.
inline absl::Status CheckDtypePair(tensorflow::DataType real, tensorflow::DataType complex) {
  if (ComplexTypeOf(real) != complex ||
      (real != tensorflow::DT_FLOAT && real != tensorflow::DT_DOUBLE)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dtype mismatch: T = ", tensorflow::DataTypeString(real),
        " goes with Tcomplex = ", tensorflow::DataTypeString(ComplexTypeOf(real)), ", got ",
        tensorflow::DataTypeString(complex), " (float32 <-> complex64, float64 <-> complex128)"));
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
  return CheckDtypePair(attrs->real_type, attrs->complex_type);
}

// FftconvSpectralMatmul(a, b): how each operand enters the product (ValidateSpectralMatmul checks
// that an operand is not both transposed and adjoint).
struct SpectralMatmulAttrs {
  bool transpose_a = false, transpose_b = false, adjoint_a = false, adjoint_b = false;
};

template <class Ctx>
absl::Status ReadSpectralMatmulAttrs(Ctx* ctx, SpectralMatmulAttrs* attrs) {
  if (absl::Status s = ctx->GetAttr("transpose_a", &attrs->transpose_a); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("transpose_b", &attrs->transpose_b); !s.ok()) return s;
  if (absl::Status s = ctx->GetAttr("adjoint_a", &attrs->adjoint_a); !s.ok()) return s;
  return ctx->GetAttr("adjoint_b", &attrs->adjoint_b);
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_FFTCONV_ATTRS_H_
