// Shapes, index math and validation shared by the three ops: their shape functions, CPU kernels
// and GPU kernels all call these, so a bad input gets the same InvalidArgument message everywhere,
// before any memory is touched.
//
// Dimensions are int64; -1 means "unknown" (only shape functions pass that) and every check that
// needs an unknown value is skipped. The scalar inputs fft_size, out_h and out_w are int64 as the
// caller gave them (int32 or int64 tensors, XLA constants, custom-call attributes) and are checked
// here before anything narrows them to the int fields of the parameters; a shape function that
// cannot see one (not a constant while tracing) passes std::nullopt, kernels always know them.
#ifndef TF_FFTCONV_CC_FFTCONV_SHAPES_H_
#define TF_FFTCONV_CC_FFTCONV_SHAPES_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "include/fftconv_params.h"

namespace fftconv {

// The GPU kernels index with int32: every tensor an op reads or writes stays below this.
constexpr int64_t kMaxElements = std::numeric_limits<int32_t>::max();

// Position of bin (ky, kx) in the frequency-major spectrum [bins, batch, channels].
inline int64_t BinIndex(int64_t fft_size, int64_t ky, int64_t kx) {
  return ky * HalfWidth(fft_size) + kx;
}

inline bool Known(int64_t d) { return d >= 0; }

// A scalar input's value, std::nullopt where a shape function cannot see it. Every int64 is a value
// a caller may give (out_h = -2^63 included), so none of them can stand for "unknown".
using ScalarValue = std::optional<int64_t>;
inline std::string ValueText(ScalarValue v) { return v ? absl::StrCat(*v) : "unknown"; }

// The largest product of an empty tensor's non-zero dimensions: TensorFlow's shapes multiply the
// dimensions in order in int64, and XLA's also by the element's bytes (16 for complex128), so past
// this an empty tensor's shape cannot be built on either side (a tensor with no zero dimension is
// held to kMaxElements anyway).
constexpr int64_t kMaxDimensionProduct = std::numeric_limits<int64_t>::max() / 16;

// Flat offset of pixel (b, c, h, w) in an NCHW or NHWC image tensor: the one place that knows both
// layouts on the CPU side.
inline int64_t ImageElementOffset(bool nhwc, int64_t channels, int64_t height, int64_t width,
                                  int64_t b, int64_t c, int64_t h, int64_t w) {
  return nhwc ? ((b * height + h) * width + w) * channels + c
              : ((b * channels + c) * height + h) * width + w;
}

// Images in NCHW or NHWC: the four dimensions by name.
struct ImageDims {
  int64_t batch = -1, channels = -1, height = -1, width = -1;
};

// The value of a string attribute `attr` named `name`, one of two choices (names[k] gives values[k]);
// InvalidArgument naming both otherwise.
template <typename T>
absl::Status ParseChoice(const char* attr, const std::string& name, const char* const (&names)[2],
                         const T (&values)[2], T* value) {
  for (int k = 0; k < 2; ++k) {
    if (name == names[k]) {
      *value = values[k];
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(attr, " must be \"", names[0], "\" or \"",
                                                 names[1], "\", got \"", name, "\""));
}

inline absl::Status ParseDataFormat(const std::string& data_format, bool* nhwc) {
  return ParseChoice("data_format", data_format, {"NCHW", "NHWC"}, {false, true}, nhwc);
}

// The activation attribute of the bias-and-activation ops, by the name Keras gives it.
inline absl::Status ParseActivation(const std::string& name, Activation* activation) {
  return ParseChoice("activation", name, {"linear", "relu"}, {Activation::kLinear, Activation::kRelu},
                     activation);
}

inline ImageDims ImageDimsFrom(const int64_t dims[4], bool nhwc) {
  ImageDims d;
  d.batch = dims[0];
  d.channels = nhwc ? dims[3] : dims[1];
  d.height = nhwc ? dims[1] : dims[2];
  d.width = nhwc ? dims[2] : dims[3];
  return d;
}

inline absl::Status ValidateFftSize(ScalarValue fft_size) {
  if (fft_size && !IsFftSize(*fft_size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fft_size must be a power of two in [", kMinFftSize, ", ", kMaxFftSize, "], 3 * 2^k in [",
        kMinFftSize3, ", ", kMaxFftSize3, "] or 5 * 2^k in [", kMinFftSize5, ", ", kMaxFftSize5,
        "] (one of " FFTCONV_FFT_SIZES_TEXT "), got ", *fft_size));
  }
  return absl::OkStatus();
}

// A run of `size` samples starting at `offset` must lie inside [0, fft_size). With fft_size unknown
// it must at least fit in the largest frame.
inline absl::Status ValidateWindow(const char* size_name, int64_t size, const char* offset_name,
                                   int64_t offset, ScalarValue fft_size) {
  if (Known(size) && size > kMaxFftSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        size_name, " = ", size, " needs an FFT frame larger than the largest fft_size (",
        kMaxFftSize, "); tiling larger images is not supported yet"));
  }
  const int64_t frame = fft_size.value_or(kMaxFftSize);
  const std::string frame_text = fft_size ? absl::StrCat("fft_size ", frame)
                                             : absl::StrCat("the largest fft_size ", frame);
  if (offset < 0 || offset >= frame) {
    return absl::InvalidArgumentError(absl::StrCat(offset_name, " = ", offset,
                                                   " lies outside the frame [0, ", frame,
                                                   ") of ", frame_text));
  }
  if (Known(size) && offset + size > frame) {
    return absl::InvalidArgumentError(absl::StrCat(
        size_name, " = ", size, " at ", offset_name, " = ", offset,
        " does not fit in the frame of ", frame_text, " (needs ", size_name, " + ", offset_name,
        " <= fft_size)"));
  }
  return absl::OkStatus();
}

// The tensor `what`, of the given dimensions, must hold at most kMaxElements elements. An empty
// tensor (a zero among its known dimensions) holds none, but the product of its other known
// dimensions must stay within kMaxDimensionProduct, or no shape could describe it; with an unknown
// dimension and no zero, nothing more can be said yet.
inline absl::Status ValidateElementCount(const char* what, std::initializer_list<int64_t> dims) {
  bool empty = false, unknown = false;
  int64_t nonzero_product = 1;
  bool product_too_large = false;
  for (int64_t d : dims) {
    empty |= d == 0;
    unknown |= !Known(d);
    if (d > 0 && !product_too_large) {
      product_too_large = nonzero_product > kMaxDimensionProduct / d;
      if (!product_too_large) nonzero_product *= d;
    }
  }
  if (empty) {
    if (!product_too_large) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(what, " (", absl::StrJoin(dims, " x "),
                     ") is empty, but the product of its other dimensions exceeds ",
                     kMaxDimensionProduct, ", past which no tensor shape can describe it"));
  }
  if (unknown) return absl::OkStatus();
  int64_t count = 1;
  for (int64_t d : dims) {
    if (count > kMaxElements / d) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " (", absl::StrJoin(dims, " x "), ") would hold more than ", kMaxElements,
          " elements (int32 indexing limit)"));
    }
    count *= d;
  }
  return absl::OkStatus();
}

// A flag of a custom call (nhwc, transpose_a, ...), written by the lowering as 0 or 1: anything
// else is refused rather than read as true.
inline absl::Status FlagFromAttribute(const char* name, int64_t value, bool* flag) {
  if (value != 0 && value != 1) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be 0 or 1, got ", value));
  }
  *flag = value == 1;
  return absl::OkStatus();
}

// Half-precision spectra carry their (re, im) pairs as a trailing dimension: [bins, rows, cols, 2].
inline int SpectrumRank(bool half_spectrum) { return half_spectrum ? 4 : 3; }

inline absl::Status ValidatePairDim(const char* what, int64_t last_dim) {
  if (Known(last_dim) && last_dim != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " is a half-precision spectrum [bins, rows, cols, 2]: its last dimension must be 2 "
              "(real, imaginary), got ", last_dim));
  }
  return absl::OkStatus();
}

// FftconvSpectralMatmul's alpha: a finite float.
inline absl::Status ValidateAlpha(float alpha) {
  if (!(alpha - alpha == 0.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("alpha must be finite, got ", alpha));
  }
  return absl::OkStatus();
}

// FftconvRfft2d: real images -> spectrum [bins, batch, channels].
inline absl::Status ValidateRfft2d(const ImageDims& image, ScalarValue fft_size, int64_t offset_h,
                                   int64_t offset_w) {
  if (absl::Status s = ValidateFftSize(fft_size); !s.ok()) return s;
  if (absl::Status s = ValidateWindow("height", image.height, "offset_h", offset_h, fft_size);
      !s.ok())
    return s;
  if (absl::Status s = ValidateWindow("width", image.width, "offset_w", offset_w, fft_size);
      !s.ok())
    return s;
  if (absl::Status s = ValidateElementCount(
          "the input x", {image.batch, image.channels, image.height, image.width});
      !s.ok())
    return s;
  return ValidateElementCount("the spectrum", {fft_size ? NumBins(*fft_size) : -1,
                                               image.batch, image.channels});
}

// FftconvIrfft2d: spectrum [bins, batch, channels] -> real window of out_h x out_w.
inline absl::Status ValidateIrfft2d(int64_t bins, int64_t batch, int64_t channels,
                                    ScalarValue fft_size, ScalarValue out_h, ScalarValue out_w,
                                    int64_t offset_h, int64_t offset_w) {
  if (absl::Status s = ValidateFftSize(fft_size); !s.ok()) return s;
  if (Known(bins) && fft_size && bins != NumBins(*fft_size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the spectrum has ", bins, " bins but fft_size ", *fft_size, " needs ", *fft_size,
        " * (", *fft_size, "/2 + 1) = ", NumBins(*fft_size)));
  }
  if ((out_h && *out_h < 0) || (out_w && *out_w < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("out_h and out_w must be >= 0, got ", ValueText(out_h), " and ",
                     ValueText(out_w)));
  }
  // From here on the window sizes are -1 where unknown, as dimensions are.
  const int64_t height = out_h.value_or(-1), width = out_w.value_or(-1);
  if (absl::Status s = ValidateWindow("out_h", height, "offset_h", offset_h, fft_size); !s.ok())
    return s;
  if (absl::Status s = ValidateWindow("out_w", width, "offset_w", offset_w, fft_size); !s.ok())
    return s;
  if (absl::Status s = ValidateElementCount("the spectrum", {bins, batch, channels}); !s.ok())
    return s;
  return ValidateElementCount("the output", {batch, channels, height, width});
}

// FftconvIrfft2dBiasActivation's bias: one value per channel of the spectrum, [channels].
inline absl::Status ValidateBias(const std::vector<int64_t>& bias_dims, int64_t channels) {
  if (bias_dims.size() != 1 ||
      (Known(bias_dims[0]) && Known(channels) && bias_dims[0] != channels)) {
    std::vector<std::string> dims;
    for (int64_t d : bias_dims) dims.push_back(Known(d) ? absl::StrCat(d) : "?");
    return absl::InvalidArgumentError(absl::StrCat(
        "bias must be [channels] = [", Known(channels) ? absl::StrCat(channels) : "?",
        "], one value per channel of the spectrum, got shape [", absl::StrJoin(dims, ", "), "]"));
  }
  return absl::OkStatus();
}

// FftconvRfft2dActivationGradient's y, the activation's output: the shape of the gradient dy it
// masks (both rank 4; -1 for an unknown dimension, which matches any).
inline absl::Status ValidateActivationOutput(const int64_t dy_dims[4], const int64_t y_dims[4]) {
  for (int i = 0; i < 4; ++i) {
    if (Known(dy_dims[i]) && Known(y_dims[i]) && dy_dims[i] != y_dims[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "y, the activation's output, must have dy's shape [", absl::StrJoin(dy_dims, dy_dims + 4, ", "),
          "], got [", absl::StrJoin(y_dims, y_dims + 4, ", "), "]"));
    }
  }
  return absl::OkStatus();
}

// FftconvSpectralMatmul: sizes after op_a / op_b.
struct MatmulDims {
  int64_t bins = -1, m = -1, k = -1, n = -1;
};

// Each operand's flags: transpose_x, conjugate_x or both (the adjoint), or adjoint_x alone.
// adjoint_x with either of the others is refused: with transpose_x it names the transpose twice,
// and with conjugate_x it is ambiguous (conjugated once, or twice?).
inline absl::Status ValidateSpectralMatmul(const int64_t a_dims[3], const int64_t b_dims[3],
                                           bool transpose_a, bool adjoint_a, bool conjugate_a,
                                           bool transpose_b, bool adjoint_b, bool conjugate_b,
                                           MatmulDims* out) {
  if (transpose_a && adjoint_a) {
    return absl::InvalidArgumentError("transpose_a and adjoint_a cannot both be true");
  }
  if (transpose_b && adjoint_b) {
    return absl::InvalidArgumentError("transpose_b and adjoint_b cannot both be true");
  }
  if (conjugate_a && adjoint_a) {
    return absl::InvalidArgumentError(
        "conjugate_a and adjoint_a cannot both be true: adjoint_a already conjugates (the "
        "adjoint is adjoint_a alone, or transpose_a with conjugate_a)");
  }
  if (conjugate_b && adjoint_b) {
    return absl::InvalidArgumentError(
        "conjugate_b and adjoint_b cannot both be true: adjoint_b already conjugates (the "
        "adjoint is adjoint_b alone, or transpose_b with conjugate_b)");
  }
  const bool swap_a = transpose_a || adjoint_a;
  const bool swap_b = transpose_b || adjoint_b;
  MatmulDims d;
  d.m = swap_a ? a_dims[2] : a_dims[1];
  const int64_t k_a = swap_a ? a_dims[1] : a_dims[2];
  const int64_t k_b = swap_b ? b_dims[2] : b_dims[1];
  d.n = swap_b ? b_dims[1] : b_dims[2];
  if (Known(a_dims[0]) && Known(b_dims[0]) && a_dims[0] != b_dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat("a has ", a_dims[0], " bins but b has ",
                                                   b_dims[0], " (dimension 0 must match)"));
  }
  d.bins = Known(a_dims[0]) ? a_dims[0] : b_dims[0];
  if (Known(k_a) && Known(k_b) && k_a != k_b) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inner dimensions do not match: op(a) is [", d.m, ", ", k_a, "] per bin but op(b) is [",
        k_b, ", ", d.n, "]"));
  }
  d.k = Known(k_a) ? k_a : k_b;
  if (absl::Status s = ValidateElementCount("a", {a_dims[0], a_dims[1], a_dims[2]}); !s.ok())
    return s;
  if (absl::Status s = ValidateElementCount("b", {b_dims[0], b_dims[1], b_dims[2]}); !s.ok())
    return s;
  if (absl::Status s = ValidateElementCount("the product", {d.bins, d.m, d.n}); !s.ok()) return s;
  if (out != nullptr) *out = d;
  return absl::OkStatus();
}

// Validated launch parameters from the sizes and attributes of one call: what the TensorFlow
// kernels, the XLA lowering and the XLA custom-call handlers all build, so all of them refuse the
// same inputs with the same message. Every size is known here. `output_dims` (may be null) gets the
// output's shape in int64: an empty tensor may have a dimension beyond int32, which the int fields
// of the parameters cannot hold, so callers size outputs from it and launch nothing when it is
// empty.

// x: [batch, channels, height, width] (NCHW) or [batch, height, width, channels] (NHWC).
// round_to_tf32: the attribute and TensorFlow's TF32 switch together (the kernels apply it only to
// float32 on sm_80+).
inline absl::Status MakeRfft2dParams(const int64_t x_dims[4], int64_t fft_size, int64_t offset_h,
                                     int64_t offset_w, bool nhwc, bool round_to_tf32,
                                     Rfft2dParams* params,
                                     std::vector<int64_t>* output_dims = nullptr) {
  const ImageDims image = ImageDimsFrom(x_dims, nhwc);
  if (absl::Status s = ValidateRfft2d(image, fft_size, offset_h, offset_w); !s.ok()) return s;
  if (output_dims != nullptr) *output_dims = {NumBins(fft_size), image.batch, image.channels};
  params->batch = static_cast<int>(image.batch);
  params->channels = static_cast<int>(image.channels);
  params->height = static_cast<int>(image.height);
  params->width = static_cast<int>(image.width);
  params->fft_size = static_cast<int>(fft_size);
  params->offset_h = static_cast<int>(offset_h);
  params->offset_w = static_cast<int>(offset_w);
  params->nhwc = nhwc;
  params->round_to_tf32 = round_to_tf32;
  return absl::OkStatus();
}

// spectrum: [bins, batch, channels].
inline absl::Status MakeIrfft2dParams(const int64_t spectrum_dims[3], int64_t fft_size,
                                      int64_t out_h, int64_t out_w, int64_t offset_h,
                                      int64_t offset_w, bool nhwc, Irfft2dParams* params,
                                      std::vector<int64_t>* output_dims = nullptr) {
  if (absl::Status s = ValidateIrfft2d(spectrum_dims[0], spectrum_dims[1], spectrum_dims[2],
                                       fft_size, out_h, out_w, offset_h, offset_w);
      !s.ok())
    return s;
  // [batch, channels, out_h, out_w] or [batch, out_h, out_w, channels].
  const int64_t batch = spectrum_dims[1], channels = spectrum_dims[2];
  if (output_dims != nullptr) {
    *output_dims = nhwc ? std::vector<int64_t>{batch, out_h, out_w, channels}
                        : std::vector<int64_t>{batch, channels, out_h, out_w};
  }
  params->batch = static_cast<int>(spectrum_dims[1]);
  params->channels = static_cast<int>(spectrum_dims[2]);
  params->fft_size = static_cast<int>(fft_size);
  params->out_h = static_cast<int>(out_h);
  params->out_w = static_cast<int>(out_w);
  params->offset_h = static_cast<int>(offset_h);
  params->offset_w = static_cast<int>(offset_w);
  params->nhwc = nhwc;
  return absl::OkStatus();
}

// a, b: [bins, rows, cols] before op_a / op_b.
inline absl::Status MakeSpectralMatmulParams(const int64_t a_dims[3], const int64_t b_dims[3],
                                             bool transpose_a, bool adjoint_a, bool conjugate_a,
                                             bool transpose_b, bool adjoint_b, bool conjugate_b,
                                             bool allow_tf32, bool tf32_operands, float alpha,
                                             SpectralMatmulParams* params,
                                             std::vector<int64_t>* output_dims = nullptr) {
  MatmulDims dims;
  if (absl::Status s = ValidateSpectralMatmul(a_dims, b_dims, transpose_a, adjoint_a, conjugate_a,
                                              transpose_b, adjoint_b, conjugate_b, &dims);
      !s.ok())
    return s;
  if (output_dims != nullptr) *output_dims = {dims.bins, dims.m, dims.n};
  params->bins = static_cast<int>(dims.bins);
  params->m = static_cast<int>(dims.m);
  params->n = static_cast<int>(dims.n);
  params->k = static_cast<int>(dims.k);
  params->transpose_a = transpose_a;
  params->adjoint_a = adjoint_a;
  params->transpose_b = transpose_b;
  params->adjoint_b = adjoint_b;
  params->conjugate_a = conjugate_a;
  params->conjugate_b = conjugate_b;
  params->allow_tf32 = allow_tf32;
  params->tf32_operands = tf32_operands;
  params->alpha = alpha;
  return ValidateAlpha(alpha);
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_FFTCONV_SHAPES_H_
