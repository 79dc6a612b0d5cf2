// Standalone check and benchmark of the tf_fftconv CUDA launchers (no TensorFlow).
//
// Every case draws fresh random inputs (seed printed; --seed N repeats a run), poisons the output with
// NaN and a canary tail, runs one launcher and compares with a float64 CPU reference by
// ||out - ref|| / ||ref||, against the tolerance printed with it (for the inverse FFTs widened where
// a draw's few kept outputs cancelled: IrfftCancellation). Prints PASS / FAIL per case and a summary;
// exit status 1 on any failure.
//
//   build : make kernel-check            (DEV_ARCH=90 by default; the Makefile has the nvcc flags)
//   run   : build/kernel_check           full correctness suite
//           build/kernel_check --quick   reduced suite (for compute-sanitizer)
//           build/kernel_check --time    timings of the layer shapes (cudaEvent, median of 30; each
//                                        transform also back to back, without the launch latency)
//           build/kernel_check --time-fft   FFT timings only;  --profile   one launch of each main kernel;
//           --profile-fft   one launch of each of Mathieu's training transforms
//           --time-chain    Mathieu's forward and train step as launch sequences, dependent
//                           launches (sm_90+) off and on
//           build/kernel_check --half   the float16 / bfloat16 launchers only (also part of the full suite)
//           --family fft|matmul|half   one family of the suite (FFTs with the fast divmod, matmuls,
//           half precision), for sanitizer runs that must each finish within a limit
// The fft and matmul families end with the TF32 cases (sm_80+, "tf32-rounded" and "tf32-operands"
// in the case names): rfft2d's round_to_tf32 and the matmul's tf32_operands, checked bit for bit.
// Half precision: inputs are exactly representable (k / 256, |k| < 256), references are computed in
// float64 from them (spectra mean-normalised: divided by S^2), and the tolerance is the type's unit
// roundoff (one rounding of each stored value): 2^-11 for float16, 2^-8 for bfloat16.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../device_info.h"
#include "../hardware.cuh"
#include "../fftconv_cuda.h"

using fftconv::Irfft2dParams;
using fftconv::Rfft2dParams;
using fftconv::SpectralMatmulParams;
using cd = std::complex<double>;

namespace {

#define CUDA_OK(expr)                                                                                  \
  do {                                                                                                 \
    cudaError_t e_ = (expr);                                                                           \
    if (e_ != cudaSuccess) {                                                                           \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, \
                   #expr);                                                                             \
      std::exit(2);                                                                                    \
    }                                                                                                  \
  } while (0)

std::mt19937_64 g_rng;
int g_pass = 0, g_fail = 0;
bool g_verbose = true;

double Uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(g_rng); }
int RandInt(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g_rng); }

void Report(bool ok, const std::string& name, double err, double tol) {
  if (ok) {
    ++g_pass;
  } else {
    ++g_fail;
  }
  if (g_verbose || !ok) std::printf("%s  %-96s rel_err=%.3e tol=%.1e\n", ok ? "PASS" : "FAIL", name.c_str(), err, tol);
}

// Waits for the work launched; false, with the launch's error or else the work's reported under
// `name`, where either is not clean.
bool Completed(int launch_error, const std::string& name) {
  const cudaError_t sync = cudaDeviceSynchronize();
  if (launch_error == 0 && sync == cudaSuccess) return true;
  Report(false, name + " launch: " + fftconv::cuda::FftconvCudaErrorString(launch_error ? launch_error : sync), 0,
         0);
  return false;
}

// Device buffer with a canary tail that must survive every launch.
template <typename T>
struct DeviceBuffer {
  static constexpr size_t kCanary = 64;
  T* ptr = nullptr;
  size_t count = 0;
  explicit DeviceBuffer(size_t n) : count(n) { CUDA_OK(cudaMalloc(&ptr, (n + kCanary) * sizeof(T) + 16)); }
  ~DeviceBuffer() { cudaFree(ptr); }
  void Upload(const std::vector<T>& h) {
    CUDA_OK(cudaMemcpy(ptr, h.data(), count * sizeof(T), cudaMemcpyHostToDevice));
  }
  void Poison() { Fill(0xFF); }  // all-ones = NaN for float and double
  // Every byte of the buffer set to `byte` (0: zeros), and the canary written.
  void Fill(int byte) {
    CUDA_OK(cudaMemset(ptr, byte, count * sizeof(T)));
    std::vector<T> canary(kCanary, T(12345.0));
    CUDA_OK(cudaMemcpy(ptr + count, canary.data(), kCanary * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> Download(bool* canary_ok) const {
    std::vector<T> h(count + kCanary);
    CUDA_OK(cudaMemcpy(h.data(), ptr, (count + kCanary) * sizeof(T), cudaMemcpyDeviceToHost));
    *canary_ok = true;
    for (size_t i = 0; i < kCanary; ++i) *canary_ok &= h[count + i] == T(12345.0);
    h.resize(count);
    return h;
  }
};

double RelErr(const std::vector<double>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = out[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  if (ref.empty()) return 0;
  if (den == 0) return std::sqrt(num);
  return std::sqrt(num / den);
}

// ---------------------------------------------------------------------------------------------
// float64 references.
struct Twiddles {
  std::vector<cd> w;  // w[k] = exp(-2 pi i k / S)
  explicit Twiddles(int s) : w(s) {
    for (int k = 0; k < s; ++k) w[k] = std::polar(1.0, -2.0 * M_PI * k / s);
  }
};

size_t ImageOffset(int b, int c, int h, int w, int C, int H, int W, bool nhwc) {
  return nhwc ? ((static_cast<size_t>(b) * H + h) * W + w) * C + c : ((static_cast<size_t>(b) * C + c) * H + h) * W + w;
}

// spectrum[(ky * (S/2+1) + kx) * N + n], interleaved re/im.
std::vector<double> Rfft2dReference(const std::vector<double>& x, const Rfft2dParams& p) {
  const int S = p.fft_size, half = S / 2 + 1, N = p.batch * p.channels;
  Twiddles tw(S);
  std::vector<double> out(static_cast<size_t>(S) * half * N * 2, 0.0);
  std::vector<cd> rows(static_cast<size_t>(S) * half);
  for (int b = 0; b < p.batch; ++b) {
    for (int c = 0; c < p.channels; ++c) {
      const int n = b * p.channels + c;
      std::fill(rows.begin(), rows.end(), cd(0));
      for (int h = 0; h < p.height; ++h) {
        for (int kx = 0; kx < half; ++kx) {
          cd acc = 0;
          for (int w = 0; w < p.width; ++w) {
            acc += x[ImageOffset(b, c, h, w, p.channels, p.height, p.width, p.nhwc)] *
                   tw.w[(static_cast<long>(kx) * (p.offset_w + w)) % S];
          }
          rows[static_cast<size_t>(p.offset_h + h) * half + kx] = acc;
        }
      }
      for (int ky = 0; ky < S; ++ky) {
        for (int kx = 0; kx < half; ++kx) {
          cd acc = 0;
          for (int h = 0; h < S; ++h) acc += rows[static_cast<size_t>(h) * half + kx] * tw.w[(ky * h) % S];
          const size_t o = (static_cast<size_t>(ky * half + kx) * N + n) * 2;
          out[o] = acc.real();
          out[o + 1] = acc.imag();
        }
      }
    }
  }
  return out;
}

// numpy.fft.irfft2(X)[oh:oh+out_h, ow:ow+out_w]: ifft along ky, then irfft along kx (imaginary parts of
// the kx = 0 and kx = S/2 values dropped).
std::vector<double> Irfft2dReference(const std::vector<double>& spec, const Irfft2dParams& p) {
  const int S = p.fft_size, half = S / 2 + 1, N = p.batch * p.channels;
  Twiddles tw(S);
  std::vector<double> out(static_cast<size_t>(N) * p.out_h * p.out_w, 0.0);
  std::vector<cd> y(half);
  for (int b = 0; b < p.batch; ++b) {
    for (int c = 0; c < p.channels; ++c) {
      const int n = b * p.channels + c;
      for (int hh = 0; hh < p.out_h; ++hh) {
        const int h = p.offset_h + hh;
        for (int kx = 0; kx < half; ++kx) {
          cd acc = 0;
          for (int ky = 0; ky < S; ++ky) {
            const size_t o = (static_cast<size_t>(ky * half + kx) * N + n) * 2;
            acc += cd(spec[o], spec[o + 1]) * std::conj(tw.w[(ky * h) % S]);
          }
          y[kx] = acc / static_cast<double>(S);
        }
        for (int ww = 0; ww < p.out_w; ++ww) {
          const int w = p.offset_w + ww;
          double v = y[0].real() + y[S / 2].real() * ((w & 1) ? -1.0 : 1.0);
          for (int kx = 1; kx < S / 2; ++kx) v += 2.0 * (y[kx] * std::conj(tw.w[(kx * w) % S])).real();
          out[ImageOffset(b, c, hh, ww, p.channels, p.out_h, p.out_w, p.nhwc)] = v / S;
        }
      }
    }
  }
  return out;
}

std::vector<double> MatmulReference(const std::vector<double>& a, const std::vector<double>& b,
                                    const SpectralMatmulParams& p) {
  const bool at = p.transpose_a || p.adjoint_a, bt = p.transpose_b || p.adjoint_b;
  std::vector<double> c(static_cast<size_t>(p.bins) * p.m * p.n * 2, 0.0);
  for (int f = 0; f < p.bins; ++f) {
    const size_t ao = static_cast<size_t>(f) * p.m * p.k, bo = static_cast<size_t>(f) * p.k * p.n;
    for (int i = 0; i < p.m; ++i) {
      for (int j = 0; j < p.n; ++j) {
        cd acc = 0;
        for (int k = 0; k < p.k; ++k) {
          const size_t ai = ao + (at ? static_cast<size_t>(k) * p.m + i : static_cast<size_t>(i) * p.k + k);
          const size_t bi = bo + (bt ? static_cast<size_t>(j) * p.k + k : static_cast<size_t>(k) * p.n + j);
          cd av(a[2 * ai], a[2 * ai + 1]), bv(b[2 * bi], b[2 * bi + 1]);
          if (p.adjoint_a || p.conjugate_a) av = std::conj(av);
          if (p.adjoint_b || p.conjugate_b) bv = std::conj(bv);
          acc += av * bv;
        }
        const size_t ci = (static_cast<size_t>(f) * p.m + i) * p.n + j;
        c[2 * ci] = acc.real();
        c[2 * ci + 1] = acc.imag();
      }
    }
  }
  return c;
}

template <typename T>
std::vector<T> RandomVector(size_t n) {
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(Uniform(-1.0, 1.0));
  return v;
}
template <typename T>
std::vector<double> ToDouble(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

template <typename T>
const char* TypeName() {
  return sizeof(T) == 4 ? "f32" : "f64";
}

// How far a draw's kept outputs cancelled: the norm they would have for these spectrum values in
// random phases, over their norm. Each output is (1/S^2) sum_k w_k Re(X_k e^{i theta}) (w_k = 2
// for the columns 0 < kx < S/2 that stand for two, else 1), whose mean square in random phases is
// sum_k w_k^2 |X_k|^2 / (2 S^4). The float error of an output follows those terms, not their sum,
// so a window whose values cancelled (a 1 x 1 window is one such sum: half its draws come out below
// 0.67 of that size) is held to the relative tolerance times ratio / 2. Over 3,000 simulated
// uniform draws of one image each, the ratio stayed below 1.07 where the window is the whole frame
// and below 1.6 for 7 x 7 and 8 x 8 windows in 16 to 64 frames, so there the tolerance is the
// plain one.
template <typename T>
double IrfftCancellation(const std::vector<T>& spec, const std::vector<double>& ref, const Irfft2dParams& p) {
  const int S = p.fft_size, half = S / 2 + 1, N = p.batch * p.channels;
  double expected = 0;  // sum of the outputs' mean squares
  for (int ky = 0; ky < S; ++ky) {
    for (int kx = 0; kx < half; ++kx) {
      const double weight = kx == 0 || kx == S / 2 ? 1.0 : 2.0;
      for (int n = 0; n < N; ++n) {
        const size_t o = (static_cast<size_t>(ky * half + kx) * N + n) * 2;
        const double re = spec[o], im = spec[o + 1];
        expected += weight * weight * (re * re + im * im) / 2;
      }
    }
  }
  expected *= static_cast<double>(p.out_h) * p.out_w / (static_cast<double>(S) * S * S * S);
  double actual = 0;
  for (const double v : ref) actual += v * v;
  return actual > 0 ? std::sqrt(expected / actual) : (expected > 0 ? INFINITY : 1.0);
}

// ---------------------------------------------------------------------------------------------
template <typename T>
void CheckRfft2d(const Rfft2dParams& p, const char* tag) {
  const int S = p.fft_size, N = p.batch * p.channels;
  const size_t in_count = static_cast<size_t>(N) * p.height * p.width;
  const size_t out_count = static_cast<size_t>(S) * (S / 2 + 1) * N * 2;
  std::vector<T> x = RandomVector<T>(in_count);
  DeviceBuffer<T> dx(in_count), dy(out_count);
  dx.Upload(x);
  dy.Poison();
  const int err = fftconv::cuda::LaunchRfft2d<T>(p, dx.ptr, dy.ptr, nullptr);
  char name[256];
  std::snprintf(name, sizeof(name), "rfft2d  %s %s S=%-3d %s B=%d C=%d H=%d W=%d off=(%d,%d)%s", TypeName<T>(),
                p.nhwc ? "NHWC" : "NCHW", S, tag, p.batch, p.channels, p.height, p.width, p.offset_h, p.offset_w, "");
  if (!Completed(err, name)) return;
  bool canary = false;
  std::vector<double> out = ToDouble(dy.Download(&canary));
  std::vector<double> ref = Rfft2dReference(ToDouble(x), p);
  const double rel = RelErr(out, ref);
  const double tol = sizeof(T) == 4 ? (S <= 64 ? 2e-6 : 4e-6) : 1e-12;
  Report(canary && rel <= tol, std::string(name) + (canary ? "" : " CANARY"), rel, tol);
}

template <typename T>
void CheckIrfft2d(const Irfft2dParams& p, const char* tag) {
  const int S = p.fft_size, N = p.batch * p.channels;
  const size_t in_count = static_cast<size_t>(S) * (S / 2 + 1) * N * 2;
  const size_t out_count = static_cast<size_t>(N) * p.out_h * p.out_w;
  std::vector<T> x = RandomVector<T>(in_count);  // not Hermitian-consistent on purpose
  DeviceBuffer<T> dx(in_count), dy(out_count);
  dx.Upload(x);
  dy.Poison();
  const int err = fftconv::cuda::LaunchIrfft2d<T>(p, dx.ptr, dy.ptr, nullptr);
  char name[256];
  std::snprintf(name, sizeof(name), "irfft2d %s %s S=%-3d %s B=%d C=%d out=%dx%d off=(%d,%d)", TypeName<T>(),
                p.nhwc ? "NHWC" : "NCHW", S, tag, p.batch, p.channels, p.out_h, p.out_w, p.offset_h, p.offset_w);
  if (!Completed(err, name)) return;
  bool canary = false;
  std::vector<double> out = ToDouble(dy.Download(&canary));
  std::vector<double> ref = Irfft2dReference(ToDouble(x), p);
  const double rel = RelErr(out, ref);
  const double tol = sizeof(T) == 4 ? (S <= 64 ? 2e-6 : 4e-6) : 1e-12;
  const double widened = tol * std::max(1.0, IrfftCancellation(x, ref, p) / 2);
  Report(canary && rel <= widened, std::string(name) + (canary ? "" : " CANARY"), rel, widened);
}

// An operand's op in case names: N(one), T(ranspose), H (adjoint), C(onjugate).
const char* OpName(bool transpose, bool adjoint, bool conjugate) {
  return adjoint || (transpose && conjugate) ? "H" : transpose ? "T" : conjugate ? "C" : "N";
}

// Flag f of an operand's op: 0 identity, 1 transpose, 2 adjoint, 3 conjugate (without transposition).
void SetOperandOp(int f, bool* transpose, bool* adjoint, bool* conjugate) {
  *transpose = f == 1;
  *adjoint = f == 2;
  *conjugate = f == 3;
}

// A product's sizes in the matmul suites: bins, and m x k times k x n after the operands' ops.
struct MatmulShape {
  int bins, m, n, k;
};

// The product of shape s with operand ops fa and fb (SetOperandOp); the other fields keep their defaults.
SpectralMatmulParams MatmulCase(const MatmulShape& s, int fa, int fb) {
  SpectralMatmulParams p;
  p.bins = s.bins;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  SetOperandOp(fa, &p.transpose_a, &p.adjoint_a, &p.conjugate_a);
  SetOperandOp(fb, &p.transpose_b, &p.adjoint_b, &p.conjugate_b);
  return p;
}

// path: the kernel family the case runs on ("simt" where the capability is capped below sm_80).
template <typename T>
void CheckMatmul(const SpectralMatmulParams& p, const char* path) {
  const bool at = p.transpose_a || p.adjoint_a, bt = p.transpose_b || p.adjoint_b;
  (void)at;
  (void)bt;
  const size_t a_count = static_cast<size_t>(p.bins) * p.m * p.k * 2;
  const size_t b_count = static_cast<size_t>(p.bins) * p.k * p.n * 2;
  const size_t c_count = static_cast<size_t>(p.bins) * p.m * p.n * 2;
  std::vector<T> a = RandomVector<T>(a_count), b = RandomVector<T>(b_count);
  DeviceBuffer<T> da(a_count), db(b_count), dc(c_count);
  da.Upload(a);
  db.Upload(b);
  dc.Poison();
  const int err = fftconv::cuda::LaunchSpectralMatmul<T>(p, da.ptr, db.ptr, dc.ptr, nullptr);
  char name[256];
  std::snprintf(name, sizeof(name), "matmul  %s %s op=(%s,%s) tf32=%d alpha=%g bins=%d m=%d n=%d k=%d", TypeName<T>(),
                path, OpName(p.transpose_a, p.adjoint_a, p.conjugate_a),
                OpName(p.transpose_b, p.adjoint_b, p.conjugate_b), p.allow_tf32 ? 1 : 0, p.alpha, p.bins, p.m, p.n,
                p.k);
  if (!Completed(err, name)) return;
  bool canary = false;
  std::vector<double> out = ToDouble(dc.Download(&canary));
  std::vector<double> ref = MatmulReference(ToDouble(a), ToDouble(b), p);
  for (double& v : ref) v *= p.alpha;
  const double rel = RelErr(out, ref);
  const double tol = sizeof(T) == 8 ? 1e-12 : (p.allow_tf32 ? 1e-3 : 1e-5);
  Report(canary && rel <= tol, std::string(name) + (canary ? "" : " CANARY"), rel, tol);
}

// NaN and Inf in the operands reach the product: a NaN in row 3 of op_a(a) (canonical, 0x7fffffff)
// and a negative one in row 7 (0xffffffff, whose add of half a TF32 ulp carries out of the word),
// an Inf in column 4 of op_b(b). Those rows and that column must be non-finite, in both
// parts; the rest must be finite and match the reference computed with the three entries zeroed.
// c starts as zeros, so an output left unwritten fails.
void CheckMatmulSpecialValues(bool adjoint_a, bool allow_tf32, const char* path) {
  SpectralMatmulParams p{};
  p.bins = 1;
  p.m = 20;
  p.n = 12;
  p.k = 16;
  p.adjoint_a = adjoint_a;
  p.allow_tf32 = allow_tf32;
  std::vector<float> a = RandomVector<float>(2 * p.m * p.k), b = RandomVector<float>(2 * p.k * p.n);
  const auto a_index = [&](int i, int k) { return adjoint_a ? k * p.m + i : i * p.k + k; };
  const size_t nan_at = 2 * a_index(3, 2), negative_nan_at = 2 * a_index(7, 9) + 1, inf_at = 2 * (5 * p.n + 4);
  std::vector<double> a_clean = ToDouble(a), b_clean = ToDouble(b);
  a_clean[nan_at] = a_clean[negative_nan_at] = b_clean[inf_at] = 0;
  const uint32_t nan_bits = 0x7fffffffu, negative_nan_bits = 0xffffffffu;
  std::memcpy(&a[nan_at], &nan_bits, 4);
  std::memcpy(&a[negative_nan_at], &negative_nan_bits, 4);
  b[inf_at] = INFINITY;
  DeviceBuffer<float> da(a.size()), db(b.size()), dc(2 * p.m * p.n);
  da.Upload(a);
  db.Upload(b);
  dc.Fill(0);
  const int err = fftconv::cuda::LaunchSpectralMatmul<float>(p, da.ptr, db.ptr, dc.ptr, nullptr);
  char name[160];
  std::snprintf(name, sizeof(name), "matmul  f32 %s NaN and Inf operands op=(%s,N) tf32=%d m=%d n=%d k=%d", path,
                adjoint_a ? "H" : "N", allow_tf32 ? 1 : 0, p.m, p.n, p.k);
  if (!Completed(err, name)) return;
  bool canary = false;
  const std::vector<float> out = dc.Download(&canary);
  const std::vector<double> ref = MatmulReference(a_clean, b_clean, p);
  bool specials_ok = true;
  std::vector<double> clean_out, clean_ref;
  for (int i = 0; i < p.m; ++i) {
    for (int j = 0; j < p.n; ++j) {
      for (int part = 0; part < 2; ++part) {
        const size_t at = 2 * (i * p.n + j) + part;
        if (i == 3 || i == 7 || j == 4) {
          specials_ok &= !std::isfinite(out[at]);
        } else {
          specials_ok &= std::isfinite(out[at]);
          clean_out.push_back(out[at]);
          clean_ref.push_back(ref[at]);
        }
      }
    }
  }
  const double rel = RelErr(clean_out, clean_ref), tol = allow_tf32 ? 1e-3 : 1e-5;
  Report(canary && specials_ok && rel <= tol,
         std::string(name) + (canary ? "" : " CANARY") + (specials_ok ? "" : " SPECIAL VALUES LOST"), rel, tol);
}

// ---------------------------------------------------------------------------------------------
// Random shapes. Image counts include 0 and 1 and counts that leave partial blocks.
void RandomBatch(int S, bool quick, int* batch, int* channels) {
  const int r = RandInt(0, 9);
  if (r == 0) {
    *batch = RandInt(0, 1) ? 0 : RandInt(1, 3);
    *channels = *batch == 0 ? RandInt(1, 4) : 0;
  } else if (r == 1) {
    *batch = 1;
    *channels = 1;
  } else {
    const int max_images = quick ? 24 : (S >= 128 ? 12 : (S >= 64 ? 40 : 300));
    *batch = RandInt(1, 6);
    *channels = RandInt(1, std::max(1, max_images / *batch));
    if (RandInt(0, 2) == 0) *channels = std::max(4, *channels / 4 * 4);  // vector paths need C % 4 == 0
  }
}

// Every FFT size of the package: the powers of two, 3 * 2^k and 5 * 2^k (fftconv::kFftSizes).
// An inverse of batch x channels images in an S frame with a random window (the whole frame when
// `full`).
Irfft2dParams RandomIrfft2dParams(int S, int batch, int channels, bool nhwc, bool full) {
  Irfft2dParams q;
  q.batch = batch;
  q.channels = channels;
  q.fft_size = S;
  q.nhwc = nhwc;
  q.out_h = full ? S : RandInt(1, S);
  q.out_w = full ? S : RandInt(1, S);
  q.offset_h = RandInt(0, S - q.out_h);
  q.offset_w = RandInt(0, S - q.out_w);
  return q;
}

template <typename T>
void FftSuite(bool quick, const char* tag) {
  for (const int S : fftconv::kFftSizes) {
    const int reps = quick ? 1 : (S >= 128 ? 2 : 4);
    for (int nhwc = 0; nhwc < 2; ++nhwc) {
      for (int rep = 0; rep < reps; ++rep) {
        Rfft2dParams p;
        RandomBatch(S, quick, &p.batch, &p.channels);
        p.fft_size = S;
        p.nhwc = nhwc;
        if (rep == 0) {
          p.height = S;
          p.width = S;
        } else {
          p.height = RandInt(1, S);
          p.width = RandInt(1, S);
          if (rep == 3) p.height = RandInt(0, 1) ? 0 : p.height;  // empty image: zero spectrum
        }
        p.offset_h = RandInt(0, S - p.height);
        p.offset_w = RandInt(0, S - p.width);
        CheckRfft2d<T>(p, tag);

        int batch, channels;
        RandomBatch(S, quick, &batch, &channels);
        CheckIrfft2d<T>(RandomIrfft2dParams(S, batch, channels, nhwc, rep == 0), tag);
      }
      // Images inside the first quarter of the frame's rows and columns, of its rows only, of its
      // columns only (the pruned forward transforms, DifStagesLeading, where S / 4 is a power of two),
      // and one that fills the quarter's rows and misses its columns by one; the inverse's windows
      // the same.
      const int quarter = S / 4 > 0 ? S / 4 : 1;
      for (int which = 0; which < 4; ++which) {
        Rfft2dParams p;
        RandomBatch(S, quick, &p.batch, &p.channels);
        p.fft_size = S;
        p.nhwc = nhwc;
        const bool rows_inside = which != 2, cols_inside = which != 1;
        p.height = rows_inside ? RandInt(1, quarter) : RandInt(quarter + 1 <= S ? quarter + 1 : S, S);
        p.width = cols_inside ? RandInt(1, quarter) : RandInt(quarter + 1 <= S ? quarter + 1 : S, S);
        p.offset_h = RandInt(0, (rows_inside ? quarter : S) - p.height);
        p.offset_w = RandInt(0, (cols_inside ? quarter : S) - p.width);
        if (which == 3 && quarter < S) {
          p.height = quarter;
          p.offset_h = 0;
          p.width = RandInt(1, quarter);
          p.offset_w = quarter + 1 - p.width;
        }
        CheckRfft2d<T>(p, tag);
        // The inverse likewise: windows in the first quarter (DifStagesKeeping, one lane per transform).
        Irfft2dParams q;
        RandomBatch(S, quick, &q.batch, &q.channels);
        q.fft_size = S;
        q.nhwc = nhwc;
        q.out_h = p.height;
        q.out_w = p.width;
        q.offset_h = p.offset_h;
        q.offset_w = p.offset_w;
        CheckIrfft2d<T>(q, tag);
      }
    }
  }
  // Batches with more groups of images than a device holds blocks at once (the pipelined transforms'
  // persistent blocks each take several): Mathieu's activations, one in either layout.
  if (!quick && std::is_same<T, float>::value) {
    CheckRfft2d<T>(Rfft2dParams{128, 96, 32, 32, 32, 0, 0, true}, tag);
    CheckRfft2d<T>(Rfft2dParams{64, 96, 26, 26, 32, 3, 2, false}, tag);
    // NHWC frames around the image: a weight tensor's 7 x 7 (one image of Cin * Cout channels), and
    // an odd top offset with a stage row below the image (the pipelined strategy's 16-byte zero fill, all its runs);
    // weight-sized images in the first quarter of NCHW 32 frames and of NHWC 64 frames (the pruned
    // transforms), and the weight gradient's windows likewise.
    CheckRfft2d<T>(Rfft2dParams{1, 24576, 7, 7, 32, 0, 0, true}, tag);
    CheckRfft2d<T>(Rfft2dParams{96, 256, 5, 7, 32, 3, 1, false}, tag);
    CheckRfft2d<T>(Rfft2dParams{1, 4096, 13, 16, 64, 2, 0, true}, tag);
    CheckRfft2d<T>(Rfft2dParams{64, 96, 24, 23, 32, 3, 5, true}, tag);
    // The pipelined strategy with the image in the first quarter of the frame's columns only, and of its rows only:
    // one pass's transforms pruned (DifStagesLeading), the other's whole.
    CheckRfft2d<T>(Rfft2dParams{64, 96, 26, 7, 32, 3, 1, true}, tag);
    CheckRfft2d<T>(Rfft2dParams{64, 96, 7, 26, 32, 1, 3, false}, tag);
    CheckIrfft2d<T>(Irfft2dParams{128, 96, 32, 32, 32, 0, 0, true}, tag);
    CheckIrfft2d<T>(Irfft2dParams{1, 24576, 32, 7, 7, 0, 0, true}, tag);
    CheckIrfft2d<T>(Irfft2dParams{256, 96, 32, 5, 7, 1, 0, false}, tag);
    CheckIrfft2d<T>(Irfft2dParams{64, 96, 32, 26, 26, 3, 2, false}, tag);
    // The 40, 48 and 64 frames likewise (more groups than resident blocks for any of their shapes):
    // Mathieu's activations with SAME padding, and 56 x 56 images in 64 frames.
    CheckRfft2d<T>(Rfft2dParams{64, 96, 32, 32, 40, 3, 4, true}, tag);
    CheckRfft2d<T>(Rfft2dParams{32, 96, 32, 31, 48, 8, 7, false}, tag);
    CheckRfft2d<T>(Rfft2dParams{16, 96, 56, 56, 64, 4, 3, true}, tag);
    CheckRfft2d<T>(Rfft2dParams{16, 64, 56, 55, 64, 0, 9, false}, tag);
    // 39 images of 13 channels in 64 frames (a last group of 7, groups across images in NHWC), the
    // image at an odd offset.
    CheckRfft2d<T>(Rfft2dParams{3, 13, 37, 40, 64, 11, 20, true}, tag);
    CheckRfft2d<T>(Rfft2dParams{3, 13, 37, 40, 64, 11, 20, false}, tag);
    CheckIrfft2d<T>(Irfft2dParams{64, 96, 40, 32, 32, 3, 4, false}, tag);
    CheckIrfft2d<T>(Irfft2dParams{32, 96, 48, 32, 31, 8, 7, true}, tag);
    CheckIrfft2d<T>(Irfft2dParams{16, 96, 64, 56, 56, 4, 3, false}, tag);
    CheckIrfft2d<T>(Irfft2dParams{16, 64, 64, 55, 56, 9, 0, true}, tag);
  }
  // NHWC tensors whose channels come in whole blocks of 32 (LargeShape where it differs from FftShape).
  for (const int S : {16, 32, 40, 48}) {
    for (int rep = 0; rep < (quick ? 2 : 4); ++rep) {
      const int batch = RandInt(1, 3), channels = 32 * RandInt(1, quick ? 2 : 4);
      Rfft2dParams p{batch, channels, RandInt(1, S), RandInt(1, S), S, 0, 0, true};
      p.offset_h = RandInt(0, S - p.height);
      p.offset_w = RandInt(0, S - p.width);
      CheckRfft2d<T>(p, tag);
      CheckIrfft2d<T>(RandomIrfft2dParams(S, batch, channels, true, rep == 0), tag);
    }
  }
  // NHWC forwards of 2 x 64 images, 64 channels a multiple of every block shape's G, in each frame
  // up to 32 (the shapes of one lane per transform): under the persistent-block caps (grid1,
  // grid3) they take the pipelined strategy, whose stage one tensor copy per group fills on sm_90+
  // (TensorCopyStage).
  for (const int S : fftconv::kFftSizes) {
    if (S > 32) continue;
    Rfft2dParams p{2, 64, RandInt(1, S), RandInt(1, S), S, 0, 0, true};
    p.offset_h = RandInt(0, S - p.height);
    p.offset_w = RandInt(0, S - p.width);
    CheckRfft2d<T>(p, tag);
  }
}

template <typename T>
void MatmulSuite(bool quick) {
  // n = 96, 95 and 288: the gradients' n = Cin of Mathieu's layer, a partial tile, several tiles.
  // {2, 40, 96, 12}: computed transposed on tensor cores (40 rows); {2, 96, 256, 20}: computed
  // transposed by the SIMT kernels (96 rows, the weight gradient's); {2, 128, 96, 40}: the 48-column
  // tile, 16-byte copies, three k tiles, the last partial; {1, 40, 24, 1500}: a long reduction, whose
  // error grows with k where an accumulator does not round to nearest (the split TF32 products).
  std::vector<MatmulShape> shapes = {{3, 37, 45, 29},  {2, 128, 6, 1},   {2, 128, 16, 6},
                                     {1, 1, 1, 1},     {0, 4, 4, 4},     {2, 40, 96, 12},
                                     {2, 96, 256, 20}, {2, 128, 96, 40}, {1, 40, 24, 1500}};
  if (!quick) {
    shapes.push_back({1, 131, 95, 19});
    shapes.push_back({1, 64, 288, 24});
    shapes.push_back({2, 130, 70, 33});
    shapes.push_back({3, 64, 96, 17});
    shapes.push_back({1, 257, 129, 40});
    shapes.push_back({2, 5, 3, 0});
    shapes.push_back({RandInt(1, 4), RandInt(1, 200), RandInt(1, 200), RandInt(1, 100)});
    // More output tiles than blocks fit on a GPU at once (several waves of blocks), partial tiles
    // in m and n.
    shapes.push_back({700, 100, 70, 24});
  }
  // Float: TF32 allowed and not (on sm_80+ both on tensor cores, FP32 accuracy from split operands
  // for the second), then FP32 on the SIMT kernel of GPUs before sm_80 (capability capped at 75).
  fftconv::cuda::detail::DeviceLimits limits;
  CUDA_OK(static_cast<cudaError_t>(fftconv::cuda::detail::CurrentDeviceLimits(&limits)));
  const bool mma = limits.compute_capability >= 80;
  const int modes = sizeof(T) == 4 ? (mma ? 3 : 2) : 1;
  for (int mode = 0; mode < modes; ++mode) {
    const bool tf32 = mode == 1, simt = sizeof(T) == 8 || !mma || mode == 2;
    fftconv::cuda::detail::SetComputeCapabilityCapForTesting(mode == 2 ? 75 : 0);
    for (const MatmulShape& s : shapes) {
      for (int fa = 0; fa < 4; ++fa) {
        for (int fb = 0; fb < 4; ++fb) {
          // The large shape with the forward's, the input gradient's and the weight gradient's flags.
          if (s.bins > 100 && !((fa == 0 && (fb == 0 || fb == 2)) || (fa == 2 && fb == 0))) continue;
          if (quick && s.m > 64 && (fa + fb) % 3 != 0) continue;
          SpectralMatmulParams p = MatmulCase(s, fa, fb);
          p.allow_tf32 = tf32;
          p.alpha = (fa + fb) % 3 == 0 ? 1.0f : ((fa + fb) % 3 == 1 ? 0.25f : 3.0f);
          CheckMatmul<T>(p, simt ? "simt" : "mma ");
        }
      }
    }
    if constexpr (sizeof(T) == 4) {
      for (bool adjoint_a : {false, true}) CheckMatmulSpecialValues(adjoint_a, tf32, simt ? "simt" : "mma ");
    }
  }
  fftconv::cuda::detail::SetComputeCapabilityCapForTesting(0);
}

// ---------------------------------------------------------------------------------------------
// Spectra stored rounded to TF32 (Rfft2dParams::round_to_tf32) and TF32 products that take such
// operands unconverted (SpectralMatmulParams::tf32_operands), sm_80+: compared bit for bit, with
// the unrounded transform rounded on the host by the same rule, and with the ordinary TF32 product.

// x rounded to TF32 as detail::RoundedToTf32 rounds it on a device of this compute capability: to
// nearest even on sm_90+ (cvt.rn), ties away from zero before (cvt.rna); low 13 bits cleared.
// Finite x (a carry out of the largest binade gives Inf, as the conversion does).
float HostRoundedToTf32(float x, int compute_capability) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  const bool to_even = compute_capability >= 90;
  u = (u + (to_even ? 0xfffu + ((u >> 13) & 1u) : 0x1000u)) & 0xffffe000u;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}

uint32_t FloatBits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

// Whether this device has TF32 (sm_80+), and its compute capability; else the cases are skipped.
bool Tf32Device(const char* cases, int* compute_capability) {
  fftconv::cuda::detail::DeviceLimits limits;
  CUDA_OK(static_cast<cudaError_t>(fftconv::cuda::detail::CurrentDeviceLimits(&limits)));
  *compute_capability = limits.compute_capability;
  if (limits.compute_capability < 80) std::printf("SKIP  %s: no TF32 before sm_80\n", cases);
  return limits.compute_capability >= 80;
}

// rfft2d with round_to_tf32 against the same transform without it, rounded on the host: every bin
// bit for bit (rel_err: the count of bins that differ), and some bins changed by the rounding.
void CheckRfft2dTf32(Rfft2dParams p, const char* tag, int compute_capability) {
  const int S = p.fft_size, N = p.batch * p.channels;
  const size_t in_count = static_cast<size_t>(N) * p.height * p.width;
  const size_t out_count = static_cast<size_t>(S) * (S / 2 + 1) * N * 2;
  std::vector<float> x = RandomVector<float>(in_count);
  DeviceBuffer<float> dx(in_count), plain(out_count), rounded(out_count);
  dx.Upload(x);
  plain.Poison();
  rounded.Poison();
  p.round_to_tf32 = false;
  int err = fftconv::cuda::LaunchRfft2d<float>(p, dx.ptr, plain.ptr, nullptr);
  p.round_to_tf32 = true;
  if (err == 0) err = fftconv::cuda::LaunchRfft2d<float>(p, dx.ptr, rounded.ptr, nullptr);
  char name[256];
  std::snprintf(name, sizeof(name), "rfft2d  f32 %s S=%-3d %s tf32-rounded B=%d C=%d H=%d W=%d off=(%d,%d)",
                p.nhwc ? "NHWC" : "NCHW", S, tag, p.batch, p.channels, p.height, p.width, p.offset_h, p.offset_w);
  if (!Completed(err, name)) return;
  bool canary_plain = false, canary_rounded = false;
  const std::vector<float> ref = plain.Download(&canary_plain), out = rounded.Download(&canary_rounded);
  size_t differing = 0, changed = 0;
  bool written = true;
  for (size_t i = 0; i < out_count; ++i) {
    written &= std::isfinite(ref[i]) && std::isfinite(out[i]);
    differing += FloatBits(out[i]) != FloatBits(HostRoundedToTf32(ref[i], compute_capability));
    changed += FloatBits(out[i]) != FloatBits(ref[i]);
  }
  const bool canary = canary_plain && canary_rounded;
  Report(canary && written && differing == 0 && (changed > 0 || out_count == 0),
         std::string(name) + (canary ? "" : " CANARY") + (written ? "" : " UNWRITTEN") +
             (changed > 0 || out_count == 0 ? "" : " UNROUNDED"),
         static_cast<double>(differing), 0);
}

// The pipelined strategy (persistent blocks capped at 3, more groups of images than that), the
// staged one (a batch of few groups: fewer than the blocks a device holds at once) and the
// strategies of a 48 KiB device (large frames: rows from global memory, the direct strategy), NCHW
// and NHWC, in frames of 8 to 64 (and NHWC channels in whole blocks of 32, LargeShape).
// TransformColumns stores for all of them.
void Tf32SpectraSuite(bool quick) {
  int compute_capability = 0;
  if (!Tf32Device("rfft2d tf32-rounded spectra", &compute_capability)) return;
  struct Strategy {
    const char* tag;
    int persistent_cap, smem_cap, batch, channels;
  };
  const Strategy strategies[] = {
      {"pipelined", 3, 0, 8, 24}, {"staged", 0, 0, 2, 3}, {"cap48K", 0, 48 * 1024, 3, 5}};
  for (const int S : {8, 12, 16, 32, 40, 64}) {
    if (quick && S != 8 && S != 32 && S != 64) continue;
    for (int nhwc = 0; nhwc < 2; ++nhwc) {
      for (const Strategy& strategy : strategies) {
        for (int rep = 0; rep < (quick ? 1 : 2); ++rep) {
          Rfft2dParams p{strategy.batch, strategy.channels, S, S, S, 0, 0, nhwc == 1};
          if (rep == 1) {
            p.height = RandInt(1, S);
            p.width = RandInt(1, S);
            p.offset_h = RandInt(0, S - p.height);
            p.offset_w = RandInt(0, S - p.width);
          }
          fftconv::cuda::detail::SetPersistentBlocksCapForTesting(strategy.persistent_cap);
          fftconv::cuda::detail::SetSharedMemoryCapForTesting(strategy.smem_cap);
          CheckRfft2dTf32(p, strategy.tag, compute_capability);
        }
      }
      fftconv::cuda::detail::SetPersistentBlocksCapForTesting(0);
      fftconv::cuda::detail::SetSharedMemoryCapForTesting(0);
    }
    if (S == 16 || S == 32) {
      CheckRfft2dTf32(Rfft2dParams{2, 64, S - 3, S - 3, S, 1, 2, true}, "large ", compute_capability);
    }
  }
  // Mathieu's activations (the pipelined strategy on the whole device).
  if (!quick) CheckRfft2dTf32(Rfft2dParams{128, 96, 32, 32, 32, 0, 0, true}, "      ", compute_capability);
}

// The TF32 product with tf32_operands on operands already rounded to TF32 (on the host, by the
// device's rule) against the ordinary TF32 product of the same operands and of the unrounded ones:
// all three bit for bit. And the FP32 product (split operands) ignores tf32_operands.
void CheckMatmulTf32Operands(const SpectralMatmulParams& base, int compute_capability) {
  const size_t a_count = static_cast<size_t>(base.bins) * base.m * base.k * 2;
  const size_t b_count = static_cast<size_t>(base.bins) * base.k * base.n * 2;
  const size_t c_count = static_cast<size_t>(base.bins) * base.m * base.n * 2;
  std::vector<float> a = RandomVector<float>(a_count), b = RandomVector<float>(b_count);
  std::vector<float> a_tf32(a), b_tf32(b);
  for (float& v : a_tf32) v = HostRoundedToTf32(v, compute_capability);
  for (float& v : b_tf32) v = HostRoundedToTf32(v, compute_capability);
  DeviceBuffer<float> da(a_count), db(b_count), da_tf32(a_count), db_tf32(b_count);
  da.Upload(a);
  db.Upload(b);
  da_tf32.Upload(a_tf32);
  db_tf32.Upload(b_tf32);
  // Products: 0 TF32 of a, b; 1 TF32 of the rounded a, b; 2 the same with tf32_operands;
  // 3 FP32 of a, b; 4 the same with tf32_operands.
  const bool allow[5] = {true, true, true, false, false}, operands[5] = {false, false, true, false, true};
  const bool rounded_inputs[5] = {false, true, true, false, false};
  std::vector<std::vector<float>> c(5);
  char name[256];
  std::snprintf(name, sizeof(name), "matmul  f32 mma  op=(%s,%s) tf32-operands alpha=%g bins=%d m=%d n=%d k=%d",
                OpName(base.transpose_a, base.adjoint_a, base.conjugate_a),
                OpName(base.transpose_b, base.adjoint_b, base.conjugate_b), base.alpha, base.bins, base.m, base.n,
                base.k);
  bool canary = true;
  for (int i = 0; i < 5; ++i) {
    SpectralMatmulParams p = base;
    p.allow_tf32 = allow[i];
    p.tf32_operands = operands[i];
    DeviceBuffer<float> dc(c_count);
    dc.Poison();
    const int err = fftconv::cuda::LaunchSpectralMatmul<float>(p, rounded_inputs[i] ? da_tf32.ptr : da.ptr,
                                                               rounded_inputs[i] ? db_tf32.ptr : db.ptr, dc.ptr,
                                                               nullptr);
    if (!Completed(err, name)) return;
    bool ok = false;
    c[i] = dc.Download(&ok);
    canary &= ok;
  }
  size_t differing = 0;
  bool finite = true;
  for (size_t j = 0; j < c_count; ++j) {
    for (int i = 0; i < 5; ++i) finite &= std::isfinite(c[i][j]);
    differing += FloatBits(c[2][j]) != FloatBits(c[1][j]);
    differing += FloatBits(c[2][j]) != FloatBits(c[0][j]);
    differing += FloatBits(c[4][j]) != FloatBits(c[3][j]);
  }
  Report(canary && finite && differing == 0,
         std::string(name) + (canary ? "" : " CANARY") + (finite ? "" : " UNWRITTEN"),
         static_cast<double>(differing), 0);
}

// Shapes of MatmulSuite with every operand op: 16-byte copies (the tf32_operands kernels) and
// 8-byte copies (odd sizes: the rounding kernels), products computed transposed, partial tiles,
// each of the three tiles; and the convolution's three products on Mathieu's layer.
void Tf32OperandsSuite(bool quick) {
  int compute_capability = 0;
  if (!Tf32Device("matmul tf32-operands", &compute_capability)) return;
  const MatmulShape shapes[] = {{3, 37, 45, 29}, {2, 40, 96, 12}, {2, 128, 96, 40}, {1, 64, 288, 24}, {2, 130, 70, 33},
                          {2, 128, 64, 16}};
  for (const MatmulShape& s : shapes) {
    for (int fa = 0; fa < 4; ++fa) {
      for (int fb = 0; fb < 4; ++fb) {
        if (quick && (fa + fb) % 3 != 0) continue;
        SpectralMatmulParams p = MatmulCase(s, fa, fb);
        p.alpha = (fa + fb) % 2 == 0 ? 1.0f : 0.25f;
        CheckMatmulTf32Operands(p, compute_capability);
      }
    }
  }
  if (!quick) {
    // Y = X conj(W'), dX = dY W'^T, dW' = X^T conj(dY): B = 128, Cin = 96, Cout = 256, 32 x 32 frames.
    const int bins = 32 * 17;
    SpectralMatmulParams y{bins, 128, 256, 96, false, false, false, false, true};
    y.conjugate_b = true;
    SpectralMatmulParams dx{bins, 128, 96, 256, false, false, true, false, true};
    SpectralMatmulParams dw{bins, 96, 256, 128, true, false, false, false, true};
    dw.conjugate_b = true;
    for (const SpectralMatmulParams& p : {y, dx, dw}) CheckMatmulTf32Operands(p, compute_capability);
  }
}

// ---------------------------------------------------------------------------------------------
// Half precision (fftconv::cuda::Float16 / BFloat16), as 16-bit patterns on the host.
double HalfBitsToDouble(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
  double v;
  if (exponent == 0) {
    v = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    v = mantissa ? NAN : INFINITY;
  } else {
    v = std::ldexp(1024 + mantissa, exponent - 25);
  }
  return sign ? -v : v;
}
double BFloat16BitsToDouble(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
// v = k / 256 with |k| < 256: exact in both types (normal float16, at most 8 significant bits).
uint16_t ExactHalfBits(double v) {
  if (v == 0) return 0;
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  int e;
  const double m = std::frexp(std::fabs(v), &e);  // |v| = m 2^e, m in [0.5, 1)
  const int mantissa = static_cast<int>(std::lround((2 * m - 1) * 1024));
  return static_cast<uint16_t>(sign | ((e - 1 + 15) << 10) | mantissa);
}
uint16_t ExactBFloat16Bits(double v) {
  const float f = static_cast<float>(v);
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return static_cast<uint16_t>(u >> 16);
}

template <typename H>
struct HalfCodec;
template <>
struct HalfCodec<fftconv::cuda::Float16> {
  static const char* Name() { return "f16"; }
  static double Decode(uint16_t h) { return HalfBitsToDouble(h); }
  static uint16_t Encode(double v) { return ExactHalfBits(v); }
  static double Unit() { return std::ldexp(1.0, -11); }
};
template <>
struct HalfCodec<fftconv::cuda::BFloat16> {
  static const char* Name() { return "bf16"; }
  static double Decode(uint16_t h) { return BFloat16BitsToDouble(h); }
  static uint16_t Encode(double v) { return ExactBFloat16Bits(v); }
  static double Unit() { return std::ldexp(1.0, -8); }
};

// n exactly representable values in [-1, 1) and their bit patterns.
template <typename H>
std::vector<uint16_t> RandomHalf(size_t n, std::vector<double>* values) {
  std::vector<uint16_t> bits(n);
  values->resize(n);
  for (size_t i = 0; i < n; ++i) {
    (*values)[i] = RandInt(-255, 255) / 256.0;
    bits[i] = HalfCodec<H>::Encode((*values)[i]);
  }
  return bits;
}
template <typename H>
std::vector<double> DecodeHalf(const std::vector<uint16_t>& bits) {
  std::vector<double> v(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) v[i] = HalfCodec<H>::Decode(bits[i]);
  return v;
}

template <typename H>
void CheckRfft2dHalf(const Rfft2dParams& p, const char* tag) {
  const int S = p.fft_size, N = p.batch * p.channels;
  const size_t in_count = static_cast<size_t>(N) * p.height * p.width;
  const size_t out_count = static_cast<size_t>(S) * (S / 2 + 1) * N * 2;
  std::vector<double> values;
  const std::vector<uint16_t> x = RandomHalf<H>(in_count, &values);
  DeviceBuffer<uint16_t> dx(in_count), dy(out_count);
  dx.Upload(x);
  dy.Poison();
  const int err = fftconv::cuda::LaunchRfft2d<H>(p, reinterpret_cast<const H*>(dx.ptr), reinterpret_cast<H*>(dy.ptr),
                                                 nullptr);
  char name[256];
  std::snprintf(name, sizeof(name), "rfft2d  %s %s S=%-3d %s B=%d C=%d H=%d W=%d off=(%d,%d)", HalfCodec<H>::Name(),
                p.nhwc ? "NHWC" : "NCHW", S, tag, p.batch, p.channels, p.height, p.width, p.offset_h, p.offset_w);
  if (!Completed(err, name)) return;
  bool canary = false;
  const std::vector<double> out = DecodeHalf<H>(dy.Download(&canary));
  std::vector<double> ref = Rfft2dReference(values, p);
  for (double& v : ref) v /= static_cast<double>(S) * S;  // mean-normalised
  const double rel = RelErr(out, ref), tol = HalfCodec<H>::Unit();
  Report(canary && rel <= tol, std::string(name) + (canary ? "" : " CANARY"), rel, tol);
}

template <typename H>
void CheckIrfft2dHalf(const Irfft2dParams& p, const char* tag) {
  const int S = p.fft_size, N = p.batch * p.channels;
  const size_t in_count = static_cast<size_t>(S) * (S / 2 + 1) * N * 2;
  const size_t out_count = static_cast<size_t>(N) * p.out_h * p.out_w;
  std::vector<double> values;
  const std::vector<uint16_t> x = RandomHalf<H>(in_count, &values);  // not Hermitian-consistent on purpose
  DeviceBuffer<uint16_t> dx(in_count), dy(out_count);
  dx.Upload(x);
  dy.Poison();
  const int err = fftconv::cuda::LaunchIrfft2d<H>(p, reinterpret_cast<const H*>(dx.ptr), reinterpret_cast<H*>(dy.ptr),
                                                  nullptr);
  char name[256];
  std::snprintf(name, sizeof(name), "irfft2d %s %s S=%-3d %s B=%d C=%d out=%dx%d off=(%d,%d)", HalfCodec<H>::Name(),
                p.nhwc ? "NHWC" : "NCHW", S, tag, p.batch, p.channels, p.out_h, p.out_w, p.offset_h, p.offset_w);
  if (!Completed(err, name)) return;
  bool canary = false;
  const std::vector<double> out = DecodeHalf<H>(dy.Download(&canary));
  for (double& v : values) v *= static_cast<double>(S) * S;  // irfft2d(half)(Z) = irfft(S^2 Z)
  const std::vector<double> ref = Irfft2dReference(values, p);
  const double rel = RelErr(out, ref), tol = HalfCodec<H>::Unit();
  Report(canary && rel <= tol, std::string(name) + (canary ? "" : " CANARY"), rel, tol);
}

template <typename H>
void CheckMatmulHalf(const SpectralMatmulParams& p, const char* path) {
  const size_t a_count = static_cast<size_t>(p.bins) * p.m * p.k * 2;
  const size_t b_count = static_cast<size_t>(p.bins) * p.k * p.n * 2;
  const size_t c_count = static_cast<size_t>(p.bins) * p.m * p.n * 2;
  std::vector<double> a_values, b_values;
  const std::vector<uint16_t> a = RandomHalf<H>(a_count, &a_values), b = RandomHalf<H>(b_count, &b_values);
  DeviceBuffer<uint16_t> da(a_count), db(b_count), dc(c_count);
  da.Upload(a);
  db.Upload(b);
  dc.Poison();
  const int err = fftconv::cuda::LaunchSpectralMatmul<H>(p, reinterpret_cast<const H*>(da.ptr),
                                                         reinterpret_cast<const H*>(db.ptr),
                                                         reinterpret_cast<H*>(dc.ptr), nullptr);
  char name[256];
  std::snprintf(name, sizeof(name), "matmul  %s op=(%s,%s) %s alpha=%g bins=%d m=%d n=%d k=%d", HalfCodec<H>::Name(),
                OpName(p.transpose_a, p.adjoint_a, p.conjugate_a), OpName(p.transpose_b, p.adjoint_b, p.conjugate_b),
                path, p.alpha, p.bins, p.m, p.n, p.k);
  if (!Completed(err, name)) return;
  bool canary = false;
  const std::vector<double> out = DecodeHalf<H>(dc.Download(&canary));
  std::vector<double> ref = MatmulReference(a_values, b_values, p);
  for (double& v : ref) v *= p.alpha;
  const double rel = RelErr(out, ref), tol = HalfCodec<H>::Unit();
  Report(canary && rel <= tol, std::string(name) + (canary ? "" : " CANARY"), rel, tol);
}

// Images cover at least half of the frame each way: a lone pixel in a 128 frame would give a
// mean-normalised float16 spectrum in the subnormal range, which is not what this checks.
template <typename H>
void HalfFftSuite(bool quick, const char* tag) {
  for (const int S : fftconv::kFftSizes) {
    const int reps = quick ? 1 : 3;
    for (int nhwc = 0; nhwc < 2; ++nhwc) {
      for (int rep = 0; rep < reps; ++rep) {
        Rfft2dParams p;
        RandomBatch(S, quick, &p.batch, &p.channels);
        p.fft_size = S;
        p.nhwc = nhwc;
        p.height = rep == 0 ? S : RandInt(std::max(1, S / 2), S);
        p.width = rep == 0 ? S : RandInt(std::max(1, S / 2), S);
        p.offset_h = RandInt(0, S - p.height);
        p.offset_w = RandInt(0, S - p.width);
        CheckRfft2dHalf<H>(p, tag);

        int batch, channels;
        RandomBatch(S, quick, &batch, &channels);
        CheckIrfft2dHalf<H>(RandomIrfft2dParams(S, batch, channels, nhwc, rep == 0), tag);
      }
    }
  }
  // NHWC tensors whose channels come in whole blocks of 32 (LargeShape where it differs from FftShape).
  for (const int S : {16, 32, 40, 48}) {
    const int batch = RandInt(1, 3), channels = 32 * RandInt(1, 2);
    Rfft2dParams p{batch, channels, RandInt(S / 2, S), RandInt(S / 2, S), S, 0, 0, true};
    p.offset_h = RandInt(0, S - p.height);
    p.offset_w = RandInt(0, S - p.width);
    CheckRfft2dHalf<H>(p, tag);
    CheckIrfft2dHalf<H>(RandomIrfft2dParams(S, batch, channels, true, false), tag);
  }
  // Images and windows in the first quarter of their frames' rows and columns (the pruned forward
  // and inverse transforms, DifStagesLeading and DifStagesKeeping), where S / 4 is a power of two.
  for (const int S : fftconv::kFftSizes) {
    if (S < 16) continue;
    const int quarter = S / 4;
    for (int nhwc = 0; nhwc < 2; ++nhwc) {
      int batch, channels;
      RandomBatch(S, quick, &batch, &channels);
      Rfft2dParams p{batch, channels, RandInt(1, quarter), RandInt(1, quarter), S, 0, 0, nhwc != 0};
      p.offset_h = RandInt(0, quarter - p.height);
      p.offset_w = RandInt(0, quarter - p.width);
      CheckRfft2dHalf<H>(p, tag);
      CheckIrfft2dHalf<H>(Irfft2dParams{batch, channels, S, p.height, p.width, p.offset_h, p.offset_w, nhwc != 0},
                          tag);
    }
  }
}

// The tensor-core path where the device has it (sm_80+), and the SIMT path (capability capped at 75).
template <typename H>
void HalfMatmulSuite(bool quick) {
  // {2, 40, 96, 64}: 16-byte copies, computed transposed on tensor cores (40 rows), two k tiles;
  // {2, 96, 256, 20}: computed transposed by the SIMT kernel (96 rows); {2, 128, 96, 72}: the
  // 48-column tile and a partial k tile.
  std::vector<MatmulShape> shapes = {{3, 37, 45, 29}, {2, 128, 6, 1},  {2, 128, 16, 6},  {1, 1, 1, 1},
                                     {0, 4, 4, 4},    {2, 64, 32, 16}, {2, 40, 96, 64},  {2, 96, 256, 20}};
  if (!quick) {
    shapes.push_back({2, 128, 96, 72});
    shapes.push_back({1, 64, 288, 36});
    shapes.push_back({2, 130, 70, 33});
    shapes.push_back({3, 64, 96, 17});
    shapes.push_back({1, 257, 129, 40});
    shapes.push_back({2, 5, 3, 0});
    shapes.push_back({RandInt(1, 4), RandInt(1, 200), RandInt(1, 200), RandInt(1, 100)});
  }
  fftconv::cuda::detail::DeviceLimits limits;
  CUDA_OK(static_cast<cudaError_t>(fftconv::cuda::detail::CurrentDeviceLimits(&limits)));
  for (int simt = 0; simt < 2; ++simt) {
    if (!simt && limits.compute_capability < 80) continue;  // no tensor-core path on this device
    fftconv::cuda::detail::SetComputeCapabilityCapForTesting(simt ? 75 : 0);
    for (const MatmulShape& s : shapes) {
      for (int fa = 0; fa < 4; ++fa) {
        for (int fb = 0; fb < 4; ++fb) {
          if (quick && s.m > 64 && (fa + fb) % 3 != 0) continue;
          SpectralMatmulParams p = MatmulCase(s, fa, fb);
          p.allow_tf32 = false;
          p.alpha = (fa + fb) % 3 == 0 ? 1.0f : ((fa + fb) % 3 == 1 ? 0.25f : 3.0f);
          CheckMatmulHalf<H>(p, simt ? "simt" : "mma ");
        }
      }
    }
  }
  fftconv::cuda::detail::SetComputeCapabilityCapForTesting(0);
}

void HalfSuite(bool quick) {
  HalfFftSuite<fftconv::cuda::Float16>(quick, "      ");
  HalfFftSuite<fftconv::cuda::BFloat16>(quick, "      ");
  fftconv::cuda::detail::SetSharedMemoryCapForTesting(48 * 1024);
  HalfFftSuite<fftconv::cuda::Float16>(true, "cap48K");
  HalfFftSuite<fftconv::cuda::BFloat16>(true, "cap48K");
  fftconv::cuda::detail::SetSharedMemoryCapForTesting(0);
  HalfMatmulSuite<fftconv::cuda::Float16>(quick);
  HalfMatmulSuite<fftconv::cuda::BFloat16>(quick);
}

void FastDivmodSuite() {
  bool ok = true;
  for (int t = 0; t < 2000 && ok; ++t) {
    const int d = t < 300 ? t + 1 : RandInt(1, 1 << 20);
    fftconv::cuda::detail::FastDivmod fd(d);
    for (int u = 0; u < 200; ++u) {
      const int n = u < 100 ? RandInt(0, 1 << 16) : RandInt(0, 0x7fffffff);
      int q, r;
      fd.DivMod(n, q, r);
      if (q != n / d || r != n % d) {
        ok = false;
        std::printf("FastDivmod mismatch d=%d n=%d\n", d, n);
        break;
      }
    }
  }
  Report(ok, "FastDivmod host check", 0, 0);
}

// ---------------------------------------------------------------------------------------------
// Timing.
template <typename F>
double MedianMs(F&& launch, int warmup = 5, int runs = 30) {
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  for (int i = 0; i < warmup; ++i) launch();
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> ms(runs);
  for (int i = 0; i < runs; ++i) {
    CUDA_OK(cudaEventRecord(start));
    launch();
    CUDA_OK(cudaEventRecord(stop));
    CUDA_OK(cudaEventSynchronize(stop));
    CUDA_OK(cudaEventElapsedTime(&ms[i], start, stop));
  }
  CUDA_OK(cudaEventDestroy(start));
  CUDA_OK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[runs / 2];
}

void CheckLaunch(int err) {
  if (err != 0) {
    std::fprintf(stderr, "launch failed: %s\n", fftconv::cuda::FftconvCudaErrorString(err));
    std::exit(2);
  }
}

// Holds the stream for `cycles` SM clock cycles (one thread spinning), so that the
// launches issued behind it are all queued before the first of them runs.
__global__ void HoldStream(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// Median time per launch of `launch(set)` issued back to back, kBatch launches per sample: the
// kernel's own time, without the host's launch latency that MedianMs' single launches include
// (3-10 us on the H200, a tenth of one of Mathieu's transforms or more). The stream is held
// (HoldStream) while a sample's launches are queued, and successive launches take successive
// buffer sets (`sets` of them, chosen by RotatedSets), so that a launch's operands were last
// touched at least three L2 sizes of traffic before it. Dependent launches are off meanwhile, so
// that no launch starts before the one before it has finished (no copy does); then back on, their
// default.
template <typename F>
double BackToBackMs(F&& launch, int sets) {
  constexpr int kBatch = 20, kSamples = 11;
  fftconv::cuda::detail::SetDependentLaunchForTesting(false);
  int device = 0, clock_khz = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  const long long hold_cycles = 2LL * clock_khz;  // about 2 ms at the reported clock (kHz)
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  int next = 0;
  for (int i = 0; i < 3; ++i) launch(next++ % sets);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> ms(kSamples);
  for (float& sample : ms) {
    HoldStream<<<1, 1>>>(hold_cycles);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaEventRecord(start));
    for (int i = 0; i < kBatch; ++i) launch(next++ % sets);
    CUDA_OK(cudaEventRecord(stop));
    CUDA_OK(cudaEventSynchronize(stop));
    CUDA_OK(cudaEventElapsedTime(&sample, start, stop));
    sample /= kBatch;
  }
  fftconv::cuda::detail::SetDependentLaunchForTesting(true);
  CUDA_OK(cudaEventDestroy(start));
  CUDA_OK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[kSamples / 2];
}

// Buffer sets that BackToBackMs rotates over for launches that move `bytes_moved` bytes: together
// at least three times the L2, and at least two.
int RotatedSets(size_t bytes_moved) {
  int device = 0, l2_bytes = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  const size_t sets = (3ull * l2_bytes + bytes_moved - 1) / std::max<size_t>(bytes_moved, 1);
  return static_cast<int>(std::max<size_t>(2, sets));
}

// Elements of T per buffer set in a rotated allocation: `count` rounded up to a multiple of 256
// bytes, so that every set keeps the alignment of the allocation's start.
template <typename T>
size_t SetStride(size_t count) {
  constexpr size_t kPerLine = 256 / sizeof(T);
  return (count + kPerLine - 1) / kPerLine * kPerLine;
}

// A transform's time measured both ways: a single launch between two events (MedianMs) and back to
// back (BackToBackMs).
struct LaunchTimes {
  double single_ms, back_to_back_ms;
};

// Read + write rates of a 256 MiB device-to-device copy, single launch and back to back (TimeCopy;
// 0 until it has run).
double g_copy_gbps = 0, g_copy_back_to_back_gbps = 0;

// Back-to-back time of a device-to-device copy that reads and writes `bytes_moved` / 2 bytes each,
// measured once per size: --time-fft times several transforms that move the same bytes.
double CopyBackToBackMs(size_t bytes_moved) {
  static std::map<size_t, double> measured;
  const auto found = measured.find(bytes_moved);
  if (found != measured.end()) return found->second;
  const size_t n = std::max<size_t>(bytes_moved / 2, 4);
  const int sets = RotatedSets(bytes_moved);
  const size_t stride = SetStride<unsigned char>(n);
  DeviceBuffer<unsigned char> a(stride * sets), b(stride * sets);
  CUDA_OK(cudaMemset(a.ptr, 0, stride * sets));
  return measured[bytes_moved] = BackToBackMs(
             [&](int set) {
               CUDA_OK(cudaMemcpyAsync(b.ptr + set * stride, a.ptr + set * stride, n, cudaMemcpyDeviceToDevice));
             },
             sets);
}

// One transform's line: its single-launch time and rate as a share of the 256 MiB copy's single-launch
// rate, then ("back to back") its time and rate without the launch latency, as a share of the 256
// MiB copy's back-to-back rate and of the back-to-back time of a copy that moves the same bytes.
void PrintTransformTime(const char* label, const LaunchTimes& t, size_t bytes_moved) {
  const auto gbps = [&](double ms) { return bytes_moved / 1e9 / (ms / 1e3); };
  const auto share = [](double rate, double copy_rate) { return copy_rate > 0 ? 100.0 * rate / copy_rate : 0.0; };
  const double same_ms = CopyBackToBackMs(bytes_moved);
  std::printf("TIME %-44s: %8.4f ms %3.0f%% of copy | back to back %7.4f ms %7.1f GB/s %3.0f%% of copy %3.0f%% of a "
              "%.1f MB copy (%.4f ms)\n",
              label, t.single_ms, share(gbps(t.single_ms), g_copy_gbps), t.back_to_back_ms, gbps(t.back_to_back_ms),
              share(gbps(t.back_to_back_ms), g_copy_back_to_back_gbps), 100.0 * same_ms / t.back_to_back_ms,
              bytes_moved / 2e6, same_ms);
}

// Times `launch(input, output)` of a transform that reads n_in and writes n_out floats, both ways,
// on random input (one buffer set per rotated set), and prints its line.
template <typename Launch>
void TimeTransform(const char* label, size_t n_in, size_t n_out, Launch&& launch) {
  const int sets = RotatedSets((n_in + n_out) * 4);
  const size_t in_stride = SetStride<float>(n_in), out_stride = SetStride<float>(n_out);
  DeviceBuffer<float> in(in_stride * sets), out(out_stride * sets);
  in.Upload(RandomVector<float>(in.count));
  const auto launch_set = [&](int set) { launch(in.ptr + set * in_stride, out.ptr + set * out_stride); };
  const LaunchTimes t{MedianMs([&] { launch_set(0); }), BackToBackMs(launch_set, sets)};
  PrintTransformTime(label, t, (n_in + n_out) * 4);
}

void TimeRfft(int B, int C, int H, int W, int S, bool nhwc) {
  Rfft2dParams p{B, C, H, W, S, 0, 0, nhwc};
  char label[96];
  std::snprintf(label, sizeof(label), "rfft2d  f32 %s [%d,%d,%d,%d] S=%d", nhwc ? "NHWC" : "NCHW", B, C, H, W, S);
  TimeTransform(label, static_cast<size_t>(B) * C * H * W, static_cast<size_t>(S) * (S / 2 + 1) * B * C * 2,
                [&](const float* x, float* y) { CheckLaunch(fftconv::cuda::LaunchRfft2d<float>(p, x, y, nullptr)); });
}

void TimeIrfft(int B, int C, int H, int W, int S, bool nhwc) {
  Irfft2dParams p{B, C, S, H, W, 0, 0, nhwc};
  char label[96];
  std::snprintf(label, sizeof(label), "irfft2d f32 %s S=%d -> [%d,%d,%d,%d]", nhwc ? "NHWC" : "NCHW", S, B, C, H, W);
  TimeTransform(label, static_cast<size_t>(S) * (S / 2 + 1) * B * C * 2, static_cast<size_t>(B) * C * H * W,
                [&](const float* x, float* y) { CheckLaunch(fftconv::cuda::LaunchIrfft2d<float>(p, x, y, nullptr)); });
}

// T: float (the label says whether TF32 was allowed) or a half type (its name), timed on random
// operands.
template <typename T>
void TimeMatmul(const char* label, SpectralMatmulParams p) {
  constexpr bool kFloat = std::is_same<T, float>::value;
  using Stored = typename std::conditional<kFloat, float, uint16_t>::type;
  const size_t na = static_cast<size_t>(p.bins) * p.m * p.k * 2, nb = static_cast<size_t>(p.bins) * p.k * p.n * 2,
               nc = static_cast<size_t>(p.bins) * p.m * p.n * 2;
  DeviceBuffer<Stored> a(na), b(nb), c(nc);
  if constexpr (kFloat) {
    a.Upload(RandomVector<float>(na));
    b.Upload(RandomVector<float>(nb));
  } else {
    std::vector<double> unused;
    a.Upload(RandomHalf<T>(na, &unused));
    b.Upload(RandomHalf<T>(nb, &unused));
  }
  const double ms = MedianMs([&] {
    CheckLaunch(fftconv::cuda::LaunchSpectralMatmul<T>(p, reinterpret_cast<const T*>(a.ptr),
                                                       reinterpret_cast<const T*>(b.ptr),
                                                       reinterpret_cast<T*>(c.ptr), nullptr));
  });
  const double flop = 8.0 * p.m * p.n * p.k * p.bins;
  const double gb = (na + nb + nc) * sizeof(Stored) / 1e9;
  char type[16];
  if constexpr (kFloat) {
    std::snprintf(type, sizeof(type), "tf32=%d", p.allow_tf32 ? 1 : 0);
  } else {
    std::snprintf(type, sizeof(type), "%s", HalfCodec<T>::Name());
  }
  std::printf("TIME matmul  %-16s %s bins=%d M=%d K=%d N=%d : %8.4f ms  %7.2f TFLOP/s  %7.1f GB/s\n", label, type,
              p.bins, p.m, p.k, p.n, ms, flop / (ms / 1e3) / 1e12, gb / (ms / 1e3));
}

void TimeCopy() {
  const size_t n = 64ull << 20;  // 256 MiB of floats
  double ms = 0;
  {
    DeviceBuffer<float> a(n), b(n);
    CUDA_OK(cudaMemset(a.ptr, 0, n * 4));
    ms = MedianMs([&] { CUDA_OK(cudaMemcpyAsync(b.ptr, a.ptr, n * 4, cudaMemcpyDeviceToDevice)); });
  }
  const double back_to_back_ms = CopyBackToBackMs(2 * n * 4);
  g_copy_gbps = 2.0 * n * 4 / 1e9 / (ms / 1e3);
  g_copy_back_to_back_gbps = 2.0 * n * 4 / 1e9 / (back_to_back_ms / 1e3);
  std::printf("TIME cudaMemcpy D2D 256 MiB (read + write)       : %8.4f ms  %7.1f GB/s | back to back %7.4f ms %7.1f GB/s\n",
              ms, g_copy_gbps, back_to_back_ms, g_copy_back_to_back_gbps);
}

// The six transforms of Mathieu's layer as the op runs them in training (NHWC activations, the
// weights [kh, kw, Cin, Cout] as one NHWC image of Cin * Cout channels): rfft x, rfft w, irfft y |
// rfft dy, irfft dx, irfft dw.
void MathieuTransforms(bool time) {
  const auto rfft = [&](int B, int C, int H, int W, bool nhwc, int S = 32) {
    if (time) return TimeRfft(B, C, H, W, S, nhwc);
    Rfft2dParams p{B, C, H, W, S, 0, 0, nhwc};
    const size_t n_in = static_cast<size_t>(B) * C * H * W, n_out = 2ull * S * (S / 2 + 1) * B * C;
    DeviceBuffer<float> x(n_in), y(n_out);
    x.Upload(RandomVector<float>(n_in));
    CheckLaunch(fftconv::cuda::LaunchRfft2d<float>(p, x.ptr, y.ptr, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
  };
  const auto irfft = [&](int B, int C, int H, int W, bool nhwc) {
    if (time) return TimeIrfft(B, C, H, W, 32, nhwc);
    Irfft2dParams p{B, C, 32, H, W, 0, 0, nhwc};
    const size_t n_in = 544ull * B * C * 2, n_out = static_cast<size_t>(B) * C * H * W;
    DeviceBuffer<float> x(n_in), y(n_out);
    x.Upload(RandomVector<float>(n_in));
    CheckLaunch(fftconv::cuda::LaunchIrfft2d<float>(p, x.ptr, y.ptr, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
  };
  rfft(128, 96, 32, 32, true);     // x
  rfft(1, 96 * 256, 7, 7, true);   // w [7, 7, 96, 256] as one NHWC image (fft_conv2d's weights)
  irfft(128, 256, 26, 26, true);   // y
  rfft(128, 256, 26, 26, true);    // dy
  irfft(128, 96, 32, 32, true);    // dx
  irfft(1, 96 * 256, 7, 7, true);  // dw, in the weights' layout
  // The weights as [Cout, Cin, kh, kw] images, for comparison.
  rfft(256, 96, 7, 7, false);
  irfft(256, 96, 7, 7, false);
  // The same activations in NCHW, for comparison.
  irfft(128, 256, 26, 26, false);
  rfft(128, 256, 26, 26, false);
  // Profiling only: x in a 64 frame, the forward of the frames above 32 (the staged strategy;
  // tools/kernel_turns.sh's x64).
  if (!time) rfft(128, 96, 32, 32, true, 64);
}

// ---------------------------------------------------------------------------------------------
// A convolution's train step as fft_conv2d runs it, launch after launch on one stream: NHWC
// activations, the weights [kh, kw, Cin, Cout] as one NHWC image of Cin * Cout channels, spectra
// stored rounded to TF32 and the TF32 products. Forward: rfft x, rfft w, Y = X conj(W'), irfft y;
// gradients: rfft dy, dX = dY W'^T, irfft dx, dW' = X^T conj(dY), irfft dw.
struct ConvStep {
  // pad = 0: VALID in a 32 frame; pad = (k - 1) / 2: SAME, the frame the smallest of fft_conv2d's
  // sizes that holds size + k - 1 (40 for Mathieu's SAME layer).
  int batch, cin, cout, size, kernel, pad, out, S, kBins;
  // Images: x [batch, size, size, cin], w [kernel, kernel, cin, cout], dy, y [batch, out, out, cout],
  // dx like x, dw like w. Spectra [kBins, rows, cols] complex: xs [., batch, cin], ws [., cin, cout],
  // ys and dys [., batch, cout], dxs [., batch, cin], dws [., cin, cout].
  DeviceBuffer<float> x, w, dy, xs, ws, ys, dys, dxs, dws, y, dx, dw;
  static int FrameFor(int h, int k, int pad) { return pad == 0 ? 32 : (h + k - 1 <= 32 ? 32 : 40); }
  ConvStep(int b, int ci, int co, int h, int k, int p = 0)
      : batch(b), cin(ci), cout(co), size(h), kernel(k), pad(p), out(h + 2 * p - k + 1),
        S(FrameFor(h, k, p)), kBins(S * (S / 2 + 1)),
        x(static_cast<size_t>(b) * h * h * ci), w(static_cast<size_t>(k) * k * ci * co),
        dy(static_cast<size_t>(b) * out * out * co), xs(2ull * kBins * b * ci), ws(2ull * kBins * ci * co),
        ys(2ull * kBins * b * co), dys(2ull * kBins * b * co), dxs(2ull * kBins * b * ci),
        dws(2ull * kBins * ci * co), y(dy.count), dx(x.count), dw(w.count) {
    x.Upload(RandomVector<float>(x.count));
    w.Upload(RandomVector<float>(w.count));
    dy.Upload(RandomVector<float>(dy.count));
    for (DeviceBuffer<float>* b : {&y, &dx, &dw}) b->Fill(0);  // their canaries, which Results checks
  }
  template <typename After>
  void Run(bool gradients, cudaStream_t stream, After each) {
    using namespace fftconv::cuda;
    Rfft2dParams fx{batch, cin, size, size, S, pad, pad, true, true};
    Rfft2dParams fw{1, cin * cout, kernel, kernel, S, 0, 0, true, true};
    SpectralMatmulParams forward{kBins, batch, cout, cin, false, false, false, false, true};
    forward.conjugate_b = true;
    forward.tf32_operands = true;
    Irfft2dParams iy{batch, cout, S, out, out, 0, 0, true};
    CheckLaunch(LaunchRfft2d<float>(fx, x.ptr, xs.ptr, stream)), each();
    CheckLaunch(LaunchRfft2d<float>(fw, w.ptr, ws.ptr, stream)), each();
    CheckLaunch(LaunchSpectralMatmul<float>(forward, xs.ptr, ws.ptr, ys.ptr, stream)), each();
    CheckLaunch(LaunchIrfft2d<float>(iy, ys.ptr, y.ptr, stream)), each();
    if (!gradients) return;
    Rfft2dParams fdy{batch, cout, out, out, S, 0, 0, true, true};
    SpectralMatmulParams input_grad{kBins, batch, cin, cout, false, false, true, false, true};
    input_grad.tf32_operands = true;
    Irfft2dParams idx{batch, cin, S, size, size, pad, pad, true};
    SpectralMatmulParams weight_grad{kBins, cin, cout, batch, true, false, false, false, true};
    weight_grad.conjugate_b = true;
    weight_grad.tf32_operands = true;
    Irfft2dParams idw{1, cin * cout, S, kernel, kernel, 0, 0, true};
    CheckLaunch(LaunchRfft2d<float>(fdy, dy.ptr, dys.ptr, stream)), each();
    CheckLaunch(LaunchSpectralMatmul<float>(input_grad, dys.ptr, ws.ptr, dxs.ptr, stream)), each();
    CheckLaunch(LaunchIrfft2d<float>(idx, dxs.ptr, dx.ptr, stream)), each();
    CheckLaunch(LaunchSpectralMatmul<float>(weight_grad, xs.ptr, dys.ptr, dws.ptr, stream)), each();
    CheckLaunch(LaunchIrfft2d<float>(idw, dws.ptr, dw.ptr, stream)), each();
  }
  // Every spectrum and result set to NaN on `stream`, so that a launch that read its input before
  // the launch writing it had finished reads NaN.
  void Poison(cudaStream_t stream) {
    for (DeviceBuffer<float>* b : {&xs, &ws, &ys, &dys, &dxs, &dws, &y, &dx, &dw}) {
      CUDA_OK(cudaMemsetAsync(b->ptr, 0xFF, b->count * sizeof(float), stream));
    }
  }
  std::vector<float> Results() {
    std::vector<float> all;
    for (DeviceBuffer<float>* b : {&y, &dx, &dw}) {
      bool canary_ok = false;
      std::vector<float> h = b->Download(&canary_ok);
      if (!canary_ok) h.assign(h.size(), std::nanf(""));
      all.insert(all.end(), h.begin(), h.end());
    }
    return all;
  }
};

// An empty kernel built with the same flags as the launchers' kernels, whose launch the check below
// asks DependentLaunchAllowed about.
__global__ void DependentLaunchProbe() {}

// Dependent launches (sm_90+): the train step's nine launches back to back, each allowed to start
// while the one before it runs, against the same launches each made after the one before had
// finished (a synchronisation in between, dependent launches off), bit for bit (rel_err: the count
// of results that differ). Three runs, every spectrum poisoned with NaN before each.
void DependentLaunchSuite(bool quick) {
  fftconv::cuda::detail::DeviceLimits limits;
  CUDA_OK(static_cast<cudaError_t>(fftconv::cuda::detail::CurrentDeviceLimits(&limits)));
  if (limits.compute_capability < 90) {
    std::printf("SKIP  dependent launches: sm_90+ only\n");
    return;
  }
  // Were they plain launches (the kernels' code not compiled for sm_90+), the runs below would
  // compare plain launches with plain launches.
  const bool dependent =
      fftconv::cuda::detail::DependentLaunchAllowed(reinterpret_cast<const void*>(DependentLaunchProbe));
  Report(dependent, "dependent launches: allowed for this build's kernels on this device", dependent ? 0 : 1, 0);
  // Quick: a small layer (staged transforms); else Mathieu's (pipelined transforms).
  ConvStep step = quick ? ConvStep(16, 24, 32, 32, 7) : ConvStep(128, 96, 256, 32, 7);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  fftconv::cuda::detail::SetDependentLaunchForTesting(false);
  step.Poison(stream);
  step.Run(true, stream, [&] { CUDA_OK(cudaStreamSynchronize(stream)); });
  const std::vector<float> expected = step.Results();
  const bool expected_finite =
      std::all_of(expected.begin(), expected.end(), [](float v) { return std::isfinite(v); });
  fftconv::cuda::detail::SetDependentLaunchForTesting(true);
  for (int run = 0; run < 3; ++run) {
    step.Poison(stream);
    step.Run(true, stream, [] {});
    CUDA_OK(cudaStreamSynchronize(stream));
    const std::vector<float> got = step.Results();
    size_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) differ += std::memcmp(&got[i], &expected[i], sizeof(float)) != 0;
    char name[160];
    std::snprintf(name, sizeof(name), "dependent launches: train step [%d,%d,%d,%d] k%d, 9 launches, run %d",
                  step.batch, step.size, step.size, step.cin, step.kernel, run);
    Report(differ == 0 && expected_finite, name, static_cast<double>(differ), 0);
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

// Mathieu's forward and train step as launch sequences, 20 steps per timed sample, with dependent
// launches off and on, in turns (three rounds).
void ChainTimingSuite() {
  for (const int pad : {0, 3}) {
  ConvStep step(128, 96, 256, 32, 7, pad);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  constexpr int kSteps = 20;
  for (int round = 0; round < 3; ++round) {
    for (const bool gradients : {false, true}) {
      for (const bool dependent : {false, true}) {
        fftconv::cuda::detail::SetDependentLaunchForTesting(dependent);
        cudaEvent_t start, stop;
        CUDA_OK(cudaEventCreate(&start));
        CUDA_OK(cudaEventCreate(&stop));
        for (int i = 0; i < 3; ++i) step.Run(gradients, stream, [] {});
        std::vector<float> ms(15);
        for (float& sample : ms) {
          CUDA_OK(cudaEventRecord(start, stream));
          for (int i = 0; i < kSteps; ++i) step.Run(gradients, stream, [] {});
          CUDA_OK(cudaEventRecord(stop, stream));
          CUDA_OK(cudaEventSynchronize(stop));
          CUDA_OK(cudaEventElapsedTime(&sample, start, stop));
        }
        CUDA_OK(cudaEventDestroy(start));
        CUDA_OK(cudaEventDestroy(stop));
        std::sort(ms.begin(), ms.end());
        std::printf("TIME chain %-8s Mathieu k7 %s S=%d, %d launches, dependent=%d, round %d : %8.4f ms per step (best %.4f)\n",
                    gradients ? "train" : "forward", pad ? "SAME" : "VALID", step.S, gradients ? 9 : 4, dependent ? 1 : 0, round,
                    ms[ms.size() / 2] / kSteps, ms[0] / kSteps);
      }
    }
  }
  CUDA_OK(cudaStreamDestroy(stream));
  }
  fftconv::cuda::detail::SetDependentLaunchForTesting(true);
}

void FftTimingSuite() {
  TimeCopy();
  MathieuTransforms(true);
  TimeRfft(128, 96, 26, 26, 32, false);
  TimeRfft(128, 96, 26, 26, 32, true);
  TimeRfft(128, 96, 32, 32, 32, false);
  TimeRfft(128, 96, 32, 32, 32, true);
  TimeRfft(256, 96, 7, 7, 32, false);
  TimeRfft(128, 64, 13, 13, 16, false);
  TimeRfft(128, 32, 56, 56, 64, false);
  TimeIrfft(128, 256, 26, 26, 32, false);
  TimeIrfft(128, 256, 26, 26, 32, true);
  TimeIrfft(128, 96, 32, 32, 32, false);
  TimeIrfft(128, 64, 16, 16, 16, false);
  TimeIrfft(128, 64, 16, 16, 16, true);
  TimeIrfft(128, 32, 56, 56, 64, false);
  // Mathieu's layer with SAME padding (32 + 7 - 1 = 38 samples): 40 and 48 frames against a 64 one.
  TimeRfft(128, 96, 32, 32, 40, false);
  TimeRfft(128, 96, 32, 32, 40, true);
  TimeRfft(128, 96, 32, 32, 48, false);
  TimeRfft(128, 96, 32, 32, 48, true);
  TimeRfft(128, 96, 32, 32, 64, true);
  TimeIrfft(128, 256, 32, 32, 40, false);
  TimeIrfft(128, 256, 32, 32, 40, true);
  TimeIrfft(128, 96, 32, 32, 40, true);
  TimeIrfft(128, 256, 32, 32, 48, true);
  TimeIrfft(128, 256, 32, 32, 64, true);
  TimeRfft(128, 32, 56, 56, 96, false);
}

// One launch of each main kernel (for a profiler run).
void ProfileSuite() {
  {
    Rfft2dParams p{128, 96, 26, 26, 32, 0, 0, false};
    const size_t n_in = 128ull * 96 * 26 * 26, n_out = 544ull * 128 * 96 * 2;
    DeviceBuffer<float> x(n_in), y(n_out);
    x.Upload(RandomVector<float>(n_in));
    CheckLaunch(fftconv::cuda::LaunchRfft2d<float>(p, x.ptr, y.ptr, nullptr));
    Irfft2dParams q{128, 96, 32, 26, 26, 0, 0, false};
    CheckLaunch(fftconv::cuda::LaunchIrfft2d<float>(q, y.ptr, x.ptr, nullptr));
  }
  // Mathieu's three products (TimingSuite's shapes), with TF32 and with FP32 arithmetic; every
  // operand buffer holds the largest of them, 544 x 256 x 128 complex values.
  const size_t n = 544ull * 256 * 128 * 2;
  DeviceBuffer<float> a(n), b(n), c(n);
  a.Upload(RandomVector<float>(n));
  b.Upload(RandomVector<float>(n));
  for (const bool tf32 : {true, false}) {
    const SpectralMatmulParams products[] = {{544, 128, 256, 96, false, false, false, true, tf32},
                                             {544, 128, 96, 256, false, false, false, false, tf32},
                                             {544, 256, 96, 128, false, true, false, false, tf32}};
    for (const SpectralMatmulParams& p : products) {
      CheckLaunch(fftconv::cuda::LaunchSpectralMatmul<float>(p, a.ptr, b.ptr, c.ptr, nullptr));
    }
  }
  CUDA_OK(cudaDeviceSynchronize());
}

void TimingSuite() {
  TimeCopy();
  TimeRfft(128, 96, 26, 26, 32, false);
  TimeRfft(128, 96, 26, 26, 32, true);
  TimeRfft(128, 96, 32, 32, 32, false);
  TimeRfft(128, 96, 32, 32, 32, true);
  TimeRfft(256, 96, 7, 7, 32, false);  // weights of Mathieu's layer, 7x7 into S = 32
  TimeRfft(128, 64, 13, 13, 16, false);
  TimeRfft(128, 32, 56, 56, 64, false);
  TimeIrfft(128, 256, 26, 26, 32, false);
  TimeIrfft(128, 256, 26, 26, 32, true);
  TimeIrfft(128, 96, 32, 32, 32, false);
  for (int tf32 = 0; tf32 < 2; ++tf32) {
    SpectralMatmulParams fwd{544, 128, 256, 96, false, false, false, true, tf32 != 0};
    SpectralMatmulParams dgrad{544, 128, 96, 256, false, false, false, false, tf32 != 0};
    SpectralMatmulParams wgrad{544, 256, 96, 128, false, true, false, false, tf32 != 0};
    TimeMatmul<float>("forward", fwd);
    TimeMatmul<float>("input-grad", dgrad);
    TimeMatmul<float>("weight-grad", wgrad);
    // The same products as fft_conv2d takes them, with the weights' spectrum W' [F, Cin, Cout] in
    // the weights' own layout: Y = X conj(W'), dX = dY W'^T, dW' = X^T conj(dY).
    SpectralMatmulParams fwd_hwio{544, 128, 256, 96, false, false, false, false, tf32 != 0};
    fwd_hwio.conjugate_b = true;
    SpectralMatmulParams dgrad_hwio{544, 128, 96, 256, false, false, true, false, tf32 != 0};
    SpectralMatmulParams wgrad_hwio{544, 96, 256, 128, true, false, false, false, tf32 != 0};
    wgrad_hwio.conjugate_b = true;
    TimeMatmul<float>("fwd W'", fwd_hwio);
    TimeMatmul<float>("dgrad W'", dgrad_hwio);
    TimeMatmul<float>("wgrad dW'", wgrad_hwio);
    if (tf32 == 0) {
      // FP32 on the SIMT kernel, as GPUs before sm_80 run it (capability capped at 75).
      fftconv::cuda::detail::SetComputeCapabilityCapForTesting(75);
      TimeMatmul<float>("fwd W' simt", fwd_hwio);
      TimeMatmul<float>("dgrad W' simt", dgrad_hwio);
      TimeMatmul<float>("wgrad dW' simt", wgrad_hwio);
      fftconv::cuda::detail::SetComputeCapabilityCapForTesting(0);
    }
  }
  // Batch 32: the forward and input-gradient products have 32 rows (computed transposed).
  SpectralMatmulParams batch32_fwd{60, 32, 512, 512, false, false, false, true, true};     // 8x8 in S = 10
  SpectralMatmulParams batch32_dgrad{220, 32, 256, 512, false, false, false, false, true};  // 16x16 in S = 20
  TimeMatmul<float>("batch32 fwd", batch32_fwd);
  TimeMatmul<float>("batch32 dgrad", batch32_dgrad);
  SpectralMatmulParams tiny1{544, 128, 6, 1, false, false, false, true, true};
  SpectralMatmulParams tiny2{544, 128, 16, 6, false, false, false, true, true};
  TimeMatmul<float>("tiny K=1", tiny1);
  TimeMatmul<float>("tiny K=6", tiny2);
  // Mathieu's three products in float16 (the half kernels ignore the TF32 switch).
  TimeMatmul<fftconv::cuda::Float16>("forward", SpectralMatmulParams{544, 128, 256, 96, false, false, false, true, true});
  TimeMatmul<fftconv::cuda::Float16>("input-grad", SpectralMatmulParams{544, 128, 96, 256, false, false, false, false, true});
  TimeMatmul<fftconv::cuda::Float16>("weight-grad", SpectralMatmulParams{544, 256, 96, 128, false, true, false, false, true});
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, timing = false, check = true, fft_timing = false, chain_timing = false, profile = false,
       profile_fft = false;
  // --family runs one family of the correctness suite, so that a slow compute-sanitizer tool
  // (racecheck tracks every shared-memory access) can finish each family within its own limit;
  // --half is --family half.
  std::string family = "all";
  unsigned long long seed = static_cast<unsigned long long>(
      std::chrono::high_resolution_clock::now().time_since_epoch().count());
  // The modes that run instead of the correctness suite.
  const std::pair<const char*, bool*> instead_of_check[] = {{"--time", &timing},
                                                            {"--time-fft", &fft_timing},
                                                            {"--time-chain", &chain_timing},
                                                            {"--profile", &profile},
                                                            {"--profile-fft", &profile_fft}};
  for (int i = 1; i < argc; ++i) {
    const auto mode = std::find_if(std::begin(instead_of_check), std::end(instead_of_check),
                                   [&](const auto& flag) { return !std::strcmp(argv[i], flag.first); });
    if (mode != std::end(instead_of_check)) {
      *mode->second = true;
      check = false;
    } else if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--all")) {
      timing = true;
      check = true;
    } else if (!std::strcmp(argv[i], "--half")) {
      family = "half";
    } else if (!std::strcmp(argv[i], "--failures-only")) {
      g_verbose = false;
    } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--family") && i + 1 < argc) {
      family = argv[++i];
    } else {
      family = "";   // not a valid family either: print the usage
      break;
    }
  }
  if (family != "all" && family != "fft" && family != "matmul" && family != "half") {
    std::fprintf(stderr,
                 "usage: %s [--quick] [--half] [--family all|fft|matmul|half] "
                 "[--time|--time-fft|--time-chain|--profile|--profile-fft|--all] [--failures-only] [--seed N]\n",
                 argv[0]);
    return 2;
  }
  const bool run_fft = family == "all" || family == "fft";
  const bool run_matmul = family == "all" || family == "matmul";
  const bool run_half = family == "all" || family == "half";
  g_rng.seed(seed);
  cudaDeviceProp prop;
  int dev = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaGetDeviceProperties(&prop, dev));
  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  std::printf("device: %s (sm_%d%d, %d SMs, %.0f KiB smem/block opt-in)  date: %s  seed: %llu\n", prop.name,
              prop.major, prop.minor, prop.multiProcessorCount, prop.sharedMemPerBlockOptin / 1024.0, date, seed);

  if (check) {
    if (run_fft) {
      FastDivmodSuite();
      FftSuite<float>(quick, "      ");
      FftSuite<double>(quick, "      ");
      // The pipelined transforms with grids of one and of three blocks, each block then looping over
      // several groups of images (the three-block grid on the suite's batches, whose up to 300 images
      // make more groups than three); then float on the kernels of GPUs before sm_80 (no pipelined
      // strategy).
      for (int blocks : {1, 3}) {
        fftconv::cuda::detail::SetPersistentBlocksCapForTesting(blocks);
        FftSuite<float>(blocks == 1 || quick, blocks == 1 ? "grid1 " : "grid3 ");
      }
      fftconv::cuda::detail::SetPersistentBlocksCapForTesting(0);
      fftconv::cuda::detail::SetComputeCapabilityCapForTesting(75);
      FftSuite<float>(true, "sm75  ");
      // The pipelined strategy's NHWC stage filled by every thread's copies, as on sm_80 to sm_89
      // (sm_90+: one tensor copy per group where the block shape allows it), in grids of three
      // blocks: the pipelined strategy needs more groups than blocks, which the suite's batches have
      // only against such a grid.
      fftconv::cuda::detail::SetComputeCapabilityCapForTesting(80);
      fftconv::cuda::detail::SetPersistentBlocksCapForTesting(3);
      FftSuite<float>(quick, "sm80  ");
      fftconv::cuda::detail::SetPersistentBlocksCapForTesting(0);
      fftconv::cuda::detail::SetComputeCapabilityCapForTesting(0);
      // Strategies for devices with less shared memory (sm_75: 64 KiB, sm_60: 48 KiB).
      for (int cap : {64 * 1024, 48 * 1024}) {
        fftconv::cuda::detail::SetSharedMemoryCapForTesting(cap);
        const char* tag = cap == 64 * 1024 ? "cap64K" : "cap48K";
        if (!quick || cap == 48 * 1024) {
          FftSuite<float>(true, tag);
          FftSuite<double>(true, tag);
        }
      }
      fftconv::cuda::detail::SetSharedMemoryCapForTesting(0);
      Tf32SpectraSuite(quick);
    }
    if (run_matmul) {
      MatmulSuite<float>(quick);
      MatmulSuite<double>(quick);
      Tf32OperandsSuite(quick);
    }
    if (run_half) HalfSuite(quick);
    if (run_fft && run_matmul) DependentLaunchSuite(quick);
    std::printf("SUMMARY: %d passed, %d failed\n", g_pass, g_fail);
  }
  if (timing) TimingSuite();
  if (fft_timing) FftTimingSuite();
  if (chain_timing) ChainTimingSuite();
  if (profile) ProfileSuite();
  if (profile_fft) MathieuTransforms(false);
  return g_fail == 0 ? 0 : 1;
}
