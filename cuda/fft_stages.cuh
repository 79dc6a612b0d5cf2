// The FFT's own building blocks, shared by the forward and inverse small-FFT kernels (cuda/rfft2d.cu,
// cuda/irfft2d.cu): twiddles, the register FFT, the cross-lane (warp shuffle) stages, the one place
// where tensor / spectrum / shared-memory offsets are computed, the block shapes of the
// configurations (cuda/kernel_config.h), the pipelined strategy's loops, and the host-side launch
// code of the two transforms. Built on cuda/complex_math.cuh and cuda/hardware.cuh.
//
// A length-S transform is spread over L lanes of a warp (L = 1 keeps it in one thread), L a power of
// two and P = S / L points per lane:
//   input  : lane l, register p holds element p * L + l            (InputIndex)
//   output : lane l, register r holds element DigitReverse(r, P) + P * BitReverse(l, L)
//                                                                   (OutputIndex)
// Each lane first runs a P-point decimation-in-frequency FFT in registers, multiplies by W_S^(l * k1)
// and then the L lanes finish with log2(L) butterfly stages exchanged through __shfl_xor_sync.
// S = m * 2^k with m = 3 or 5: the factor m stays inside the lane, P = m * 2^j (j >= 1, so P is
// even), and the register FFT starts with one radix-m stage (DifStages); the cross-lane part is
// unchanged, since X[k1 + P k2] = sum_l W_L^(l k2) W_S^(l k1) sum_p x[p L + l] W_P^(p k1) holds for
// any P.
#ifndef TF_FFTCONV_CUDA_FFT_STAGES_CUH_
#define TF_FFTCONV_CUDA_FFT_STAGES_CUH_

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "include/fftconv_params.h"
#include "complex_math.cuh"
#include "device_info.h"
#include "hardware.cuh"
#include "kernel_config.h"
#include "twiddle_table.inc"

namespace fftconv {
namespace cuda {
namespace detail {

// ---------------------------------------------------------------------------------------------
// Twiddles: W_N^t = exp(-2*pi*i*t/N) in constant memory, one table per root base N: N = 128 for
// the power-of-two sizes, N = 96 for the sizes 3 * 2^k, N = 80 for 5 * 2^k (TwiddleBase). With t
// known after unrolling the access becomes a constant-bank operand; with a lane-dependent t it is a
// (cheap) indexed load. Every size S takes its twiddles from its base's table with stride N / S;
// the cross-lane stages' W_(2h) (2h <= L, a divisor of S) are in its base's table too.
static_assert(kMaxFftSize == 128,
              "twiddle_table.inc holds the 128th roots of unity: regenerate it (tools/twiddle_table.py)");
static_assert(kMaxFftSize3 == 96,
              "twiddle_table.inc holds the 96th roots of unity: regenerate it (tools/twiddle_table.py)");
static_assert(kMaxFftSize5 == 80,
              "twiddle_table.inc holds the 80th roots of unity: regenerate it (tools/twiddle_table.py)");
#define FFTCONV_TWIDDLE_FLOAT(c, s) {static_cast<float>(c), static_cast<float>(s)},
#define FFTCONV_TWIDDLE_DOUBLE(c, s) {c, s},
static __constant__ float2 kTwiddle128Float[128] = {FFTCONV_TWIDDLE_128(FFTCONV_TWIDDLE_FLOAT)};
static __constant__ double2 kTwiddle128Double[128] = {FFTCONV_TWIDDLE_128(FFTCONV_TWIDDLE_DOUBLE)};
static __constant__ float2 kTwiddle96Float[96] = {FFTCONV_TWIDDLE_96(FFTCONV_TWIDDLE_FLOAT)};
static __constant__ double2 kTwiddle96Double[96] = {FFTCONV_TWIDDLE_96(FFTCONV_TWIDDLE_DOUBLE)};
static __constant__ float2 kTwiddle80Float[80] = {FFTCONV_TWIDDLE_80(FFTCONV_TWIDDLE_FLOAT)};
static __constant__ double2 kTwiddle80Double[80] = {FFTCONV_TWIDDLE_80(FFTCONV_TWIDDLE_DOUBLE)};
#undef FFTCONV_TWIDDLE_FLOAT
#undef FFTCONV_TWIDDLE_DOUBLE

// The root base of size S's twiddles: a multiple of S whose table exists.
template <int S>
constexpr int TwiddleBase() {
  static_assert(IsFftSize(S), "not an FFT size of the package");
  return IsRadix3FftSize(S) ? kMaxFftSize3 : IsRadix5FftSize(S) ? kMaxFftSize5 : kMaxFftSize;
}

// W_N^t for 0 <= t < N.
template <typename Real, int N>
__device__ __forceinline__ complex_t<Real> TwiddleOf(int t) {
  static_assert(N == 128 || N == 96 || N == 80, "twiddle tables exist for N = 128, 96 and 80");
  if constexpr (std::is_same<Real, float>::value) {
    return N == 128 ? kTwiddle128Float[t] : N == 96 ? kTwiddle96Float[t] : kTwiddle80Float[t];
  } else {
    return N == 128 ? kTwiddle128Double[t] : N == 96 ? kTwiddle96Double[t] : kTwiddle80Double[t];
  }
}

// W_N^t for a t that folds to a constant after unrolling: the same values as TwiddleOf, from constexpr
// arrays, whose loads the compiler folds into the instructions as immediates (the __constant__
// tables cost a constant-bank load per use: their values may change at run time, so they never
// fold). A t that did not fold would copy the arrays to local memory: MulTwiddleDynamic is for those.
template <typename Real, int N>
__device__ __forceinline__ complex_t<Real> ImmediateTwiddleOf(int t) {
  static_assert(N == 128 || N == 96 || N == 80, "twiddle tables exist for N = 128, 96 and 80");
#define FFTCONV_TWIDDLE_RE(c, s) static_cast<Real>(c),
#define FFTCONV_TWIDDLE_IM(c, s) static_cast<Real>(s),
  if constexpr (N == 128) {
    constexpr Real kRe[N] = {FFTCONV_TWIDDLE_128(FFTCONV_TWIDDLE_RE)}, kIm[N] = {FFTCONV_TWIDDLE_128(FFTCONV_TWIDDLE_IM)};
    return {kRe[t], kIm[t]};
  } else if constexpr (N == 96) {
    constexpr Real kRe[N] = {FFTCONV_TWIDDLE_96(FFTCONV_TWIDDLE_RE)}, kIm[N] = {FFTCONV_TWIDDLE_96(FFTCONV_TWIDDLE_IM)};
    return {kRe[t], kIm[t]};
  } else {
    constexpr Real kRe[N] = {FFTCONV_TWIDDLE_80(FFTCONV_TWIDDLE_RE)}, kIm[N] = {FFTCONV_TWIDDLE_80(FFTCONV_TWIDDLE_IM)};
    return {kRe[t], kIm[t]};
  }
#undef FFTCONV_TWIDDLE_RE
#undef FFTCONV_TWIDDLE_IM
}

// z * W_N^t (forward) or z * conj(W_N^t) (inverse), t >= 0. Meant for t that folds to a constant
// (ImmediateTwiddleOf).
template <typename Real, bool kInverse, int N>
__device__ __forceinline__ complex_t<Real> MulTwiddle(complex_t<Real> z, int t) {
  using C = complex_t<Real>;
  t %= N;
  if (t == 0) return z;
  if (t == N / 2) return C{-z.x, -z.y};
  if (t == N / 4) return kInverse ? C{-z.y, z.x} : C{z.y, -z.x};  // * (+i) or * (-i)
  if (t == 3 * N / 4) return kInverse ? C{z.y, -z.x} : C{-z.y, z.x};
  C w = ImmediateTwiddleOf<Real, N>(t);
  if (kInverse) w.y = -w.y;
  return CMul(z, w);
}

// Same for a run-time (lane-dependent) t, 0 <= t < N: a table load, no branches.
template <typename Real, bool kInverse, int N>
__device__ __forceinline__ complex_t<Real> MulTwiddleDynamic(complex_t<Real> z, int t) {
  complex_t<Real> w = TwiddleOf<Real, N>(N == 128 ? (t & 127) : t);
  if (kInverse) w.y = -w.y;
  return CMul(z, w);
}

// The column job that reads bin k of a packed row pair's spectrum Z_j (the forward's row pass), and
// which of its two parts: Z_j[k] for 0 < k < S/2 is part 0 of job k, for k > S/2 part 1 of job S - k;
// job 0 packs the real columns, Z_j[0] as part 0 and Z_j[S/2] as part 1.
template <int S>
__host__ __device__ __forceinline__ void RowSpectrumJobOf(int k, int& job, int& which) {
  if (k == 0) {
    job = 0, which = 0;
  } else if (k == S / 2) {
    job = 0, which = 1;
  } else if (k < S / 2) {
    job = k, which = 0;
  } else {
    job = S - k, which = 1;
  }
}

__host__ __device__ constexpr int BitReverse(int v, int n) {
  int r = 0;
  for (int b = 1; b < n; b <<= 1) {
    r = (r << 1) | (v & 1);
    v >>= 1;
  }
  return r;
}

// Output order of the P-point register FFT (DifStages): register r holds output DigitReverse(r, P),
// and output k sits in register DigitReversePosition(k, P). For P a power of two both are the bit
// reversal. For P = m Q (m = 3 or 5; P is itself an allowed size, so m = OddFftFactor(P)) the
// radix-m stage sends outputs k = m q + a to block a (registers [a Q, (a + 1) Q)), whose Q-point DIF
// leaves q at bit-reversed position: r = a Q + BitReverse(q, Q); m = 1 is the plain bit reversal.
// (The same order as the CPU kernels' FftTables::output_position.)
__host__ __device__ constexpr int DigitReverse(int r, int p) {
  const int m = OddFftFactor(p), q = p / m;
  return m * BitReverse(r % q, q) + r / q;
}
__host__ __device__ constexpr int DigitReversePosition(int k, int p) {
  const int m = OddFftFactor(p), q = p / m;
  return (k % m) * q + BitReverse(k / m, q);
}

// ---------------------------------------------------------------------------------------------
// One radix-2 DIF step over the blocks [s, s + M) of x: (a, b) -> (a + b, (a - b) W_M^j).
template <typename Real, bool kInverse, int N, int P, int M>
__device__ __forceinline__ void Radix2Step(complex_t<Real> (&x)[P]) {
  constexpr int H = M / 2;
#pragma unroll
  for (int s = 0; s < P; s += M) {
#pragma unroll
    for (int j = 0; j < H; ++j) {
      const complex_t<Real> a = x[s + j];
      const complex_t<Real> b = x[s + j + H];
      x[s + j] = CAdd(a, b);
      x[s + j + H] = MulTwiddle<Real, kInverse, N>(CSub(a, b), j * (N / M));
    }
  }
}

// P-point decimation-in-frequency FFT in registers: natural order in, DigitReverse order out. Each
// step runs the length-M butterflies of every block [s, s + M) of x: a radix-3 or radix-5 step when
// 3 or 5 divides M (only the first, M = P = 3 * 2^j or 5 * 2^j), radix-2 steps after; twiddles
// W_M^j = W_N^(j N / M) from base N (TwiddleBase of the whole transform's size, a multiple of P).
template <typename Real, bool kInverse, int N, int P, int M>
struct DifStages {
  __device__ __forceinline__ static void Run(complex_t<Real> (&x)[P]) {
    using C = complex_t<Real>;
    if constexpr (M % 3 == 0) {
      constexpr int T = M / 3;
      // w = exp(-+2 pi i / 3) = -1/2 -+ i sqrt(3)/2 (forward / inverse):
      //   y0 = x0 + x1 + x2, y1 = (x0 + w x1 + w^2 x2) W_M^j, y2 = (x0 + w^2 x1 + w x2) W_M^2j,
      // x0 + w x1 + w^2 x2 = (x0 - (x1 + x2) / 2) -+ i sqrt(3)/2 (x1 - x2).
      const Real half_sqrt3 = static_cast<Real>(0.86602540378443864676372317075293618);
#pragma unroll
      for (int s = 0; s < P; s += M) {
#pragma unroll
        for (int j = 0; j < T; ++j) {
          const C x0 = x[s + j], x1 = x[s + j + T], x2 = x[s + j + 2 * T];
          const C sum = CAdd(x1, x2);
          const C diff = CScale(CSub(x1, x2), half_sqrt3);
          const C mid = C{x0.x - Real(0.5) * sum.x, x0.y - Real(0.5) * sum.y};
          // rot = -i diff (forward) or +i diff (inverse).
          const C rot = kInverse ? C{-diff.y, diff.x} : C{diff.y, -diff.x};
          x[s + j] = CAdd(x0, sum);
          x[s + j + T] = MulTwiddle<Real, kInverse, N>(CAdd(mid, rot), j * (N / M));
          x[s + j + 2 * T] = MulTwiddle<Real, kInverse, N>(CSub(mid, rot), 2 * j * (N / M));
        }
      }
      DifStages<Real, kInverse, N, P, T>::Run(x);
    } else if constexpr (M % 5 == 0) {
      constexpr int F = M / 5;
      // w = exp(-+2 pi i / 5) = c1 -+ i s1, w^2 = c2 -+ i s2 (forward / inverse), w^3 and w^4 their
      // conjugates; with a1 = x1 + x4, b1 = x1 - x4, a2 = x2 + x3, b2 = x2 - x3:
      //   y0 = x0 + a1 + a2,
      //   y1, y4 = x0 + c1 a1 + c2 a2 -+ i (s1 b1 + s2 b2)   (forward; +- for the inverse),
      //   y2, y3 = x0 + c2 a1 + c1 a2 -+ i (s2 b1 - s1 b2),
      // y_m times W_M^mj: 16 real multiplies before the twiddles, where the plain sums take 64.
      const Real c1 = static_cast<Real>(0.30901699437494742410229341718281906);   // cos(2 pi/5)
      const Real c2 = static_cast<Real>(-0.80901699437494742410229341718281906);  // cos(4 pi/5)
      const Real s1 = static_cast<Real>(0.95105651629515357211643933337938214);   // sin(2 pi/5)
      const Real s2 = static_cast<Real>(0.58778525229247312916870595463907277);   // sin(4 pi/5)
#pragma unroll
      for (int s = 0; s < P; s += M) {
#pragma unroll
        for (int j = 0; j < F; ++j) {
          const C x0 = x[s + j];
          const C a1 = CAdd(x[s + j + F], x[s + j + 4 * F]);
          const C b1 = CSub(x[s + j + F], x[s + j + 4 * F]);
          const C a2 = CAdd(x[s + j + 2 * F], x[s + j + 3 * F]);
          const C b2 = CSub(x[s + j + 2 * F], x[s + j + 3 * F]);
          const C mid1 = C{x0.x + c1 * a1.x + c2 * a2.x, x0.y + c1 * a1.y + c2 * a2.y};
          const C mid2 = C{x0.x + c2 * a1.x + c1 * a2.x, x0.y + c2 * a1.y + c1 * a2.y};
          const C n1 = C{s1 * b1.x + s2 * b2.x, s1 * b1.y + s2 * b2.y};
          const C n2 = C{s2 * b1.x - s1 * b2.x, s2 * b1.y - s1 * b2.y};
          // rot = -i n (forward) or +i n (inverse).
          const C rot1 = kInverse ? C{-n1.y, n1.x} : C{n1.y, -n1.x};
          const C rot2 = kInverse ? C{-n2.y, n2.x} : C{n2.y, -n2.x};
          x[s + j] = CAdd(x0, CAdd(a1, a2));
          x[s + j + F] = MulTwiddle<Real, kInverse, N>(CAdd(mid1, rot1), j * (N / M));
          x[s + j + 2 * F] = MulTwiddle<Real, kInverse, N>(CAdd(mid2, rot2), 2 * j * (N / M));
          x[s + j + 3 * F] = MulTwiddle<Real, kInverse, N>(CSub(mid2, rot2), 3 * j * (N / M));
          x[s + j + 4 * F] = MulTwiddle<Real, kInverse, N>(CSub(mid1, rot1), 4 * j * (N / M));
        }
      }
      DifStages<Real, kInverse, N, P, F>::Run(x);
    } else {
      Radix2Step<Real, kInverse, N, P, M>(x);
      DifStages<Real, kInverse, N, P, M / 2>::Run(x);
    }
  }
};
template <typename Real, bool kInverse, int N, int P>
struct DifStages<Real, kInverse, N, P, 1> {
  __device__ __forceinline__ static void Run(complex_t<Real> (&)[P]) {}
};

// DifStages for an input that is zero past its first Z values (x[p] = 0 for p >= Z, set so by the
// caller): a radix-2 step whose blocks of M hold Z <= M/2 leading values has b = 0 in every
// butterfly, so it only writes the twiddled copies a W_M^j into the upper halves (j < Z), and every
// block of M/2 after it again holds Z leading values. The same outputs as DifStages, up to the sign
// of a zero; the steps from the first M < 2Z (or a radix-3 or radix-5 one) on are the full ones.
// Used where a frame is mostly zero padding (a small kernel's weights in a 32 frame: Z = 8 prunes the
// first two of five steps, and their loads).
template <typename Real, bool kInverse, int N, int P, int M, int Z>
struct DifStagesLeading {
  __device__ __forceinline__ static void Run(complex_t<Real> (&x)[P]) {
    if constexpr (2 * Z <= M && M % 3 != 0 && M % 5 != 0) {
      constexpr int H = M / 2;
#pragma unroll
      for (int s = 0; s < P; s += M) {
#pragma unroll
        for (int j = 0; j < Z; ++j) x[s + j + H] = MulTwiddle<Real, kInverse, N>(x[s + j], j * (N / M));
      }
      DifStagesLeading<Real, kInverse, N, P, H, Z>::Run(x);
    } else {
      DifStages<Real, kInverse, N, P, M>::Run(x);
    }
  }
};

// DifStages of a power-of-two P whose caller keeps only the registers r = 0 (mod T), the outputs
// DigitReverse(r) < P / T (the first rows or columns of a frame): the radix-2 steps down to blocks of
// T are whole; in the steps on blocks of T or less only the upper outputs are needed, so each is a
// sum, a + b, in the order the whole steps add (so the kept outputs are the same to the bit). The
// other registers are left meaningless.
template <typename Real, bool kInverse, int N, int P, int M, int T>
struct DifStagesKeeping {
  __device__ __forceinline__ static void Run(complex_t<Real> (&x)[P]) {
    static_assert((P & (P - 1)) == 0 && (T & (T - 1)) == 0, "power-of-two sizes");
    if constexpr (M > T) {
      Radix2Step<Real, kInverse, N, P, M>(x);
      DifStagesKeeping<Real, kInverse, N, P, M / 2, T>::Run(x);
    } else if constexpr (M > 1) {
      constexpr int H = M / 2;
#pragma unroll
      for (int s = 0; s < P; s += M) {
#pragma unroll
        for (int j = 0; j < H; ++j) x[s + j] = CAdd(x[s + j], x[s + j + H]);
      }
      DifStagesKeeping<Real, kInverse, N, P, H, T>::Run(x);
    }
  }
};

// The leading-values bound of the forward transforms' pruning (DifStagesLeading): an image inside the
// first S/4 rows (columns) of its frame lets the column (row) transforms skip the zero rest. S a power
// of two of 16 or more, where S/4 saves two radix-2 steps; S otherwise (no pruning).
template <int S, int L>
__host__ __device__ constexpr int LeadingValues() {
  return (S & (S - 1)) == 0 && S >= 16 && (S / 4) % L == 0 ? S / 4 : S;
}

// The kept-outputs bound of the inverse transforms' pruning (DifStagesKeeping): a window inside the
// first S/4 rows (columns) of the frame lets the column (row) transforms stop summing at the outputs
// it needs. One lane per transform (the register FFT is the whole FFT), S a power of two of 16 or
// more; S otherwise (no pruning).
template <int S, int L>
__host__ __device__ constexpr int KeptOutputs() {
  return (S & (S - 1)) == 0 && S >= 16 && L == 1 ? S / 4 : S;
}

// Lanes of one distributed transform: lane l of the transform sits `lane_stride * l` lanes away
// from lane 0 (all inside one warp); `group_mask` names every lane that runs the call.
template <int S, int L>
struct FftLayout {
  static constexpr int kPerLane = S / L;
  // L a power of two; P even (the kernels split a line at S / 2 = (P / 2) L) and, for S = 3 * 2^k
  // or 5 * 2^k, holding the factor 3 or 5.
  static_assert(IsFftSize(S) && (L & (L - 1)) == 0 && S % L == 0 && kPerLane % 2 == 0 &&
                    kPerLane % OddFftFactor(S) == 0,
                "lanes per transform");
  __host__ __device__ __forceinline__ static int InputIndex(int p, int l) { return p * L + l; }
  __host__ __device__ __forceinline__ static int OutputIndex(int r, int l) {
    return DigitReverse(r, kPerLane) + kPerLane * BitReverse(l, L);
  }
};

// Length-S FFT of the values held by L lanes (see the layout at the top of this file). kLeading < S:
// the input is zero from index kLeading on (a multiple of L), so that each lane's values are zero
// from p = kLeading / L on; the caller has set them to zero (DifStagesLeading). kKept < S (L = 1):
// only the outputs k < kKept are computed, in the registers r = 0 (mod S / kKept) (DifStagesKeeping).
template <typename Real, bool kInverse, int S, int L, int kLeading = S, int kKept = S>
__device__ __forceinline__ void DistributedFft(complex_t<Real> (&x)[S / L], int l, int lane_stride,
                                               unsigned group_mask) {
  constexpr int P = S / L;
  constexpr int N = TwiddleBase<S>();
  (void)FftLayout<S, L>::kPerLane;  // its static_assert
  static_assert(kLeading % L == 0 && kLeading <= S, "leading values");
  static_assert(kKept == S || (L == 1 && kLeading == S), "kept outputs");
  if constexpr (kKept < S) {
    DifStagesKeeping<Real, kInverse, N, P, P, S / kKept>::Run(x);
    return;
  }
  DifStagesLeading<Real, kInverse, N, P, P, kLeading / L>::Run(x);
  if constexpr (L > 1) {
    // Twiddle between the two factors: W_S^(l * k1), k1 = DigitReverse(r, P); l k1 < L P = S.
#pragma unroll
    for (int r = 0; r < P; ++r) {
      const int k1 = DigitReverse(r, P);
      x[r] = MulTwiddleDynamic<Real, kInverse, N>(x[r], (l * k1) * (N / S));
    }
    // L-point DIF across lanes: butterfly partner differs in bit h of l.
#pragma unroll
    for (int h = L / 2; h >= 1; h >>= 1) {
      const bool upper = (l & h) != 0;
      const int t = (l & (h - 1)) * (N / (2 * h));
#pragma unroll
      for (int r = 0; r < P; ++r) {
        complex_t<Real> y;
        y.x = __shfl_xor_sync(group_mask, x[r].x, h * lane_stride);
        y.y = __shfl_xor_sync(group_mask, x[r].y, h * lane_stride);
        x[r] = upper ? MulTwiddleDynamic<Real, kInverse, N>(CSub(y, x[r]), t) : CAdd(x[r], y);
      }
    }
  }
}

// Value of output index (S - k) mod S for the output held in register r of this lane, fetched
// from whichever lane holds it (needed to split the spectrum of two packed real sequences).
template <typename Real, int S, int L>
__device__ __forceinline__ complex_t<Real> MirrorOutput(const complex_t<Real> (&x)[S / L], int r, int l,
                                                        int lane_stride, unsigned group_mask) {
  constexpr int P = S / L;
  const int k1 = DigitReverse(r, P);
  const int r_mirror = DigitReversePosition(k1 == 0 ? 0 : P - k1, P);
  if constexpr (L == 1) {
    return x[r_mirror];
  } else {
    complex_t<Real> v = x[r_mirror];
    complex_t<Real> m;
    if (k1 != 0) {
      // k = k1 + P*k2 -> S - k = (P - k1) + P*(L - 1 - k2): the lane with all bits of l flipped.
      m.x = __shfl_xor_sync(group_mask, v.x, (L - 1) * lane_stride);
      m.y = __shfl_xor_sync(group_mask, v.y, (L - 1) * lane_stride);
    } else {
      // k = P*k2 -> S - k = P*((L - k2) mod L).
      const int k2 = BitReverse(l, L);
      const int l_src = BitReverse((L - k2) & (L - 1), L);
      const int src_lane = static_cast<int>(threadIdx.x & 31) + (l_src - l) * lane_stride;
      m.x = __shfl_sync(group_mask, v.x, src_lane);
      m.y = __shfl_sync(group_mask, v.y, src_lane);
    }
    return m;
  }
}

// Pixels first, first + step, first + 2 step, ... of an image `width` pixels wide as (row h, column w),
// advanced by additions. The NHWC copy loops walk a group's pixels so: a division per pixel made them
// reload the divisor's constants from the kernel's parameters on every pixel, where Nsight Compute
// found the warps of Mathieu's x and dx waiting.
struct PixelWalk {
  int h, w, step_h, step_w;  // step = step_h * width + step_w, 0 <= step_w < width
  __host__ __device__ __forceinline__ PixelWalk(const FastDivmod& div_width, int first, int step) {
    div_width.DivMod(first, h, w);
    div_width.DivMod(step, step_h, step_w);
  }
  __host__ __device__ __forceinline__ void Next(int width) {
    h += step_h;
    w += step_w;
    if (w >= width) {
      w -= width;
      ++h;
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Offsets. Every tensor, spectrum and shared-memory offset used by the FFT kernels comes from here.
//
// Real image tensors, image index n = b * channels + c:
//   NCHW [batch, channels, height, width]: element (n, h, w) at n*H*W + h*W + w
//   NHWC [batch, height, width, channels]: element (n, h, w) at b*H*W*C + (h*W + w)*C + c
// Spectra, frequency-major [bins, images]: bin (ky, kx) of image n at (ky*(S/2+1) + kx)*images + n.
// Element counts fit int32 (checked by the caller), so int offsets are exact.
struct ImageIndex {
  int base, row_stride, col_stride;

  __host__ __device__ __forceinline__ static ImageIndex Make(int n, int channels, int height, int width,
                                                             bool nhwc) {
    ImageIndex ix;
    if (nhwc) {
      const int b = n / channels, c = n - (n / channels) * channels;
      ix.base = b * height * width * channels + c;
      ix.row_stride = width * channels;
      ix.col_stride = channels;
    } else {
      ix.base = n * height * width;
      ix.row_stride = width;
      ix.col_stride = 1;
    }
    return ix;
  }
  __host__ __device__ __forceinline__ int At(int h, int w) const { return base + h * row_stride + w * col_stride; }
};

__host__ __device__ __forceinline__ int SpectrumIndex(int fft_size, int ky, int kx, int images, int n) {
  return (ky * (fft_size / 2 + 1) + kx) * images + n;
}

// Smallest y >= x with y = residue (mod modulus).
__host__ __device__ constexpr int PadToResidue(int x, int residue, int modulus) {
  return x + (((residue - x) % modulus) + modulus) % modulus;
}

// Stage: S x S frames (or output windows) of a block's G images in shared memory, real values,
// layout [image i][row h][col w], strides (image_stride, row_stride, 1), for NCHW and NHWC alike.
struct StageIndex {
  int image_stride, row_stride;
  __host__ __device__ __forceinline__ int At(int i, int h, int w) const { return i * image_stride + h * row_stride + w; }
};

// Strides chosen so that a warp's lanes (G images x L lanes x 32/(G*L) row jobs, the jobs on rows two
// apart) hit distinct banks: image_stride = L (mod 32), 2 * row_stride = G * L (mod 32).
inline StageIndex MakeStageIndex(int rows, int cols, int images_per_block, int lanes) {
  const int gl = images_per_block * lanes;
  StageIndex s;
  s.row_stride = gl < 32 ? PadToResidue(cols, (gl / 2) % 16, 16) : cols;
  s.image_stride = PadToResidue(rows * s.row_stride, lanes % 32, 32);
  return s;
}

// Row stride of a pixel-major stage (a pixel's G images consecutive, `cols` pixels a row) with padded
// rows: 2 * row_stride = G * L (mod 32), so that a warp's G images x L lanes x row jobs on rows two
// apart hit distinct banks; a row job of 32 or more lanes fills the warp and its rows stay unpadded.
// The forward's padded stage (PixelMajorStage::Make) and the inverse's (MakePixelMajorInverseStage).
__host__ __device__ constexpr int PaddedPixelMajorRowStride(int cols, int images_per_block, int lanes) {
  return images_per_block * lanes < 32
             ? PadToResidue(cols * images_per_block, (images_per_block * lanes / 2) % 16, 16)
             : cols * images_per_block;
}

// Pixel-major stage of NHWC images: [row r][col c][image i], strides (row_stride, G, 1), so that four
// consecutive channels of a pixel are one 16-byte copy; image_stride is 1. A warp's row reads are G
// images x L lanes (G * L consecutive floats of a row) x J = 32 / (G * L) row jobs, the jobs on the
// row pairs (2j, 2j + 1) of J consecutive j. Two ways keep those J jobs on distinct banks:
//   swizzled (kSwizzled): rows unpadded, row_stride = S * G, and column c of stage row r stored at
//     Column(r, c) = c ^ (L * ((r / 2) % J)): job j's reads move by (j % J) * G * L floats (mod 32).
//     Rows start 128-byte aligned (S * G a multiple of 32), so a pixel's 16-byte copies land where
//     their global sectors do: Nsight Compute counted 24 shared-memory wavefronts per warp of copies
//     into the padded rows (Mathieu's x, S = 32, G = 8) against 16 sectors read.
//     The XOR stays inside aligned blocks of L * J = 32 / G columns, so the frame's first S (or
//     LeadingValues) columns stay the first ones, as the zero fill and the row pass take them.
//   padded (otherwise): 2 * row_stride = G * L (mod 32); rows are then 16-byte aligned (G * L a
//     multiple of 8) and Column(r, c) = c.
template <int S, int G, int L>
struct PixelMajorStage {
  static constexpr int kJobsPerWarp = G * L < 32 ? 32 / (G * L) : 1;
  static constexpr int kBlockCols = L * kJobsPerWarp;  // columns a swizzle permutes among
  static constexpr bool kSwizzled =
      kJobsPerWarp > 1 && S % kBlockCols == 0 && LeadingValues<S, L>() % kBlockCols == 0;
  static constexpr int kReadPointers = kSwizzled ? kJobsPerWarp : 1;
  // Stage row r's swizzle in [0, J): the column block offset of its reads, in units of L columns.
  __host__ __device__ __forceinline__ static int Swizzle(int r) { return (r >> 1) & (kReadPointers - 1); }
  __host__ __device__ __forceinline__ static int Column(int r, int c) { return c ^ (L * Swizzle(r)); }
  // The row pass's loads of lane l's values p (column p * L + l, FftLayout::InputIndex) in stage row r:
  // kReadPointers pointers, pointer k at ReadPointer(k, Swizzle(r)) past the lane's own start
  // LaneStart (row r, column l, image i), and value p at pointer p % kReadPointers plus ReadStep(p), a
  // constant; the same place as StageAt (tests/test_stage_layout.py checks it). The rows are
  // RowStride apart: S * G, a constant, where the stage is swizzled.
  __host__ __device__ __forceinline__ static int RowStride(const StageIndex& s) { return kSwizzled ? S * G : s.row_stride; }
  __host__ __device__ __forceinline__ static int LaneStart(int row_stride, int r, int l, int i) {
    return r * row_stride + l * G + i;
  }
  __host__ __device__ __forceinline__ static int ReadPointer(int k, int m) { return (k ^ m) * L * G; }
  __host__ __device__ __forceinline__ static constexpr int ReadStep(int p) {
    return p / kReadPointers * kReadPointers * L * G;
  }
  static StageIndex Make() {
    StageIndex s;
    s.image_stride = 1;
    s.row_stride = kSwizzled ? S * G : PaddedPixelMajorRowStride(S, G, L);
    return s;
  }
};
template <bool kPixelMajor, int S, int G, int L>
__host__ __device__ __forceinline__ int StageAt(const StageIndex& s, int i, int r, int c) {
  return kPixelMajor ? r * s.row_stride + PixelMajorStage<S, G, L>::Column(r, c) * G + i : s.At(i, r, c);
}

// The forward's NHWC stage where one tensor copy fills it (the pipelined strategy on sm_90+):
// the box (G channels, stage_rows frame rows, read_cols frame columns) of one image of the batch,
// zeros included where the box reaches past the image (the frame's margins: no zero fill). The box
// lands column-major,
//   [frame column c][stage row r][image i], strides (stage_rows * G, G, 1),
// as the copy writes it (its dimensions ordered channels, rows, columns). Shapes with one lane per
// transform (L = 1) and G a multiple of 4 (the box's rows whole 16-byte units) take it.
// Banks: a warp's J = 32 / G row jobs read one column, rows 2j and 2j + 1 of pairs j0 .. j0 + J - 1
// (j0 a multiple of J), each row G consecutive floats. Row 2j lies 8 G (j - pair_begin) bytes into
// the column, so a 128-byte line holds the rows of J / 2 pairs, and pairs j and j + J / 2 fall on
// the same banks. A warp's load of its jobs' first rows would conflict two ways; so the second half
// of the warp's jobs (SwapsRows) loads its second row first: each load instruction then reads the
// first rows of J / 2 pairs and the second rows of the other J / 2, 32 distinct banks whatever
// pair_begin is (cuda/tests/stage_layout_check.cu checks it). A swapped job packs its rows as
// z = row(2j + 1) + i row(2j), and the column pass unpacks them the other way round.
template <int S, int G, int L>
struct TensorCopyStage {
  static constexpr bool kUsable = L == 1 && G % 4 == 0 && G <= 32;
  static constexpr int kPairsPerLine = 16 / G;  // 0 at G = 32: one job per warp, nothing to swap
  __host__ __device__ __forceinline__ static constexpr bool SwapsRows(int j) {
    return kPairsPerLine > 0 && (j / (kPairsPerLine > 0 ? kPairsPerLine : 1)) % 2 == 1;
  }
  __host__ __device__ __forceinline__ static int ColumnStride(int stage_rows) { return stage_rows * G; }
  __host__ __device__ __forceinline__ static int At(int stage_rows, int i, int r, int c) {
    return c * ColumnStride(stage_rows) + r * G + i;
  }
};

// The inverse's stage element (image i, window row r, frame column c):
//   image-major (the staged and direct strategies, NCHW):  i * image_stride + r * row_stride + c
//                 (MakeStageIndex's strides: the row pass's stores on distinct banks);
//   pixel-major (kPixelMajor; the pipelined strategy, NHWC): r * row_stride + c * G + i, image_stride
//                 1: a pixel's G channels are consecutive, so that the store copies four of them with
//                 one 16-byte shared-memory load (image-major took four loads, at 2-way bank conflicts
//                 between the quads of a warp), and row_stride = G * L / 2 (mod 16)
//                 (MakePixelMajorInverseStage) keeps the row pass's stores, G images x the row jobs
//                 of a warp on rows two apart, on distinct banks with one lane per transform, as
//                 every shape that takes the pipelined strategy has (cuda/tests/stage_layout_check.cu
//                 checks them). Two lanes would hold columns S / 2 apart, G S / 2 floats: a 2-way
//                 conflict.
template <bool kPixelMajor, int G>
__host__ __device__ __forceinline__ int InverseStageAt(const StageIndex& s, int i, int r, int c) {
  return kPixelMajor ? r * s.row_stride + c * G + i : s.At(i, r, c);
}

inline StageIndex MakePixelMajorInverseStage(int cols, int images_per_block, int lanes) {
  StageIndex s;
  s.image_stride = 1;
  s.row_stride = PaddedPixelMajorRowStride(cols, images_per_block, lanes);
  return s;
}

// Stride between consecutive slots of a [slot][job][image] complex buffer holding `rows` jobs of G
// images: 2 * stride = G (mod 16) keeps half-warps on distinct banks when G < 16.
inline int ComplexSlotStride(int rows, int images_per_block) {
  const int g = images_per_block;
  return g < 16 ? PadToResidue(rows * g, (g / 2) % 8, 8) : rows * g;
}

// ---------------------------------------------------------------------------------------------
// Block shapes of the FFT kernels: L lanes per transform, G images per block, and the minimum number
// of resident blocks per SM promised to the compiler (register budget). G * L <= 32 when L > 1 so that
// a transform's lanes share a warp; S/2 transforms per image run side by side in one block. The
// values are the configurations of cuda/kernel_config.h.
template <int S, int L, int G, int MINB>
struct BlockShape {
  static constexpr int kLanes = L;
  static constexpr int kImagesPerBlock = G;
  static constexpr int kMinBlocks = MINB;
  static constexpr int kThreads = G * L * S / 2;
  static_assert((L == 1 || G * L <= 32) && (G & (G - 1)) == 0, "shape");
};

// The configurations of a frame size and direction (config::kFloat, config::kDouble).
template <typename Real, int S, bool kInverse>
constexpr config::DirectionConfig DirectionConfigOf() {
  static_assert(std::is_same<Real, float>::value || std::is_same<Real, double>::value, "float or double");
  return config::FindDirection<Real>(S, kInverse);
}
template <int S, typename Config>
using BlockShapeOfConfig = BlockShape<S, Config::value.lanes, Config::value.images, Config::value.min_blocks>;

// The ordinary shape, every device's.
template <typename Real, int S, bool kInverse>
struct OrdinaryConfig {
  static constexpr config::FftBlockConfig value = DirectionConfigOf<Real, S, kInverse>().ordinary;
};
template <typename Real, int S, bool kInverse>
struct FftShape : BlockShapeOfConfig<S, OrdinaryConfig<Real, S, kInverse>> {};

// The shape for devices with large shared memory (227 KB per block), where the table gives one for
// the layout, else FftShape's. A launcher takes it where it differs from FftShape, its staged
// strategy (whole frames in shared memory) fits the device, and, for an NHWC tensor, the channels
// come in whole blocks of G (a block's images are then runs of consecutive channels); otherwise
// FftShape, whose staged strategy fits 64 KB devices up to S = 64 (LaunchWithShapes).
template <typename Real, int S, bool kInverse, bool kNhwc>
struct LargeConfig {
  static constexpr config::DirectionConfig kDirection = DirectionConfigOf<Real, S, kInverse>();
  static constexpr config::FftBlockConfig kLarge = kNhwc ? kDirection.large_nhwc : kDirection.large_nchw;
  static constexpr config::FftBlockConfig value = kLarge.Given() ? kLarge : kDirection.ordinary;
};
template <typename Real, int S, bool kInverse, bool kNhwc>
struct LargeShape : BlockShapeOfConfig<S, LargeConfig<Real, S, kInverse, kNhwc>> {};

// The kernels are instantiated with the plain BlockShape of a shape, so that equal shapes share one
// kernel whichever name they came by.
template <int S, typename Shape>
using BlockShapeOf = BlockShape<S, Shape::kLanes, Shape::kImagesPerBlock, Shape::kMinBlocks>;
template <int S, typename Large, typename Ordinary>
constexpr bool kDistinctShapes = !std::is_same<BlockShapeOf<S, Large>, BlockShapeOf<S, Ordinary>>::value;

template <typename Shape>
struct ShapeTag {
  using type = Shape;
};

// Launches with Ordinary where its strategy is the pipelined one (which measured faster than a
// LargeShape's staged strategy on the NHWC inverses of Mathieu's layer); else with Large where it
// differs from Ordinary, its strategy fits without chunks and, for NHWC, the channels come in whole
// blocks of its images; else with Ordinary. make_args(ShapeTag<Shape>, max_smem, &smem) returns the
// kernel's arguments (their strategy, config::FftStrategy) and the shared memory they need;
// launch(ShapeTag<Shape>, args, smem) launches and returns the error code.
template <int S, typename Large, typename Ordinary, typename MakeArgs, typename Launch>
int LaunchWithShapes(bool nhwc, int channels, size_t max_smem, MakeArgs&& make_args, Launch&& launch) {
  size_t smem = 0;
  const auto ordinary = make_args(ShapeTag<Ordinary>{}, max_smem, &smem);
  if constexpr (kDistinctShapes<S, Large, Ordinary>) {
    if (ordinary.strategy != config::FftStrategy::kPipelined &&
        (!nhwc || channels % Large::kImagesPerBlock == 0)) {
      size_t large_smem = 0;
      const auto args = make_args(ShapeTag<Large>{}, max_smem, &large_smem);
      if (args.strategy != config::FftStrategy::kDirect) return launch(ShapeTag<Large>{}, args, large_smem);
    }
  }
  return launch(ShapeTag<Ordinary>{}, ordinary, smem);
}

// Piece `part` of `parts` of a copy loop `for (e = first; e < total; e += step)`, first < step: the
// indices [begin, end), begin a multiple of step, so that each thread starts at begin + first and
// keeps its own residue; the pieces cover [0, total) once, in order (checked on the host by
// cuda/tests/stage_layout_check.cu).
struct CopyPiece {
  int begin, end;
  __host__ __device__ __forceinline__ CopyPiece(int total, int step, int part, int parts) {
    const int per = ((total + parts - 1) / parts + step - 1) / step * step;
    const int start = part * per;
    begin = start < total ? start : total;
    end = total - begin < per ? total : begin + per;
  }
};

// The loop of a pipelined transform's persistent block (the pipelined strategy of either direction):
// groups g = blockIdx.x, + gridDim.x, ... of `groups`, two shared-memory buffers of buffer_elements
// floats.
// copy(buffer, g, part) issues piece `part` (of kCopyParts, CopyPiece) of group g's cp.async copies
// into a buffer; process(buffer, g, copy_rest) transforms group g from it once they have landed (all
// threads' copies), may use the whole buffer, and calls copy_rest() once, every thread at the same
// point, which issues the next group's pieces after the first (nothing where kCopyParts is 1). With
// one piece a thread issues the next group's copies in one burst before the group is processed; with
// two, half there and half at copy_rest(), so that fewer copies wait at once for the LSU, but the copy
// loop's code is inlined twice into the loop (that cost the forward more in instruction fetches
// than it saved: config::kForwardPipeline). The copies of the next group go into the other buffer while a
// group is processed; that buffer was last used by the group before, which every thread has finished
// (the barrier after process). With kFirstAlone a thread waits for its first group's copies before
// it issues the second group's: every block starts by waiting for its first group, which then lands
// sooner, its copies not sharing the memory system with the second group's, and the second group's
// copies still overlap the first group's transform. A persistent block of Mathieu's layer has about
// four groups, so the first one's wait is a good part of its time (the inverses gained 2-8%, the
// forward did not: config::kInversePipeline). sm_80+.
//   Commit groups, oldest first, while group g is processed: ..., g's first piece, g's other pieces,
//   the next group's first piece; waiting until one is pending waits for all of g's.
template <int kCopyParts, bool kFirstAlone, typename Copy, typename Process>
__device__ __forceinline__ void RunPipelinedGroups(float* buffers, int buffer_elements, int groups, Copy&& copy,
                                                   Process&& process) {
  int g = blockIdx.x;
  if (g < groups) {
#pragma unroll
    for (int part = 0; part < kCopyParts; ++part) copy(buffers, g, part);
  }
  CpAsyncCommit();
  if constexpr (kFirstAlone) CpAsyncWait<0>();  // the first group alone in flight (see above)
  for (int k = 0; g < groups; ++k, g += gridDim.x) {
    float* const buffer = buffers + (k & 1) * buffer_elements;
    float* const next = buffers + ((k + 1) & 1) * buffer_elements;
    const int g_next = g + gridDim.x;
    if (g_next < groups) copy(next, g_next, 0);
    CpAsyncCommit();
    CpAsyncWait<1>();  // group g's copies have landed (this thread's)
    __syncthreads();   // ... and every thread's
    process(buffer, g, [&] {
      if constexpr (kCopyParts > 1) {
        if (g_next < groups) {
#pragma unroll
          for (int part = 1; part < kCopyParts; ++part) copy(next, g_next, part);
        }
        CpAsyncCommit();
      }
    });
    __syncthreads();   // the buffer is free for the group after next
  }
  CpAsyncWait<0>();  // the last groups committed are empty; leave none outstanding
}

// RunPipelinedGroups' loop where one thread fills each buffer with a tensor copy (sm_90+): issue(buffer,
// g, barrier) issues group g's copy into a buffer, completing on `barrier`; process(buffer, g)
// transforms the group once it has landed. barriers: two in shared memory, one per buffer; a
// buffer's k-th copy completes its barrier's phase k, so its wait is for parity k % 2. The next
// group's copy goes into the other buffer before this group is processed; that buffer was last read
// and written by the group before, which every thread has finished (the barrier ending each group),
// after a fence that orders those accesses before the copy's writes.
template <typename Issue, typename Process>
__device__ __forceinline__ void RunTensorCopyGroups(float* buffers, int buffer_elements,
                                                    unsigned long long* barriers, int groups, Issue&& issue,
                                                    Process&& process) {
  const bool issuer = threadIdx.x == 0;
  if (issuer) {
    BarrierInit(&barriers[0]);
    BarrierInit(&barriers[1]);
  }
  __syncthreads();
  int g = blockIdx.x;
  if (issuer && g < groups) issue(buffers, g, &barriers[0]);
  for (int k = 0; g < groups; ++k, g += gridDim.x) {
    const int slot = k & 1;
    const int g_next = g + gridDim.x;
    if (issuer && g_next < groups) issue(buffers + (slot ^ 1) * buffer_elements, g_next, &barriers[slot ^ 1]);
    BarrierWait(&barriers[slot], (k >> 1) & 1);
    process(buffers + slot * buffer_elements, g);
    FenceBeforeTensorCopy();
    __syncthreads();  // the buffer is free for the group after next
  }
}

// Blocks per SM of a pipelined transform (the pipelined strategy of either direction: persistent
// blocks with two buffers, each a group's spectrum of S (S/2 + 1) G complex values or less): as many
// as the buffers leave room for in the 227 KB of an H100 or H200, at most the shape's own minimum (its
// register budget). The pipelined strategy is built only for shapes that keep two blocks per SM
// (kPipelinable; the launch checks the device's own shared memory): with one, every barrier idles
// the SM, and the 40 frame's 640-thread forward shape measured slower than the staged strategy.
template <int S, typename Shape>
constexpr int PipelinedMinBlocks() {
  constexpr int kFit = 227 * 1024 / (2 * (8 * S * (S / 2 + 1) * Shape::kImagesPerBlock + 1024));
  return kFit < Shape::kMinBlocks ? kFit : Shape::kMinBlocks;
}
template <int S, typename Shape>
constexpr bool kPipelinable = PipelinedMinBlocks<S, Shape>() >= 2;

// The launchers' entry: the device's shared memory (limits, CurrentDeviceLimits), then LargeShape or
// FftShape of the transform's direction and layout (LaunchWithShapes).
template <typename Real, int S, bool kInverse, typename MakeArgs, typename Launch>
int LaunchPreferringLarge(const DeviceLimits& limits, bool nhwc, int channels, MakeArgs&& make_args,
                          Launch&& launch) {
  const size_t max_smem = static_cast<size_t>(limits.max_shared_per_block);
  using Ordinary = FftShape<Real, S, kInverse>;
  using LargeNhwc = LargeShape<Real, S, kInverse, true>;
  using LargeNchw = LargeShape<Real, S, kInverse, false>;
  return nhwc ? LaunchWithShapes<S, LargeNhwc, Ordinary>(true, channels, max_smem, make_args, launch)
              : LaunchWithShapes<S, LargeNchw, Ordinary>(false, channels, max_smem, make_args, launch);
}

// ---- Launch helpers shared by the forward and inverse launchers (host code).

// Calls launch(std::integral_constant<int, S>{}) for the run-time FFT size s, one kernel family per S.
template <typename Launch>
int DispatchFftSize(int s, Launch&& launch) {
  switch (s) {
    case 2: return launch(std::integral_constant<int, 2>{});
    case 4: return launch(std::integral_constant<int, 4>{});
    case 6: return launch(std::integral_constant<int, 6>{});
    case 8: return launch(std::integral_constant<int, 8>{});
    case 10: return launch(std::integral_constant<int, 10>{});
    case 12: return launch(std::integral_constant<int, 12>{});
    case 16: return launch(std::integral_constant<int, 16>{});
    case 20: return launch(std::integral_constant<int, 20>{});
    case 24: return launch(std::integral_constant<int, 24>{});
    case 32: return launch(std::integral_constant<int, 32>{});
    case 40: return launch(std::integral_constant<int, 40>{});
    case 48: return launch(std::integral_constant<int, 48>{});
    case 64: return launch(std::integral_constant<int, 64>{});
    case 80: return launch(std::integral_constant<int, 80>{});
    case 96: return launch(std::integral_constant<int, 96>{});
    case 128: return launch(std::integral_constant<int, 128>{});
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

// 16-byte global accesses in the stage's copy: float only (Io, the tensors' storage type), a strategy
// with a stage, an aligned pointer, whole float4 groups of images per block and, in NHWC, of channels.
template <typename Real>
bool UseVectorIo(const void* global, config::FftStrategy strategy, int images_per_block, bool nhwc, int channels) {
  if (!std::is_same<Real, float>::value || strategy == config::FftStrategy::kDirect) return false;
  const bool aligned = (reinterpret_cast<uintptr_t>(global) & 15) == 0;
  return aligned && images_per_block % 4 == 0 && (!nhwc || channels % 4 == 0);
}

// Bytes of each of the pipelined strategy's two buffers that hold `bytes`: whole 16-byte quads for the
// 16-byte copies and, where the stage is pixel-major (NHWC), whole 128-byte lines, so that the second
// buffer starts line-aligned like the first: the forward's swizzled stage rows need it, and the
// inverse's spectrum copies then take 16 wavefronts per warp instruction (18.6 where the second
// buffer started 32 bytes past a line).
inline size_t PipelineBufferBytes(size_t bytes, bool pixel_major) {
  const size_t align = pixel_major ? 128 : 16;
  return (bytes + align - 1) / align * align;
}

// The grid of a pipelined transform (the pipelined strategy) whose blocks take `smem` bytes of shared
// memory, or 0 where the strategy does not apply. Per SM: at most PipelinedMinBlocks (its registers) and as many as fit
// in an SM's shared memory (max_smem, the opt-in limit of one block, and the 1 KB the SM reserves per
// block), counted here rather than asked of the occupancy API, so that a launch calls nothing but the
// launch itself. The pipelined strategy needs two blocks per SM and some block with two groups or
// more: with one group each there is no next group to copy early, and the staged strategy's loads
// were faster (a 16 frame's 512
// groups: 0.0125 against 0.0133 ms).
template <int S, typename Shape>
int PipelinedGrid(int groups, int multiprocessors, size_t max_smem, size_t smem) {
  const size_t fit = (max_smem + 1024) / (smem + 1024);
  const int per_sm = fit < static_cast<size_t>(PipelinedMinBlocks<S, Shape>()) ? static_cast<int>(fit)
                                                                                 : PipelinedMinBlocks<S, Shape>();
  const long long blocks = PersistentBlocks(multiprocessors, per_sm);
  return per_sm >= 2 && groups > blocks ? static_cast<int>(blocks) : 0;
}

}  // namespace detail
}  // namespace cuda
}  // namespace fftconv

#endif  // TF_FFTCONV_CUDA_FFT_STAGES_CUH_
