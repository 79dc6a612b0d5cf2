// Pieces every tf_fftconv OpKernel and shape function uses: device tags for the functors, rank
// checks, reading dimensions out of shapes, and the CPU thread pool.
#ifndef TF_FFTCONV_CC_FFTCONV_KERNEL_UTIL_H_
#define TF_FFTCONV_CC_FFTCONV_KERNEL_UTIL_H_

#include <complex>
#include <functional>
#include <type_traits>
#include <vector>

#include "cc/fftconv_attrs.h"
#include "cc/fftconv_cpu.h"
#include "cc/fftconv_ffi.h"
#include "include/fftconv_params.h"
#include "cc/fftconv_shapes.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/types.h"

namespace fftconv {

// TensorFlow's TF32 switch (tf.config.experimental.enable_tensor_float_32_execution): the precision
// of float32 products on the GPU, as tf.nn.conv2d's, and whether rfft2d's round_to_tf32 applies.
// The OpKernels read it when they run, the XLA lowerings when they compile, as XLA's own dot does.
bool TensorFloat32Enabled();

// Functors are specialised on these tags (CPU in cc/ops.cc, GPU in cc/ops_gpu.cc).
struct CpuDevice {};
struct GpuDevice {};

// Whether the ops' real type `Real` has a half-precision spectrum ([.., 2] of Real, not complex).
template <typename Real>
constexpr bool kHalfSpectrum =
    std::is_same<Real, Eigen::half>::value || std::is_same<Real, Eigen::bfloat16>::value;

// [bins, rows, cols] of a spectrum tensor: rank 3 complex, or rank 4 with a trailing (re, im)
// dimension of 2 for a half-precision one.
inline absl::Status SpectrumDims(const char* what, const tensorflow::TensorShape& shape,
                                 bool half_spectrum, int64_t dims[3]) {
  const int rank = SpectrumRank(half_spectrum);
  if (shape.dims() != rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must have rank ", rank, ", got shape ", shape.DebugString(),
        half_spectrum ? " (a half-precision spectrum is [bins, rows, cols, 2])" : ""));
  }
  if (half_spectrum) {
    if (absl::Status s = ValidatePairDim(what, shape.dim_size(3)); !s.ok()) return s;
  }
  for (int i = 0; i < 3; ++i) dims[i] = shape.dim_size(i);
  return absl::OkStatus();
}

// The same in a shape function: -1 for unknown dimensions.
inline absl::Status SpectrumDims(tensorflow::shape_inference::InferenceContext* c, int input,
                                 const char* what, bool half_spectrum, int64_t dims[3]) {
  const int rank = SpectrumRank(half_spectrum);
  tensorflow::shape_inference::ShapeHandle shape;
  if (!c->WithRank(c->input(input), rank, &shape).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must have rank ", rank, ", got shape ", c->DebugString(c->input(input)),
        half_spectrum ? " (a half-precision spectrum is [bins, rows, cols, 2])" : ""));
  }
  for (int i = 0; i < 3; ++i) dims[i] = -1;
  if (!c->RankKnown(shape)) return absl::OkStatus();
  for (int i = 0; i < 3; ++i) dims[i] = c->Value(c->Dim(shape, i));
  if (half_spectrum) return ValidatePairDim(what, c->Value(c->Dim(shape, 3)));
  return absl::OkStatus();
}

inline absl::Status CheckRank(const char* what, const tensorflow::TensorShape& shape, int rank) {
  if (shape.dims() != rank) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must have rank ", rank, ", got shape ",
                                                   shape.DebugString()));
  }
  return absl::OkStatus();
}

// The value of a scalar size input (fft_size, out_h, out_w): int32 or int64 (the op's Tfft_size,
// Tout_h, Tout_w), read as the int64 the caller gave, so that the checks see it before any
// narrowing. `input` is a tensor in host memory.
inline absl::Status ScalarInputValue(const tensorflow::Tensor& input, const char* name,
                                     int64_t* value) {
  if (!tensorflow::TensorShapeUtils::IsScalar(input.shape())) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a scalar, got shape ",
                                                   input.shape().DebugString()));
  }
  switch (input.dtype()) {
    case tensorflow::DT_INT32:
      *value = input.scalar<int32_t>()();
      return absl::OkStatus();
    case tensorflow::DT_INT64:
      *value = input.scalar<int64_t>()();
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          name, " must be int32 or int64, got ", tensorflow::DataTypeString(input.dtype())));
  }
}

// The size inputs of the FFT ops, read on the host by the kernels.
inline absl::Status ReadScalarInput(tensorflow::OpKernelContext* ctx, int index, const char* name,
                                    int64_t* value) {
  return ScalarInputValue(ctx->input(index), name, value);
}

// The same input in a shape function: its value when it is a constant while tracing, else
// std::nullopt.
inline absl::Status ReadScalarInput(tensorflow::shape_inference::InferenceContext* c, int index,
                                    const char* name, ScalarValue* value) {
  tensorflow::shape_inference::ShapeHandle scalar;
  if (!c->WithRank(c->input(index), 0, &scalar).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a scalar, got shape ",
                                                   c->DebugString(c->input(index))));
  }
  const tensorflow::Tensor* input = c->input_tensor(index);
  value->reset();
  if (input == nullptr) return absl::OkStatus();
  int64_t known = 0;
  if (absl::Status s = ScalarInputValue(*input, name, &known); !s.ok()) return s;
  *value = known;
  return absl::OkStatus();
}

// An output's shape from the int64 dimensions the checks above passed, by the constructor that
// returns a status instead of stopping the process.
inline absl::Status OutputShape(const std::vector<int64_t>& dims,
                                tensorflow::TensorShape* shape) {
  return tensorflow::TensorShape::BuildTensorShape(dims, shape);
}

// Dimensions of a shape-function input as int64 with -1 for unknown; false if the rank is unknown.
inline bool KnownDims(tensorflow::shape_inference::InferenceContext* c,
                      tensorflow::shape_inference::ShapeHandle shape, int rank, int64_t* dims) {
  if (!c->RankKnown(shape)) return false;
  for (int i = 0; i < rank; ++i) dims[i] = c->Value(c->Dim(shape, i));
  return true;
}

inline tensorflow::shape_inference::DimensionHandle DimOrUnknown(
    tensorflow::shape_inference::InferenceContext* c, int64_t value) {
  return Known(value) ? c->MakeDim(value) : c->UnknownDim();
}

// The CPU kernels' ParallelRunner inside an OpKernel: TensorFlow's CPU thread pool.
inline ParallelRunner TfParallelRunner(tensorflow::OpKernelContext* ctx) {
  auto* pool = ctx->device()->tensorflow_cpu_worker_threads()->workers;
  return [pool](int64_t units, int64_t cost_per_unit,
                const std::function<void(int64_t, int64_t)>& work) {
    pool->ParallelFor(units, cost_per_unit, work);
  };
}

// REGISTER_KERNEL_BUILDER for the first copy of the library in a process only
// (FirstCopyInProcess, cc/fftconv_ffi.h): a later copy's kernels would make every call ambiguous.
#define FFTCONV_REGISTER_KERNEL(kernel_builder, ...) \
  FFTCONV_REGISTER_KERNEL_UNIQ(__COUNTER__, kernel_builder, __VA_ARGS__)
#define FFTCONV_REGISTER_KERNEL_UNIQ(n, kernel_builder, ...) \
  FFTCONV_REGISTER_KERNEL_UNIQ_(n, kernel_builder, __VA_ARGS__)
#define FFTCONV_REGISTER_KERNEL_UNIQ_(n, kernel_builder, ...)                                  \
  [[maybe_unused]] static const ::tensorflow::kernel_factory::OpKernelRegistrar*                \
      fftconv_kernel_registrar_##n =                                                            \
          ::fftconv::FirstCopyInProcess()                                                       \
              ? new ::tensorflow::kernel_factory::OpKernelRegistrar(                            \
                    ::tensorflow::register_kernel::kernel_builder.Build(), #__VA_ARGS__,        \
                    [](::tensorflow::OpKernelConstruction* context) -> ::tensorflow::OpKernel* { \
                      return new __VA_ARGS__(context);                                          \
                    })                                                                          \
              : nullptr

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_FFTCONV_KERNEL_UTIL_H_
