// Radix-2 complex FFT for the CPU kernels, sizes 1 .. kMaxFftSize (powers of two).
//
// O(n log n) in place: bit-reversal permutation, then log2(n) butterfly stages. Twiddles are
// computed once per size in double precision and rounded to Real, which keeps the float32 error of
// a 2-D transform near 1e-7 relative.
#ifndef TF_FFTCONV_CC_CPU_FFT_H_
#define TF_FFTCONV_CC_CPU_FFT_H_

#include <cmath>
#include <complex>
#include <vector>

#include "cc/fftconv_params.h"

namespace fftconv {

template <typename Real>
class FftPlan {
 public:
  using Complex = std::complex<Real>;

  explicit FftPlan(int n) : n_(n), bit_reversed_(n), twiddles_(n / 2 > 0 ? n / 2 : 1) {
    const int log2n = Log2(n);
    for (int i = 0; i < n; ++i) {
      int r = 0;
      for (int bit = 0; bit < log2n; ++bit) r |= ((i >> bit) & 1) << (log2n - 1 - bit);
      bit_reversed_[i] = r;
    }
    // twiddles_[j] = exp(-2 pi i j / n), j < n/2.
    for (int j = 0; j < n / 2; ++j) {
      const double angle = -2.0 * M_PI * j / n;
      twiddles_[j] = Complex(static_cast<Real>(std::cos(angle)), static_cast<Real>(std::sin(angle)));
    }
  }

  int size() const { return n_; }

  // data[k] <- sum_j data[j] exp(-2 pi i jk / n)
  void Forward(Complex* data) const { Transform(data, /*inverse=*/false); }
  // data[k] <- sum_j data[j] exp(+2 pi i jk / n)   (unscaled)
  void Inverse(Complex* data) const { Transform(data, /*inverse=*/true); }

 private:
  void Transform(Complex* data, bool inverse) const {
    for (int i = 0; i < n_; ++i) {
      const int r = bit_reversed_[i];
      if (r > i) std::swap(data[i], data[r]);
    }
    for (int len = 2; len <= n_; len <<= 1) {
      const int half = len / 2;
      const int stride = n_ / len;
      for (int start = 0; start < n_; start += len) {
        for (int j = 0; j < half; ++j) {
          const Complex w = inverse ? std::conj(twiddles_[j * stride]) : twiddles_[j * stride];
          const Complex u = data[start + j];
          const Complex v = data[start + j + half] * w;
          data[start + j] = u + v;
          data[start + j + half] = u - v;
        }
      }
    }
  }

  int n_;
  std::vector<int> bit_reversed_;
  std::vector<Complex> twiddles_;
};

// The plan for size n (a power of two <= kMaxFftSize), built once per process.
template <typename Real>
const FftPlan<Real>& GetFftPlan(int n) {
  static const std::vector<FftPlan<Real>>* plans = [] {
    auto* all = new std::vector<FftPlan<Real>>();
    for (int size = 1; size <= kMaxFftSize; size <<= 1) all->emplace_back(size);
    return all;
  }();
  return (*plans)[Log2(n)];
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_CPU_FFT_H_
