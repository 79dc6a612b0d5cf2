// Tables of the CPU FFTs, one per allowed size (kFftSizes: powers of two, 3 * 2^k and 5 * 2^k): the
// roots of unity and where a decimation-in-frequency FFT leaves each output. The butterflies
// themselves are in cc/cpu_kernels_impl.h, compiled once per instruction set; these tables are
// plain data, shared by all of them.
//
// Twiddles are computed in double precision and rounded once to Real, which keeps the float32 error
// of a 2-D transform near 1e-7 relative (and float64 near 1e-15).
#ifndef TF_FFTCONV_CC_CPU_FFT_H_
#define TF_FFTCONV_CC_CPU_FFT_H_

#include <cmath>
#include <vector>

#include "include/fftconv_params.h"

namespace fftconv {

template <typename Real>
struct FftTables {
  explicit FftTables(int n)
      : size(n), odd_radix(OddFftFactor(n)), cos(n), sin(n), output_position(n) {
    // The power-of-two length of the sub-transforms after the radix-3 or radix-5 stage (n itself
    // without one).
    const int sub = n / odd_radix;
    const int log2sub = Log2(sub);
    for (int t = 0; t < n; ++t) {
      // exp(-2 pi i t / n) = cos[t] + i sin[t], for every t < n (radix-4 steps use up to 3n/4).
      const double angle = -2.0 * M_PI * t / n;
      cos[t] = static_cast<Real>(std::cos(angle));
      sin[t] = static_cast<Real>(std::sin(angle));
    }
    // A radix-m DIF stage (m = odd_radix, 3 or 5) sends outputs k = m q + r to sub-transform r
    // (points [r sub, (r+1) sub)), whose power-of-two DIF leaves its output q at bit-reversed
    // position. Without one (m = 1) r is 0 and this is the plain bit reversal (an involution; the
    // mixed one is not).
    for (int k = 0; k < n; ++k) {
      const int q = k / odd_radix, r = k % odd_radix;
      int reversed = 0;
      for (int bit = 0; bit < log2sub; ++bit) reversed |= ((q >> bit) & 1) << (log2sub - 1 - bit);
      output_position[k] = r * sub + reversed;
    }
  }

  int size;
  // size = odd_radix * 2^k: 3 or 5, one radix-3 or radix-5 stage before the power-of-two passes;
  // 1 for the powers of two.
  int odd_radix;
  std::vector<Real> cos, sin;
  // A decimation-in-frequency FFT (FftDif) leaves output k at position output_position[k].
  std::vector<int> output_position;
};

// The tables for size n (one of kFftSizes), built once per process.
template <typename Real>
const FftTables<Real>& GetFftTables(int n) {
  static const std::vector<FftTables<Real>>* tables = [] {
    auto* all = new std::vector<FftTables<Real>>();
    for (int size : kFftSizes) all->emplace_back(size);
    return all;
  }();
  for (const FftTables<Real>& t : *tables) {
    if (t.size == n) return t;
  }
  return tables->front();  // unreachable: every caller's size was validated
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_CPU_FFT_H_
