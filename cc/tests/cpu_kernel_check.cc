// Standalone check and timer of the tf_fftconv CPU kernels (cc/cpu_kernels.cc; no TensorFlow).
//
// The check runs the three kernels on shapes that reach every path of their lane layout (many lane
// groups and a partial last one, NCHW and NHWC with 1, 6, 11 and 35 channels (35: two groups of 16
// adjacent channels, the AVX-512 copy's whole-vector NHWC path; 6 and 11: groups that span batch
// items, read by gathers and written by scatters where the copy has them), odd heights, offsets,
// every transpose, adjoint and conjugate flag, long k) on fresh random inputs and compares with a
// float64 direct DFT or product by ||out - ref|| / ||ref||. Prints the worst error per kernel and
// dtype as a multiple of its tolerance; exit status 1 if one exceeds it. The timer runs each op of
// the fft train step of the four CPU cases (the bench's `cpu` preset) alone, best of --repeats, on
// --threads threads started for each call (so small ops gain less from a second thread than in
// TensorFlow's pool).
//
//   build : make cpu-kernel-check
//   run   : build/cpu_kernel_check --check             correctness
//           build/cpu_kernel_check --time [--threads N] [--repeats R]
//           TF_FFTCONV_CPU_KERNELS=generic|avx2|avx512 build/cpu_kernel_check ...   one copy (the
//           widest the CPU has up to it; the first line names the copy that ran)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cc/fftconv_cpu.h"
#include "cc/fftconv_shapes.h"

using namespace fftconv;
using cd = std::complex<double>;

namespace {

// Blocks of units handed out to `threads` threads (the caller is one of them).
ParallelRunner ThreadRunner(int threads) {
  return [threads](int64_t units, int64_t, const std::function<void(int64_t, int64_t)>& work) {
    const int64_t blocks = std::min<int64_t>(units, int64_t{4} * threads);
    if (threads <= 1 || blocks <= 1) {
      work(0, units);
      return;
    }
    std::atomic<int64_t> next{0};
    auto run = [&] {
      for (int64_t b; (b = next.fetch_add(1)) < blocks;) {
        work(b * units / blocks, (b + 1) * units / blocks);
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(run);
    run();
    for (auto& thread : pool) thread.join();
  };
}

std::mt19937_64 rng;

template <typename T>
std::vector<T> RandomReal(size_t n) {
  std::normal_distribution<double> normal;
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(normal(rng));
  return v;
}

template <typename T>
std::vector<std::complex<T>> RandomComplex(size_t n) {
  std::normal_distribution<double> normal;
  std::vector<std::complex<T>> v(n);
  for (auto& x : v) x = {static_cast<T>(normal(rng)), static_cast<T>(normal(rng))};
  return v;
}

cd Twiddle(int64_t t, int n, int sign) {  // exp(sign 2 pi i t / n), t reduced exactly
  const double angle = sign * 2 * M_PI * static_cast<double>(((t % n) + n) % n) / n;
  return {std::cos(angle), std::sin(angle)};
}

struct Error {
  double diff = 0, ref = 0;
  void Add(cd out, cd expected) {
    diff += std::norm(out - expected);
    ref += std::norm(expected);
  }
  double Relative() const { return ref > 0 ? std::sqrt(diff / ref) : std::sqrt(diff); }
};

template <typename T>
double CheckRfft2d(const ParallelRunner& parallel, const Rfft2dParams& p) {
  const int n = p.fft_size, half = n / 2 + 1;
  const int64_t images = int64_t{p.batch} * p.channels;
  const auto x = RandomReal<T>(images * p.height * p.width);
  std::vector<std::complex<T>> spectrum(NumBins(n) * images, std::complex<T>(NAN, NAN));
  Rfft2dOnCpu<T>(parallel, p, x.data(), spectrum.data());
  Error error;
  for (int64_t image = 0; image < images; ++image) {
    for (int ky = 0; ky < n; ++ky) {
      for (int kx = 0; kx < half; ++kx) {
        cd expected = 0;
        for (int h = 0; h < p.height; ++h) {
          for (int w = 0; w < p.width; ++w) {
            const double value = x[ImageElementOffset(p.nhwc, p.channels, p.height, p.width,
                                                      image / p.channels, image % p.channels, h, w)];
            expected += value * Twiddle(int64_t{ky} * (h + p.offset_h) +
                                            int64_t{kx} * (w + p.offset_w), n, -1);
          }
        }
        error.Add(cd(spectrum[BinIndex(n, ky, kx) * images + image]), expected);
      }
    }
  }
  return error.Relative();
}

template <typename T>
double CheckIrfft2d(const ParallelRunner& parallel, const Irfft2dParams& p) {
  const int n = p.fft_size, half = n / 2 + 1;
  const int64_t images = int64_t{p.batch} * p.channels;
  const auto spectrum = RandomComplex<T>(NumBins(n) * images);
  std::vector<T> y(images * p.out_h * p.out_w, T(NAN));
  Irfft2dOnCpu<T>(parallel, p, spectrum.data(), y.data());
  Error error;
  std::vector<cd> columns(half);
  for (int64_t image = 0; image < images; ++image) {
    for (int i = 0; i < p.out_h; ++i) {
      for (int kx = 0; kx < half; ++kx) {  // inverse over ky of column kx at frame row offset_h + i
        columns[kx] = 0;
        for (int ky = 0; ky < n; ++ky) {
          columns[kx] += cd(spectrum[BinIndex(n, ky, kx) * images + image]) *
                         Twiddle(int64_t{ky} * (i + p.offset_h), n, 1);
        }
      }
      for (int j = 0; j < p.out_w; ++j) {  // complex to real over kx, as numpy.fft.irfft
        double expected = 0;
        for (int kx = 0; kx < half; ++kx) {
          const cd twiddle = Twiddle(int64_t{kx} * (j + p.offset_w), n, 1);
          // The kx = 0 and S/2 columns count once, their imaginary parts ignored; the others twice.
          expected += (kx == 0 || kx == n / 2) ? columns[kx].real() * twiddle.real()
                                               : 2 * (columns[kx] * twiddle).real();
        }
        expected /= double(n) * n;
        error.Add(y[ImageElementOffset(p.nhwc, p.channels, p.out_h, p.out_w, image / p.channels,
                                       image % p.channels, i, j)],
                  expected);
      }
    }
  }
  return error.Relative();
}

template <typename T>
double CheckSpectralMatmul(const ParallelRunner& parallel, const SpectralMatmulParams& p) {
  const bool swap_a = p.transpose_a || p.adjoint_a, swap_b = p.transpose_b || p.adjoint_b;
  const int64_t a_size = int64_t{p.m} * p.k, b_size = int64_t{p.k} * p.n;
  const auto a = RandomComplex<T>(p.bins * a_size), b = RandomComplex<T>(p.bins * b_size);
  std::vector<std::complex<T>> c(int64_t{p.bins} * p.m * p.n, std::complex<T>(NAN, NAN));
  SpectralMatmulOnCpu<T>(parallel, p, a.data(), b.data(), c.data());
  Error error;
  for (int64_t bin = 0; bin < p.bins; ++bin) {
    for (int m = 0; m < p.m; ++m) {
      for (int n = 0; n < p.n; ++n) {
        cd expected = 0;
        for (int k = 0; k < p.k; ++k) {
          cd x = a[bin * a_size + (swap_a ? int64_t{k} * p.m + m : int64_t{m} * p.k + k)];
          cd y = b[bin * b_size + (swap_b ? int64_t{n} * p.k + k : int64_t{k} * p.n + n)];
          if (p.adjoint_a || p.conjugate_a) x = std::conj(x);
          if (p.adjoint_b || p.conjugate_b) y = std::conj(y);
          expected += x * y;
        }
        error.Add(cd(c[(bin * p.m + m) * p.n + n]), expected);
      }
    }
  }
  return error.Relative();
}

// The worst error of each kernel and dtype over the shapes, as a multiple of its tolerance (that of
// tests/test_ops.py; for the matmul in float, times sqrt(k / 64) past k = 64, as a float sum's error
// grows as sqrt(k)); false if one exceeds it.
bool Check(const ParallelRunner& parallel) {
  double worst[3][2] = {};  // [rfft, irfft, matmul][float, double], error / tolerance
  for (bool nhwc : {false, true}) {
    for (auto [batch, channels] : {std::pair{5, 11}, {37, 1}, {9, 6}, {3, 35}}) {
      for (auto [n, height, width, offset_h, offset_w] :
           {std::array{8, 7, 5, 1, 2}, {16, 13, 11, 2, 3}, {32, 32, 32, 0, 0}, {32, 9, 26, 20, 1},
            // 3 * 2^k frames: a radix-3 pass before the power-of-two ones (the references sum
            // over every pixel for every bin, so the large frames hold narrow images).
            {6, 6, 6, 0, 0}, {6, 3, 4, 2, 1}, {12, 11, 7, 1, 4}, {24, 24, 24, 0, 0},
            {48, 38, 11, 5, 30}, {96, 5, 61, 88, 33},
            // 5 * 2^k frames: a radix-5 pass before the power-of-two ones.
            {10, 10, 10, 0, 0}, {10, 3, 7, 6, 2}, {20, 19, 7, 1, 5}, {40, 37, 3, 2, 33},
            {80, 3, 11, 74, 66}}) {
        const Rfft2dParams rfft{batch, channels, height, width, n, offset_h, offset_w, nhwc};
        const Irfft2dParams irfft{batch, channels, n, height, width, offset_h, offset_w, nhwc};
        worst[0][0] = std::max(worst[0][0], CheckRfft2d<float>(parallel, rfft) / 2e-6);
        worst[0][1] = std::max(worst[0][1], CheckRfft2d<double>(parallel, rfft) / 1e-12);
        worst[1][0] = std::max(worst[1][0], CheckIrfft2d<float>(parallel, irfft) / 2e-6);
        worst[1][1] = std::max(worst[1][1], CheckIrfft2d<double>(parallel, irfft) / 1e-12);
      }
    }
  }
  for (auto [bins, m, k, n] :
       {std::array{35, 19, 7, 13}, {13, 3, 700, 5}, {40, 64, 1, 6}, {9, 3, 0, 2}}) {
    // Modes: 0 none, 1 transpose, 2 adjoint, 3 conjugate, 4 transpose and conjugate.
    for (int flags = 0; flags < 25; ++flags) {
      const int mode_a = flags / 5, mode_b = flags % 5;
      SpectralMatmulParams params{bins, m, n, k, mode_a == 1 || mode_a == 4, mode_a == 2,
                                  mode_b == 1 || mode_b == 4, mode_b == 2, false};
      params.conjugate_a = mode_a >= 3;
      params.conjugate_b = mode_b >= 3;
      const double float_tolerance = 1e-6 * std::sqrt(std::max(1.0, k / 64.0));
      worst[2][0] =
          std::max(worst[2][0], CheckSpectralMatmul<float>(parallel, params) / float_tolerance);
      worst[2][1] = std::max(worst[2][1], CheckSpectralMatmul<double>(parallel, params) / 1e-13);
    }
  }
  const char* names[3] = {"rfft2d", "irfft2d", "spectral_matmul"};
  bool ok = true;
  for (int kernel = 0; kernel < 3; ++kernel) {
    for (int real = 0; real < 2; ++real) {
      const bool pass = worst[kernel][real] <= 1;
      ok = ok && pass;
      std::printf("%s %-15s %-6s worst rel err / tolerance %.3g\n", pass ? "PASS" : "FAIL",
                  names[kernel], real ? "double" : "float", worst[kernel][real]);
    }
  }
  return ok;
}

template <typename F>
double BestMs(int repeats, F&& run) {
  run();
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  return best;
}

// The ops of fft_conv2d's train step (tf_fftconv/conv.py) for the bench's `cpu` cases, NHWC
// float32, VALID, each alone.
void Time(const ParallelRunner& parallel, int repeats) {
  struct Case { int batch, cin, cout, size, k; };
  for (const Case c :
       {Case{16, 32, 64, 32, 7}, {16, 32, 64, 32, 13}, {64, 1, 6, 32, 5}, {64, 6, 16, 14, 5}}) {
    int n = kMinFftSize;  // the frame of a VALID convolution: the smallest power of two >= size
    while (n < c.size) n *= 2;
    const int bins = static_cast<int>(NumBins(n)), out = c.size - c.k + 1;
    const auto x = RandomReal<float>(size_t(c.batch) * c.size * c.size * c.cin);
    const auto w = RandomReal<float>(size_t(c.cout) * c.cin * c.k * c.k);  // [k, k, Cin, Cout]
    const auto dy = RandomReal<float>(size_t(c.batch) * out * out * c.cout);
    // Spectra [bins, images], complex; x, dy, y, dx NHWC; w, dw [k, k, Cin, Cout], one NHWC image
    // of Cin * Cout channels, whose spectrum is [bins, Cin, Cout] (as conv.py's).
    std::vector<std::complex<float>> xs(size_t(bins) * c.batch * c.cin),
        ws(size_t(bins) * c.cout * c.cin), ys(size_t(bins) * c.batch * c.cout), dys(ys.size()),
        dxs(xs.size()), dws(ws.size());
    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
    using Images = std::vector<float>;
    using Spectrum = std::vector<std::complex<float>>;
    auto rfft = [&](Rfft2dParams p, const Images& in, Spectrum& s) {
      return [&, p] { Rfft2dOnCpu<float>(parallel, p, in.data(), s.data()); };
    };
    auto irfft = [&](Irfft2dParams p, const Spectrum& s, Images& o) {
      return [&, p] { Irfft2dOnCpu<float>(parallel, p, s.data(), o.data()); };
    };
    auto matmul = [&](SpectralMatmulParams p, const Spectrum& a, const Spectrum& b, Spectrum& o) {
      return [&, p] { SpectralMatmulOnCpu<float>(parallel, p, a.data(), b.data(), o.data()); };
    };
    struct Op { const char* name; std::function<void()> run; };
    const bool no = false, yes = true;
    const int weights = c.cin * c.cout;
    // Flags: transpose_a, adjoint_a, transpose_b, adjoint_b, allow_tf32, alpha, conjugate_a,
    // conjugate_b.
    const Op ops[] = {
        {"rfft x", rfft({c.batch, c.cin, c.size, c.size, n, 0, 0, true}, x, xs)},
        {"rfft w", rfft({1, weights, c.k, c.k, n, 0, 0, true}, w, ws)},
        {"matmul y = x w^H",
         matmul({bins, c.batch, c.cout, c.cin, no, no, no, no, false, 1.0f, no, yes}, xs, ws, ys)},
        {"irfft y", irfft({c.batch, c.cout, n, out, out, 0, 0, true}, ys, y)},
        {"rfft dy", rfft({c.batch, c.cout, out, out, n, 0, 0, true}, dy, dys)},
        {"matmul dx = dy w",
         matmul({bins, c.batch, c.cin, c.cout, no, no, yes, no, false}, dys, ws, dxs)},
        {"irfft dx", irfft({c.batch, c.cin, n, c.size, c.size, 0, 0, true}, dxs, dx)},
        {"matmul dw = dy^H x",
         matmul({bins, c.cin, c.cout, c.batch, yes, no, no, no, false, 1.0f, no, yes}, xs, dys,
                dws)},
        {"irfft dw", irfft({1, weights, n, c.k, c.k, 0, 0, true}, dws, dw)},
    };
    std::printf("%dx%d->%d %dx%d k%d (S = %d), ms, best of %d:\n", c.batch, c.cin, c.cout, c.size,
                c.size, c.k, n, repeats);
    double total = 0;
    for (const Op& op : ops) {
      const double ms = BestMs(repeats, op.run);
      total += ms;
      std::printf("  %-20s %8.3f\n", op.name, ms);
    }
    std::printf("  %-20s %8.3f\n", "sum", total);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool check = false, time = false;
  int threads = 1, repeats = 20;
  uint64_t seed = static_cast<uint64_t>(std::time(nullptr));
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--check") check = true;
    else if (arg == "--time") time = true;
    else if (arg == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (arg == "--repeats" && i + 1 < argc) repeats = std::atoi(argv[++i]);
    else if (arg == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: %s [--check] [--time] [--threads N] [--repeats R] [--seed S]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!check && !time) check = true;
  rng.seed(seed);
  const char* forced = std::getenv("TF_FFTCONV_CPU_KERNELS");
  std::printf("cpu kernels: %s (asked: %s); %d thread(s); seed %llu\n", CpuKernelsName(),
              forced ? forced : "auto", threads, static_cast<unsigned long long>(seed));
  const ParallelRunner parallel = ThreadRunner(threads);
  bool ok = true;
  if (check) ok = Check(parallel);
  if (time) Time(parallel, repeats);
  return ok ? 0 : 1;
}
