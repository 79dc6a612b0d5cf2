// Pieces every tf_fftconv OpKernel and shape function uses: rank checks, reading dimensions out of
// shapes and the size inputs, the CPU as a device (its thread pool and kernels), the end of a
// Compute (RunOnOutput), and the kernels' registration behind the library's load guard.
#ifndef TF_FFTCONV_CC_FFTCONV_KERNEL_UTIL_H_
#define TF_FFTCONV_CC_FFTCONV_KERNEL_UTIL_H_

#include <complex>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "cc/dtype_dispatch.h"
#include "cc/fftconv_attrs.h"
#include "cc/fftconv_cpu.h"
#include "cc/fftconv_ffi.h"
#include "cc/fftconv_shapes.h"
#include "include/fftconv_params.h"
#include "tensorflow/core/framework/kernel_def_builder.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/types.h"

namespace fftconv {

// TensorFlow's TF32 switch (tf.config.experimental.enable_tensor_float_32_execution): the precision
// of float32 products on the GPU, as tf.nn.conv2d's, and whether rfft2d's round_to_tf32 applies.
// The OpKernels read it when they run, the XLA lowerings when they compile, as XLA's own dot does.
bool TensorFloat32Enabled();

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

// A device the ops run on, as the OpKernels (Op<Device, Real>) and the XLA handlers
// (cc/xla_lowering.cc, cc/ops_gpu.cc) see it: the Stream its kernels are enqueued on, taken from an
// OpKernel's context or from the FFI context of a handler on its platform, and the three ops' kernels
// on it, each returning its status (buffers untyped, as XLA hands them over; layouts in
// cc/fftconv_cpu.h). The CPU: TensorFlow's or XLA's thread pool; the GPU is GpuDevice
// (cc/fftconv_gpu_util.h).
struct CpuDevice {
  using Stream = ParallelRunner;
  using FfiContext = ffi::ThreadPool;  // the handler's argument, and its binding
  using FfiContextBinding = ffi::ThreadPool;
  static constexpr const char* kFfiPlatform = "Host";

  static absl::Status StreamOf(tensorflow::OpKernelContext* ctx, Stream* stream) {
    *stream = TfParallelRunner(ctx);
    return absl::OkStatus();
  }
  static Stream StreamOf(FfiContext& pool) { return FfiParallelRunner(pool); }

  template <typename Real>
  static absl::Status Rfft2d(const Stream& parallel, const Rfft2dParams& params, const void* input,
                             void* spectrum) {
    Rfft2dOnCpu<Real>(parallel, params, static_cast<const Real*>(input),
                      static_cast<SpectrumElement<Real>*>(spectrum));
    return absl::OkStatus();
  }
  template <typename Real>
  static absl::Status Irfft2d(const Stream& parallel, const Irfft2dParams& params,
                              const void* spectrum, void* output) {
    Irfft2dOnCpu<Real>(parallel, params, static_cast<const SpectrumElement<Real>*>(spectrum),
                       static_cast<Real*>(output));
    return absl::OkStatus();
  }
  template <typename Real>
  static absl::Status SpectralMatmul(const Stream& parallel, const SpectralMatmulParams& params,
                                     const void* a, const void* b, void* c) {
    using Element = SpectrumElement<Real>;
    SpectralMatmulOnCpu<Real>(parallel, params, static_cast<const Element*>(a),
                              static_cast<const Element*>(b), static_cast<Element*>(c));
    return absl::OkStatus();
  }
};

// The end of every Compute: allocates output 0 of the int64 dimensions the checks passed (a shape
// TensorFlow cannot hold is an error status, not a stopped process) and, unless it is empty,
// returns run(stream, output) with Device's stream for this op.
template <typename Device, typename Run>
absl::Status RunOnOutput(tensorflow::OpKernelContext* ctx, const std::vector<int64_t>& dims,
                         Run&& run) {
  tensorflow::TensorShape shape;
  if (absl::Status s = tensorflow::TensorShape::BuildTensorShape(dims, &shape); !s.ok()) return s;
  tensorflow::Tensor* output = nullptr;
  if (absl::Status s = ctx->allocate_output(0, shape, &output); !s.ok()) return s;
  if (output->NumElements() == 0) return absl::OkStatus();
  typename Device::Stream stream;
  if (absl::Status s = Device::StreamOf(ctx, &stream); !s.ok()) return s;
  return run(stream, output);
}

// How an op's kernels are registered: its name, the attribute whose type picks the kernel and whether
// that is the images' type or the spectra's, and the size inputs a GPU kernel reads on the host
// (null past the last).
struct OpKernelTypes {
  const char* op;
  const char* type_attr;
  BufferContents typed_by;
  const char* host_inputs[3];
};

// REGISTER_KERNEL_BUILDER(builder, Kernel) for the first copy of the library in a process only
// (FirstCopyInProcess, cc/fftconv_ffi.h): a later copy's kernels would make every call ambiguous.
template <typename Kernel>
void RegisterKernel(::tensorflow::KernelDefBuilder& builder, const char* kernel_name) {
  if (!FirstCopyInProcess()) return;
  new ::tensorflow::kernel_factory::OpKernelRegistrar(
      builder.Build(), kernel_name,
      [](::tensorflow::OpKernelConstruction* context) -> ::tensorflow::OpKernel* {
        return new Kernel(context);
      });
}

// Registers Kernel as the OpKernel of `types.op` for real type Real on `device` (DEVICE_CPU or
// DEVICE_GPU). On the CPU every tensor is in host memory already.
template <typename Kernel, typename Real>
void RegisterOpKernel(const OpKernelTypes& types, const char* device) {
  ::tensorflow::register_kernel::Name builder(types.op);
  builder.Device(device);
  if (types.typed_by == BufferContents::kSpectra) {
    builder.TypeConstraint<SpectrumElement<Real>>(types.type_attr);
  } else {
    builder.TypeConstraint<Real>(types.type_attr);
  }
  if (std::string(device) != tensorflow::DEVICE_CPU) {
    for (const char* input : types.host_inputs) {
      if (input != nullptr) builder.HostMemory(input);
    }
  }
  RegisterKernel<Kernel>(builder, types.op);
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_FFTCONV_KERNEL_UTIL_H_
