// FftconvSpectralMatmul: registration, shape function and CPU kernel (Eigen, one bin per task).
#include "cc/spectral_matmul.h"
#include "tensorflow/core/framework/op.h"
#include "tsl/platform/tensor_float_32_utils.h"
#include "Eigen/Core"

namespace fftconv {

using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

bool TensorFloat32Enabled() { return tsl::tensor_float_32_execution_enabled(); }

REGISTER_OP("FftconvSpectralMatmul")
    .Input("a: T")
    .Input("b: T")
    .Output("product: T")
    .Attr("T: {complex64, complex128}")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr("adjoint_a: bool = false")
    .Attr("adjoint_b: bool = false")
    .SetShapeFn([](InferenceContext* c) -> absl::Status {
      ShapeHandle a, b;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(0), 3, &a));
      TF_RETURN_IF_ERROR(c->WithRank(c->input(1), 3, &b));
      SpectralMatmulAttrs attrs;
      TF_RETURN_IF_ERROR(ReadSpectralMatmulAttrs(c, &attrs));
      int64_t a_dims[3] = {-1, -1, -1}, b_dims[3] = {-1, -1, -1};
      KnownDims(c, a, 3, a_dims);
      KnownDims(c, b, 3, b_dims);
      MatmulDims dims;
      TF_RETURN_IF_ERROR(ValidateSpectralMatmul(a_dims, b_dims, attrs.transpose_a,
                                                attrs.adjoint_a, attrs.transpose_b,
                                                attrs.adjoint_b, &dims));
      c->set_output(0, c->MakeShape({DimOrUnknown(c, dims.bins), DimOrUnknown(c, dims.m),
                                     DimOrUnknown(c, dims.n)}));
      return absl::OkStatus();
    })
    .Doc(R"doc(
One complex matrix product per frequency bin: product[f] = op(a[f]) * op(b[f]), where op is the
identity, the transpose or the conjugate transpose (adjoint) as the flags say.
)doc");

// c = op_a(a) * op_b(b) for one bin's matrices (Eigen maps over the row-major buffers).
template <typename A, typename B, typename C>
static void MultiplyBin(const SpectralMatmulParams& p, const A& a, const B& b, C& c) {
  auto times_op_b = [&](const auto& op_a) {
    if (p.adjoint_b) {
      c.noalias() = op_a * b.adjoint();
    } else if (p.transpose_b) {
      c.noalias() = op_a * b.transpose();
    } else {
      c.noalias() = op_a * b;
    }
  };
  if (p.adjoint_a) {
    times_op_b(a.adjoint());
  } else if (p.transpose_a) {
    times_op_b(a.transpose());
  } else {
    times_op_b(a);
  }
}

// One task per group of bins; each bin is one Eigen product.
template <typename Real>
void SpectralMatmulOnCpu(const ParallelRunner& parallel, const SpectralMatmulParams& p,
                         const std::complex<Real>* a, const std::complex<Real>* b,
                         std::complex<Real>* c) {
  using Matrix =
      Eigen::Matrix<std::complex<Real>, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const bool swap_a = p.transpose_a || p.adjoint_a, swap_b = p.transpose_b || p.adjoint_b;
  const int a_rows = swap_a ? p.k : p.m, a_cols = swap_a ? p.m : p.k;
  const int b_rows = swap_b ? p.n : p.k, b_cols = swap_b ? p.k : p.n;
  const int64_t a_size = int64_t{a_rows} * a_cols, b_size = int64_t{b_rows} * b_cols;
  const int64_t c_size = int64_t{p.m} * p.n;
  auto work = [&](int64_t begin, int64_t end) {
    for (int64_t bin = begin; bin < end; ++bin) {
      Eigen::Map<const Matrix> a_bin(a + bin * a_size, a_rows, a_cols);
      Eigen::Map<const Matrix> b_bin(b + bin * b_size, b_rows, b_cols);
      Eigen::Map<Matrix> c_bin(c + bin * c_size, p.m, p.n);
      MultiplyBin(p, a_bin, b_bin, c_bin);
    }
  };
  parallel(p.bins, int64_t{8} * p.m * p.n * (p.k + 1), work);
}

template void SpectralMatmulOnCpu<float>(const ParallelRunner&, const SpectralMatmulParams&,
                                         const std::complex<float>*, const std::complex<float>*,
                                         std::complex<float>*);
template void SpectralMatmulOnCpu<double>(const ParallelRunner&, const SpectralMatmulParams&,
                                          const std::complex<double>*,
                                          const std::complex<double>*, std::complex<double>*);

template <typename Real>
struct SpectralMatmulFunctor<CpuDevice, Real> {
  absl::Status operator()(tensorflow::OpKernelContext* ctx, const SpectralMatmulParams& params,
                          const std::complex<Real>* a, const std::complex<Real>* b,
                          std::complex<Real>* c) {
    SpectralMatmulOnCpu<Real>(TfParallelRunner(ctx), params, a, b, c);
    return absl::OkStatus();
  }
};

#define REGISTER_CPU(Real)                                                     \
  FFTCONV_REGISTER_KERNEL(Name("FftconvSpectralMatmul")                        \
                              .Device(tensorflow::DEVICE_CPU)                  \
                              .TypeConstraint<std::complex<Real>>("T"),        \
                          SpectralMatmulOp<CpuDevice, Real>);
REGISTER_CPU(float)
REGISTER_CPU(double)
#undef REGISTER_CPU

}  // namespace fftconv
