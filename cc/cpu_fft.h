// Tables of the CPU FFTs, sizes kMinFftSize .. kMaxFftSize (powers of two): the roots of unity and
// the bit-reversal permutation. The butterflies themselves are in cc/cpu_kernels_impl.h, compiled
// once per instruction set; these tables are plain data, shared by all of them.
//
// Twiddles are computed in double precision and rounded once to Real, which keeps the float32 error
// of a 2-D transform near 1e-7 relative.
#ifndef TF_FFTCONV_CC_CPU_FFT_H_
#define TF_FFTCONV_CC_CPU_FFT_H_

#include <cmath>
#include <vector>

#include "cc/fftconv_params.h"

namespace fftconv {

template <typename Real>
struct FftTables {
  explicit FftTables(int n) : size(n), cos(n), sin(n), bit_reversed(n) {
    const int log2n = Log2(n);
    for (int t = 0; t < n; ++t) {
      // exp(-2 pi i t / n) = cos[t] + i sin[t], for every t < n (radix-4 steps use up to 3n/4).
      const double angle = -2.0 * M_PI * t / n;
      cos[t] = static_cast<Real>(std::cos(angle));
      sin[t] = static_cast<Real>(std::sin(angle));
      int r = 0;
      for (int bit = 0; bit < log2n; ++bit) r |= ((t >> bit) & 1) << (log2n - 1 - bit);
      bit_reversed[t] = r;
    }
  }

  int size;
  std::vector<Real> cos, sin;
  // A decimation-in-frequency FFT leaves output k at position bit_reversed[k] (an involution).
  std::vector<int> bit_reversed;
};

// The tables for size n (a power of two in [kMinFftSize, kMaxFftSize]), built once per process.
template <typename Real>
const FftTables<Real>& GetFftTables(int n) {
  static const std::vector<FftTables<Real>>* tables = [] {
    auto* all = new std::vector<FftTables<Real>>();
    for (int size = 1; size <= kMaxFftSize; size <<= 1) all->emplace_back(size);
    return all;
  }();
  return (*tables)[Log2(n)];
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_CPU_FFT_H_
