// The XLA lowering of the three ops at compile time: each op's XlaOpKernel (cc/xla_lowering.cc) checks
// its static shapes with the same validation as the TensorFlow kernels and emits one typed-FFI
// custom call, whose handlers (cc/fftconv_ffi.h) run the op's own CPU or CUDA kernel.
//
// The kernels are registered for the XLA_CPU_JIT / XLA_GPU_JIT devices with TensorFlow's ordinary
// kernel registry (not REGISTER_XLA_OP, whose registrations take effect only if the library is
// loaded before TensorFlow creates its first device), so importing the package late still lets
// jit_compile=True compile the ops.
#ifndef TF_FFTCONV_CC_FFTCONV_XLA_H_
#define TF_FFTCONV_CC_FFTCONV_XLA_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "cc/fftconv_shapes.h"
#include "tensorflow/compiler/tf2xla/xla_op_kernel.h"
#include "tensorflow/compiler/tf2xla/xla_op_registry.h"
#include "xla/hlo/builder/xla_builder.h"
#include "xla/shape_util.h"

namespace fftconv {

// Attributes of a custom call: (name, value) pairs, integers (flags as 0 / 1) and floats.
using FfiAttributes = std::vector<std::pair<const char*, int64_t>>;
using FfiFloatAttributes = std::vector<std::pair<const char*, float>>;

// The static dimensions of input `index`, which must have rank `rank`. XLA's bounded dynamic
// dimensions are refused: the kernels need every size when the call is emitted.
inline absl::Status StaticInputDims(tensorflow::XlaOpKernelContext* ctx, int index,
                                    const char* name, int rank, int64_t* dims) {
  absl::StatusOr<xla::Shape> shape = ctx->InputXlaShape(index);
  if (!shape.ok()) return shape.status();
  if (shape->dimensions().size() != rank) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must have rank ", rank, ", got shape ",
                                                   xla::ShapeUtil::HumanString(*shape)));
  }
  if (shape->is_dynamic()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " has a dynamic dimension under XLA (", xla::ShapeUtil::HumanString(*shape),
        "); tf_fftconv needs static sizes"));
  }
  for (int i = 0; i < rank; ++i) dims[i] = shape->dimensions(i);
  return absl::OkStatus();
}

// The spectrum type of a real XLA type (F32 -> C64, F64 -> C128; F16 and BF16 keep their type,
// their spectra having a trailing (re, im) dimension of 2), and back.
inline bool IsHalfXlaType(xla::PrimitiveType type) { return type == xla::F16 || type == xla::BF16; }
inline xla::PrimitiveType ComplexXlaType(xla::PrimitiveType real) {
  if (IsHalfXlaType(real)) return real;
  return real == xla::F64 ? xla::C128 : xla::C64;
}
inline xla::PrimitiveType RealXlaType(xla::PrimitiveType complex) {
  if (IsHalfXlaType(complex)) return complex;
  return complex == xla::C128 ? xla::F64 : xla::F32;
}

// The static [bins, rows, cols] of a spectrum input (rank 3, or [.., 2] when half_spectrum); dims
// gets all of its dimensions (3 or 4), as the custom call's operand needs them.
inline absl::Status StaticSpectrumDims(tensorflow::XlaOpKernelContext* ctx, int index,
                                       const char* name, bool half_spectrum,
                                       std::vector<int64_t>* dims) {
  dims->assign(SpectrumRank(half_spectrum), 0);
  if (absl::Status s = StaticInputDims(ctx, index, name, SpectrumRank(half_spectrum), dims->data());
      !s.ok())
    return s;
  return half_spectrum ? ValidatePairDim(name, (*dims)[3]) : absl::OkStatus();
}

// An input of the custom call: the op input's index and its static dimensions.
struct CustomCallOperand {
  int input;
  std::vector<int64_t> dims;
};

// Emits the typed-FFI custom call `target`. Row-major layouts are pinned on the operands and the
// result, since the handlers index the buffers exactly as the TensorFlow kernels index tensors;
// the attributes travel as the FFI attribute dictionary, which XLA parses
// ({name = value : i64, ...}) and the handlers bind by name. The shapes are built by XLA's
// validating constructors: a shape XLA cannot hold is an error status, not a stopped process.
inline absl::StatusOr<xla::XlaOp> EmitCustomCall(tensorflow::XlaOpKernelContext* ctx,
                                                 const char* target,
                                                 const std::vector<CustomCallOperand>& operands,
                                                 xla::PrimitiveType result_type,
                                                 const std::vector<int64_t>& result_dims,
                                                 const FfiAttributes& attributes,
                                                 const FfiFloatAttributes& float_attributes = {}) {
  std::vector<xla::XlaOp> values;
  std::vector<xla::Shape> shapes;
  for (const CustomCallOperand& operand : operands) {
    values.push_back(ctx->Input(operand.input));
    absl::StatusOr<xla::Shape> shape = xla::ShapeUtil::MakeValidatedShapeWithDescendingLayout(
        ctx->input_xla_type(operand.input), operand.dims);
    if (!shape.ok()) return shape.status();
    shapes.push_back(*std::move(shape));
  }
  absl::StatusOr<xla::Shape> result_shape =
      xla::ShapeUtil::MakeValidatedShapeWithDescendingLayout(result_type, result_dims);
  if (!result_shape.ok()) return result_shape.status();
  std::string dictionary = "{";
  for (const auto& [name, value] : attributes) {
    absl::StrAppend(&dictionary, dictionary.size() > 1 ? ", " : "", name, " = ", value, " : i64");
  }
  for (const auto& [name, value] : float_attributes) {
    // Nine significant digits in exponent form: a float32 read back exactly.
    absl::StrAppend(&dictionary, dictionary.size() > 1 ? ", " : "", name, " = ",
                    absl::StrFormat("%.8e", value), " : f32");
  }
  dictionary += "}";
  return xla::CustomCallWithLayout(
      ctx->builder(), target, values, *result_shape, shapes, dictionary,
      /*has_side_effect=*/false, /*output_operand_aliasing=*/{}, /*literal=*/nullptr,
      xla::CustomCallSchedule::SCHEDULE_NONE, xla::CustomCallApiVersion::API_VERSION_TYPED_FFI);
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_FFTCONV_XLA_H_
