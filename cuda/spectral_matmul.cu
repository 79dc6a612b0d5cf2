// Batched complex matmul, one product per frequency bin: c[f] = alpha * op_a(a[f]) * op_b(b[f]).
//
// Three kernels:
//   * ComplexGemmSimt : shared-memory tiled FP32 / FP64 kernel for every architecture. Tiles of op_a and
//     op_b (op applied while loading: transpose by index, conjugate by sign) are double-buffered in shared
//     memory; each thread accumulates a TM x TN block of complex outputs with 4 real FMAs per product.
//   * ComplexGemmTf32 : float on sm_80+ with TF32 allowed. The complex product is one real GEMM
//       C2[M x 2N] = A2[M x 2K] * B2[2K x 2N],  A2[m][2k+s] = (Re, Im)[s] of A[m][k],
//       B2 2x2 block of B[k][n] = [[Re, Im], [-Im, Re]],
//     so C2 is exactly c's interleaved (re, im) memory. It runs on mma.sync.m16n8k8 tf32 tensor cores
//     with FP32 accumulation; operands are rounded to TF32 (cvt.rna) when stored to shared memory.
//   * ComplexGemmHalfMma : half-precision spectra ((re, im) pairs of __half or __nv_bfloat16) on
//     sm_80+: the same real GEMM on mma.sync.m16n8k16 with f16 / bf16 operands and FP32
//     accumulation. Each 32-bit register of an A fragment is one stored (re, im) pair, so operands go
//     from global to shared memory as they are (conjugation flips a sign bit). Older GPUs take the
//     SIMT kernel, which converts half pairs to float2 as it loads its tiles.
// alpha is applied to the FP32 / FP64 accumulators before the product is rounded to its storage.
// Grid: x = output tiles of one bin (m-major), y = bin.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "device_info.h"
#include "fft_common.cuh"
#include "fftconv_cuda.h"

namespace fftconv {
namespace cuda {
namespace {

using detail::complex_t;

struct MatmulArgs {
  int m, n, k;
  int lda, ldb;                        // row length of a[f] and b[f] in memory (complex elements)
  long long a_bin, b_bin, c_bin;       // elements per bin
  bool a_trans, a_conj, b_trans, b_conj;
  int tiles_n;                         // output tiles along n; blockIdx.x = tile_m * tiles_n + tile_n
  double alpha;                        // c = alpha * op_a(a) op_b(b), rounded once to the compute type
};

// Loads a ROWS x COLS tile of op(x) for one bin (op: identity, or transpose when kTrans), kLoads complex
// values per thread, zero outside the matrix. Consecutive threads follow the axis that is contiguous
// in memory (coalesced); element r of a thread sits kThreads / (contiguous extent) rows or columns
// after element 0. Conjugation is applied by the caller.
template <bool kTrans, int ROWS, int COLS, int kThreads>
struct TileLoader {
  static constexpr int kLoads = ROWS * COLS / kThreads;
  static constexpr int kRowStep = kTrans ? 0 : kThreads / COLS;
  static constexpr int kColStep = kTrans ? kThreads / ROWS : 0;
  static_assert(kLoads * kThreads == ROWS * COLS, "tile loads");
  static_assert(kTrans ? kThreads % ROWS == 0 : kThreads % COLS == 0, "tile loader shape");
  int row, col;  // tile coordinate of element 0

  __device__ __forceinline__ explicit TileLoader(int tid) {
    row = kTrans ? tid % ROWS : tid / COLS;
    col = kTrans ? tid / ROWS : tid % COLS;
  }
  // (row0, col0): tile origin in op(x); rows x cols: size of op(x); ld: row length of x in memory.
  // P is the stored element (float2, double2, or a half pair converted to float2 here).
  template <typename P, typename C>
  __device__ __forceinline__ void Load(const P* __restrict__ x, int row0, int col0, int rows, int cols, int ld,
                                       C (&v)[kLoads]) const {
#pragma unroll
    for (int r = 0; r < kLoads; ++r) {
      const int gr = row0 + row + r * kRowStep, gc = col0 + col + r * kColStep;
      v[r] = (gr < rows && gc < cols) ? C(detail::ToCompute(x[kTrans ? gc * ld + gr : gr * ld + gc]))
                                      : C{0, 0};  // < 2^31 per bin
    }
  }
  // The same for raw 32-bit words (a half pair as it is stored), 0 outside the matrix.
  __device__ __forceinline__ void LoadWords(const uint32_t* __restrict__ x, int row0, int col0, int rows,
                                            int cols, int ld, uint32_t (&v)[kLoads]) const {
#pragma unroll
    for (int r = 0; r < kLoads; ++r) {
      const int gr = row0 + row + r * kRowStep, gc = col0 + col + r * kColStep;
      v[r] = (gr < rows && gc < cols) ? __ldg(x + (kTrans ? gc * ld + gr : gr * ld + gc)) : 0u;
    }
  }
  __device__ __forceinline__ int Row(int r) const { return row + r * kRowStep; }
  __device__ __forceinline__ int Col(int r) const { return col + r * kColStep; }
};

// ------------------------------------------------------------------------------------------------
// SIMT kernel. Tiles: BM x BK of op_a, BK x BN of op_b; thread tile TM x TN; 256 threads.
// Io: the storage type (float, double, __half, __nv_bfloat16); a, b, c: [bins][rows][cols] of
// Storage<Io>::Pair; tiles and accumulators in the compute type.
template <typename Io, int BM, int BN, int TM, int TN, bool kTransA, bool kTransB>
__global__ void __launch_bounds__(256, sizeof(typename detail::Storage<Io>::Compute) == 4 ? 2 : 1)
    ComplexGemmSimt(const typename detail::Storage<Io>::Pair* __restrict__ a,
                    const typename detail::Storage<Io>::Pair* __restrict__ b,
                    typename detail::Storage<Io>::Pair* __restrict__ c, const MatmulArgs args) {
  using Real = typename detail::Storage<Io>::Compute;
  using Pair = typename detail::Storage<Io>::Pair;
  using C = complex_t<Real>;
  constexpr int BK = 8;
  constexpr int kThreads = 256;
  static_assert((BM / TM) * (BN / TN) == kThreads, "thread tile");
  constexpr int kLoadsA = BM * BK / kThreads;
  constexpr int kLoadsB = BN * BK / kThreads;
  static_assert(kLoadsA * kThreads == BM * BK && kLoadsB * kThreads == BN * BK, "tile loads");

  // a_tile[buf][kk][mm] = op_a(a)[m0 + mm][k0 + kk]; b_tile[buf][kk][nn] = op_b(b)[k0 + kk][n0 + nn].
  // Rows padded by 2 complex (16 bytes) to spread banks and keep 16-byte alignment.
  __shared__ __align__(16) C a_tile[2][BK][BM + 2];
  __shared__ __align__(16) C b_tile[2][BK][BN + 2];

  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN), ty = tid / (BN / TN);
  const int tile_m = blockIdx.x / args.tiles_n, tile_n = blockIdx.x % args.tiles_n;
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const size_t f = blockIdx.y;
  a += f * args.a_bin;
  b += f * args.b_bin;
  c += f * args.c_bin;

  const TileLoader<kTransA, BM, BK, kThreads> a_loader(tid);
  const TileLoader<kTransB, BK, BN, kThreads> b_loader(tid);
  const Real a_sign = args.a_conj ? Real(-1) : Real(1), b_sign = args.b_conj ? Real(-1) : Real(1);
  C ra[kLoadsA], rb[kLoadsB];
  auto load = [&](int k0) {
    a_loader.Load(a, m0, k0, args.m, args.k, args.lda, ra);
    b_loader.Load(b, k0, n0, args.k, args.n, args.ldb, rb);
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int r = 0; r < kLoadsA; ++r) a_tile[buf][a_loader.Col(r)][a_loader.Row(r)] = C{ra[r].x, a_sign * ra[r].y};
#pragma unroll
    for (int r = 0; r < kLoadsB; ++r) b_tile[buf][b_loader.Row(r)][b_loader.Col(r)] = C{rb[r].x, b_sign * rb[r].y};
  };

  C acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = C{0, 0};

  const int k_tiles = (args.k + BK - 1) / BK;
  load(0);
  store(0);
  __syncthreads();
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int buf = kt & 1;
    const bool more = kt + 1 < k_tiles;
    if (more) load((kt + 1) * BK);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      C av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) av[i] = a_tile[buf][kk][ty * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) bv[j] = b_tile[buf][kk][tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          acc[i][j].x = fma(av[i].x, bv[j].x, acc[i][j].x);
          acc[i][j].x = fma(-av[i].y, bv[j].y, acc[i][j].x);
          acc[i][j].y = fma(av[i].x, bv[j].y, acc[i][j].y);
          acc[i][j].y = fma(av[i].y, bv[j].x, acc[i][j].y);
        }
      }
    }
    if (more) store(buf ^ 1);
    __syncthreads();
  }

  const Real alpha = static_cast<Real>(args.alpha);
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + ty * TM + i;
    if (m >= args.m) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int n = n0 + tx * TN + j;
      if (n < args.n) c[static_cast<size_t>(m) * args.n + n] = detail::ToStorage<Pair>(detail::CScale(acc[i][j], alpha));
    }
  }
}

// ------------------------------------------------------------------------------------------------
// TF32 tensor-core kernel (sm_80+). Block tile 128 x (16 * kWarpsN) complex outputs, BK = 8 complex;
// warps 2 (m) x kWarpsN (n), each computing 64 rows x 16 complex columns with m16n8k8 MMAs.
constexpr int kTf32Bm = 128;
#ifndef FFTCONV_TF32_BK
#define FFTCONV_TF32_BK 8
#endif
#ifndef FFTCONV_TF32_MIN_BLOCKS
#define FFTCONV_TF32_MIN_BLOCKS 2
#endif
// Narrow tiles (32 complex columns) are used when they save at least this share (%) of padded work
// (measured on H200: narrow tiles win for n = 96 although wide ones are faster per useful FLOP).
#ifndef FFTCONV_TF32_NARROW_GAIN
#define FFTCONV_TF32_NARROW_GAIN 1
#endif
constexpr int kTf32Bk = FFTCONV_TF32_BK;     // complex k per tile
constexpr int kTf32RowFloats = 2 * kTf32Bk + 8;  // shared row stride (floats): = 8 (mod 16) keeps the
                                                 // 64-bit fragment loads of a half-warp on distinct banks

template <int kWarpsN>
struct Tf32Tile {
  static constexpr int kThreads = 64 * kWarpsN;
  static constexpr int kBn = 16 * kWarpsN;  // complex columns
  // Shared memory (floats, TF32 bit patterns), double-buffered:
  //   a2[buf][row m][k'] : A2 tile, row stride kTf32RowFloats
  //   b2[buf][col n'][k']: B2 tile transposed (n' = 2n + t), same row stride
  // Inside each group of 8 real k' the order is permuted (k' = t and t + 4 side by side) so that one
  // 64-bit load gives both halves of an MMA fragment.
  static constexpr int kAFloats = kTf32Bm * kTf32RowFloats;
  static constexpr int kBFloats = 2 * kBn * kTf32RowFloats;
  static constexpr size_t kSmemBytes = sizeof(float) * 2 * (kAFloats + kBFloats);
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// Position of real k' inside its group of 8 in shared memory: k' = t and t + 4 side by side.
__device__ __forceinline__ int PermuteK(int kr) { return (kr & ~7) | (2 * (kr & 3)) | ((kr >> 2) & 1); }

__device__ __forceinline__ float ToTf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}
__device__ __forceinline__ void MmaTf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

// The epilogue of both tensor-core kernels: a warp's accumulators, times alpha, into C [M, N] complex
// (Pair: float2, or a half pair). acc[mi][ni] = (e0, e1) / (e2, e3): (re, im) of rows g / g + 8 of
// the 16-row tile mi (from row m_first), complex column t of the 4-column tile ni (from n_first).
template <int kRowTiles, typename Pair>
__device__ __forceinline__ void StoreWarpTile(const float (&acc)[kRowTiles][4][4], Pair* c,
                                              int m_first, int n_first, int g, int t,
                                              const MatmulArgs& args) {
  const float alpha = static_cast<float>(args.alpha);
#pragma unroll
  for (int mi = 0; mi < kRowTiles; ++mi) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = m_first + mi * 16 + g + 8 * half;
      if (m >= args.m) continue;
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const int n = n_first + ni * 4 + t;
        if (n < args.n) {
          c[static_cast<size_t>(m) * args.n + n] = detail::ToStorage<Pair>(
              make_float2(alpha * acc[mi][ni][2 * half], alpha * acc[mi][ni][2 * half + 1]));
        }
      }
    }
  }
}

template <int kWarpsN, bool kTransA, bool kTransB>
__global__ void __launch_bounds__(64 * kWarpsN, FFTCONV_TF32_MIN_BLOCKS)
    ComplexGemmTf32(const float2* __restrict__ a, const float2* __restrict__ b, float2* __restrict__ c,
                    const MatmulArgs args) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Tile = Tf32Tile<kWarpsN>;
  constexpr int kThreads = Tile::kThreads;
  constexpr int BM = kTf32Bm, BN = Tile::kBn, BK = kTf32Bk, RS = kTf32RowFloats;
  constexpr int kLoadsA = BM * BK / kThreads;
  constexpr int kLoadsB = BK * BN / kThreads;
  static_assert(kLoadsA * kThreads == BM * BK && kLoadsB * kThreads == BK * BN, "tile loads");

  extern __shared__ __align__(16) float smem_f[];
  float* a2 = smem_f;                      // [2][BM][RS]
  float* b2 = smem_f + 2 * Tile::kAFloats;  // [2][2 * BN][RS]

  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int warp_m = warp & 1, warp_n = warp >> 1;
  const int tile_m = blockIdx.x / args.tiles_n, tile_n = blockIdx.x % args.tiles_n;
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const size_t f = blockIdx.y;
  a += f * args.a_bin;
  b += f * args.b_bin;
  c += f * args.c_bin;

  const TileLoader<kTransA, BM, BK, kThreads> a_loader(tid);
  const TileLoader<kTransB, BK, BN, kThreads> b_loader(tid);
  // Conjugation flips the sign bit of the imaginary parts.
  const uint32_t a_flip = args.a_conj ? 0x80000000u : 0u, b_flip = args.b_conj ? 0x80000000u : 0u;
  float2 ra[kLoadsA], rb[kLoadsB];
  auto load = [&](int k0) {
    a_loader.Load(a, m0, k0, args.m, args.k, args.lda, ra);
    b_loader.Load(b, k0, n0, args.k, args.n, args.ldb, rb);
  };
  auto store = [&](int buf) {
    float* a2b = a2 + buf * Tile::kAFloats;
    float* b2b = b2 + buf * Tile::kBFloats;
#pragma unroll
    for (int r = 0; r < kLoadsA; ++r) {
      const int mm = a_loader.Row(r), kk = a_loader.Col(r);
      a2b[mm * RS + PermuteK(2 * kk)] = ToTf32(ra[r].x);
      a2b[mm * RS + PermuteK(2 * kk + 1)] = __uint_as_float(__float_as_uint(ToTf32(ra[r].y)) ^ a_flip);
    }
#pragma unroll
    for (int r = 0; r < kLoadsB; ++r) {
      const int kk = b_loader.Row(r), nn = b_loader.Col(r);
      const float re = ToTf32(rb[r].x);
      const float im = __uint_as_float(__float_as_uint(ToTf32(rb[r].y)) ^ b_flip);
      b2b[(2 * nn) * RS + PermuteK(2 * kk)] = re;
      b2b[(2 * nn) * RS + PermuteK(2 * kk + 1)] = -im;
      b2b[(2 * nn + 1) * RS + PermuteK(2 * kk)] = im;
      b2b[(2 * nn + 1) * RS + PermuteK(2 * kk + 1)] = re;
    }
  };

  float acc[4][4][4];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.f;

  const int k_tiles = (args.k + BK - 1) / BK;
  load(0);
  store(0);
  __syncthreads();
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int buf = kt & 1;
    const bool more = kt + 1 < k_tiles;
    if (more) load((kt + 1) * BK);
    const float* a2b = a2 + buf * Tile::kAFloats;
    const float* b2b = b2 + buf * Tile::kBFloats;
#pragma unroll
    for (int ks = 0; ks < 2 * BK / 8; ++ks) {
      uint32_t af[4][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const int row = warp_m * 64 + mi * 16 + g;
        const float2 lo = *reinterpret_cast<const float2*>(a2b + row * RS + ks * 8 + 2 * t);
        const float2 hi = *reinterpret_cast<const float2*>(a2b + (row + 8) * RS + ks * 8 + 2 * t);
        af[mi][0] = __float_as_uint(lo.x);
        af[mi][1] = __float_as_uint(hi.x);
        af[mi][2] = __float_as_uint(lo.y);
        af[mi][3] = __float_as_uint(hi.y);
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const int col = warp_n * 32 + ni * 8 + g;
        const float2 v = *reinterpret_cast<const float2*>(b2b + col * RS + ks * 8 + 2 * t);
        bf[ni][0] = __float_as_uint(v.x);
        bf[ni][1] = __float_as_uint(v.y);
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) MmaTf32(acc[mi][ni], af[mi], bf[ni]);
    }
    if (more) store(buf ^ 1);
    __syncthreads();
  }

  StoreWarpTile(acc, c, m0 + warp_m * 64, n0 + warp_n * 16, g, t, args);
#endif  // __CUDA_ARCH__ >= 800
}

// ------------------------------------------------------------------------------------------------
// Half-precision tensor-core kernel (sm_80+), Io = __half or __nv_bfloat16. The complex product is
// the real GEMM of ComplexGemmTf32, C2[M x 2N] = A2[M x 2K] * B2[2K x 2N], on m16n8k16 MMAs:
//   A fragment register (row r, real k' = 2k, 2k+1) = (Re, Im) of op_a(a)[r][k]: one stored pair;
//   B fragment register (real k' = 2k, 2k+1; real column 2n) = (Re, -Im) of op_b(b)[k][n],
//   and for real column 2n + 1 = (Im, Re);
//   accumulator (row r, real columns 2j, 2j+1) = (Re, Im) of c[r][j].
// Block tile 64 x 32 complex outputs, BK = 16 complex; 4 warps, 2 (m) x 2 (n), each 32 rows x 16
// complex columns (2 x 4 MMAs per 16 real k'). Shared memory holds 32-bit pair words:
//   a_s[m][k]       : op_a pair of row m, complex k (conjugated), row stride RS
//   b_s[n'][k]      : the B2 pair of real column n' = 2n + u at complex k, same row stride
// The row stride, BK + 4 = 20 (mod 32): the fragment loads of a warp (8 rows x 4 words) hit 32 banks.
constexpr int kHalfBm = 64, kHalfBn = 32, kHalfBk = 16, kHalfThreads = 128;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <typename Io>
__device__ __forceinline__ void MmaHalf(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (std::is_same<Io, __half>::value) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}
#endif

// a, b: [bins][rows][cols] pairs as 32-bit words (Re in the low half); c: [bins][m][n] pairs.
template <typename Io, bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kHalfThreads)
    ComplexGemmHalfMma(const uint32_t* __restrict__ a, const uint32_t* __restrict__ b,
                       typename detail::Storage<Io>::Pair* __restrict__ c, const MatmulArgs args) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Pair = typename detail::Storage<Io>::Pair;
  constexpr int BM = kHalfBm, BN = kHalfBn, BK = kHalfBk, RS = kHalfBk + 4;
  constexpr int kLoadsA = BM * BK / kHalfThreads;
  constexpr int kLoadsB = BK * BN / kHalfThreads;
  __shared__ __align__(16) uint32_t a_s[BM * RS];
  __shared__ __align__(16) uint32_t b_s[2 * BN * RS];

  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int warp_m = warp & 1, warp_n = warp >> 1;
  const int tile_m = blockIdx.x / args.tiles_n, tile_n = blockIdx.x % args.tiles_n;
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const size_t f = blockIdx.y;
  a += f * args.a_bin;
  b += f * args.b_bin;
  c += f * args.c_bin;

  const TileLoader<kTransA, BM, BK, kHalfThreads> a_loader(tid);
  const TileLoader<kTransB, BK, BN, kHalfThreads> b_loader(tid);
  // Sign bit of the imaginary half (high 16 bits of a pair) and of the real half (low 16 bits).
  constexpr uint32_t kImSign = 0x80000000u, kReSign = 0x00008000u;
  const uint32_t a_flip = args.a_conj ? kImSign : 0u;
  // Column 2n: (Re, -Im) of op_b(b), op_b conjugating Im first; column 2n + 1: (Im, Re), swapped.
  const uint32_t b_flip_re_col = args.b_conj ? 0u : kImSign;
  const uint32_t b_flip_im_col = args.b_conj ? kReSign : 0u;
  uint32_t ra[kLoadsA], rb[kLoadsB];
  auto load = [&](int k0) {
    a_loader.LoadWords(a, m0, k0, args.m, args.k, args.lda, ra);
    b_loader.LoadWords(b, k0, n0, args.k, args.n, args.ldb, rb);
  };
  auto store = [&]() {
#pragma unroll
    for (int r = 0; r < kLoadsA; ++r) a_s[a_loader.Row(r) * RS + a_loader.Col(r)] = ra[r] ^ a_flip;
#pragma unroll
    for (int r = 0; r < kLoadsB; ++r) {
      const int kk = b_loader.Row(r), nn = b_loader.Col(r);
      b_s[(2 * nn) * RS + kk] = rb[r] ^ b_flip_re_col;
      b_s[(2 * nn + 1) * RS + kk] = __byte_perm(rb[r], 0, 0x1032) ^ b_flip_im_col;
    }
  };

  float acc[2][4][4];
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.f;

  const int k_tiles = (args.k + BK - 1) / BK;
  load(0);
  for (int kt = 0; kt < k_tiles; ++kt) {
    store();
    __syncthreads();
    if (kt + 1 < k_tiles) load((kt + 1) * BK);  // in flight during the MMAs below
#pragma unroll
    for (int ks = 0; ks < BK / 8; ++ks) {
      uint32_t af[2][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        const int row = warp_m * 32 + mi * 16 + g;
        af[mi][0] = a_s[row * RS + ks * 8 + t];
        af[mi][1] = a_s[(row + 8) * RS + ks * 8 + t];
        af[mi][2] = a_s[row * RS + ks * 8 + t + 4];
        af[mi][3] = a_s[(row + 8) * RS + ks * 8 + t + 4];
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const int col = warp_n * 32 + ni * 8 + g;  // real column n'
        bf[ni][0] = b_s[col * RS + ks * 8 + t];
        bf[ni][1] = b_s[col * RS + ks * 8 + t + 4];
      }
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) MmaHalf<Io>(acc[mi][ni], af[mi], bf[ni]);
    }
    __syncthreads();
  }

  StoreWarpTile(acc, c, m0 + warp_m * 32, n0 + warp_n * 16, g, t, args);
#endif  // __CUDA_ARCH__ >= 800
}

// ------------------------------------------------------------------------------------------------
template <typename Io, int BM, int BN, int TM, int TN>
int LaunchSimt(MatmulArgs args, int bins, const typename detail::Storage<Io>::Pair* a,
               const typename detail::Storage<Io>::Pair* b, typename detail::Storage<Io>::Pair* c,
               cudaStream_t stream) {
  const long long tiles_m = (args.m + BM - 1) / BM;
  args.tiles_n = (args.n + BN - 1) / BN;
  const dim3 grid(static_cast<unsigned>(tiles_m * args.tiles_n), static_cast<unsigned>(bins));
  if (args.a_trans) {
    if (args.b_trans) {
      ComplexGemmSimt<Io, BM, BN, TM, TN, true, true><<<grid, 256, 0, stream>>>(a, b, c, args);
    } else {
      ComplexGemmSimt<Io, BM, BN, TM, TN, true, false><<<grid, 256, 0, stream>>>(a, b, c, args);
    }
  } else {
    if (args.b_trans) {
      ComplexGemmSimt<Io, BM, BN, TM, TN, false, true><<<grid, 256, 0, stream>>>(a, b, c, args);
    } else {
      ComplexGemmSimt<Io, BM, BN, TM, TN, false, false><<<grid, 256, 0, stream>>>(a, b, c, args);
    }
  }
  return static_cast<int>(cudaGetLastError());
}

template <int kWarpsN>
int LaunchTf32(MatmulArgs args, int bins, const float2* a, const float2* b, float2* c, cudaStream_t stream) {
  using Tile = Tf32Tile<kWarpsN>;
  const long long tiles_m = (args.m + kTf32Bm - 1) / kTf32Bm;
  args.tiles_n = (args.n + Tile::kBn - 1) / Tile::kBn;
  auto kernel = args.a_trans ? (args.b_trans ? ComplexGemmTf32<kWarpsN, true, true> : ComplexGemmTf32<kWarpsN, true, false>)
                             : (args.b_trans ? ComplexGemmTf32<kWarpsN, false, true> : ComplexGemmTf32<kWarpsN, false, false>);
  cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Tile::kSmemBytes));
  if (e != cudaSuccess) return static_cast<int>(e);
  const dim3 grid(static_cast<unsigned>(tiles_m * args.tiles_n), static_cast<unsigned>(bins));
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, stream>>>(a, b, c, args);
  return static_cast<int>(cudaGetLastError());
}

template <typename Io>
int LaunchHalfMma(MatmulArgs args, int bins, const uint32_t* a, const uint32_t* b,
                  typename detail::Storage<Io>::Pair* c, cudaStream_t stream) {
  const long long tiles_m = (args.m + kHalfBm - 1) / kHalfBm;
  args.tiles_n = (args.n + kHalfBn - 1) / kHalfBn;
  auto kernel = args.a_trans ? (args.b_trans ? ComplexGemmHalfMma<Io, true, true> : ComplexGemmHalfMma<Io, true, false>)
                             : (args.b_trans ? ComplexGemmHalfMma<Io, false, true> : ComplexGemmHalfMma<Io, false, false>);
  const dim3 grid(static_cast<unsigned>(tiles_m * args.tiles_n), static_cast<unsigned>(bins));
  kernel<<<grid, kHalfThreads, 0, stream>>>(a, b, c, args);
  return static_cast<int>(cudaGetLastError());
}

inline long long PaddedArea(int m, int n, int bm, int bn) {
  return static_cast<long long>((m + bm - 1) / bm) * bm * static_cast<long long>((n + bn - 1) / bn) * bn;
}

// a, b, c: pairs, as Io values (re, im).
template <typename Real>
int LaunchSpectralMatmulOf(const SpectralMatmulParams& p, const Real* a, const Real* b, Real* c,
                           cudaStream_t stream) {
  using C = typename detail::Storage<Real>::Pair;
  if (p.bins <= 0 || p.m <= 0 || p.n <= 0) return 0;
  if (p.k <= 0) {
    // Empty inner dimension: the product is zero.
    const size_t bytes = static_cast<size_t>(p.bins) * p.m * p.n * sizeof(C);
    return static_cast<int>(cudaMemsetAsync(c, 0, bytes, stream));
  }
  MatmulArgs args;
  args.m = p.m;
  args.n = p.n;
  args.k = p.k;
  args.a_trans = p.transpose_a || p.adjoint_a;
  args.a_conj = p.adjoint_a;
  args.b_trans = p.transpose_b || p.adjoint_b;
  args.b_conj = p.adjoint_b;
  args.lda = args.a_trans ? p.m : p.k;  // a[f] is m x k, or k x m when transposed
  args.ldb = args.b_trans ? p.k : p.n;  // b[f] is k x n, or n x k when transposed
  args.a_bin = static_cast<long long>(p.m) * p.k;
  args.b_bin = static_cast<long long>(p.k) * p.n;
  args.c_bin = static_cast<long long>(p.m) * p.n;
  args.tiles_n = 1;
  args.alpha = p.alpha;

  // Kernel choice: TF32 tensor cores for float when allowed on sm_80+, else the FP32 / FP64 tiles;
  // among tile shapes the one that wastes the least work (ties go to the larger tile). Half
  // precision: the f16 / bf16 tensor cores on sm_80+ (the operands are already half precision, so
  // the TF32 switch does not apply), else the SIMT tiles computing in float.
  int choice = 0;  // 0: FP64, 1: TF32 wide, 2: TF32 narrow, 3: FP32 128x64, 4: FP32 128x32, 5: FP32 64x64,
                   // 6: half MMA
  if constexpr (detail::Storage<Real>::kHalf) {
    detail::DeviceLimits limits;
    const int err = detail::CurrentDeviceLimits(&limits);
    if (err != 0) return err;
    if (limits.compute_capability >= 80) {
      choice = 6;
    } else {
      const long long area_big = PaddedArea(p.m, p.n, 128, 64);
      const long long area_narrow = PaddedArea(p.m, p.n, 128, 32);
      const long long area_small = PaddedArea(p.m, p.n, 64, 64);
      choice = (area_big <= area_narrow && area_big <= area_small) ? 3 : (area_narrow <= area_small ? 4 : 5);
    }
  } else if constexpr (std::is_same<Real, float>::value) {
    bool tf32 = false;
    if (p.allow_tf32) {
      detail::DeviceLimits limits;
      const int err = detail::CurrentDeviceLimits(&limits);
      if (err != 0) return err;
      tf32 = limits.compute_capability >= 80;
    }
    if (tf32) {
      const long long narrow = PaddedArea(p.m, p.n, kTf32Bm, 32), wide = PaddedArea(p.m, p.n, kTf32Bm, 64);
      choice = narrow * 100 <= wide * (100 - FFTCONV_TF32_NARROW_GAIN) ? 2 : 1;
    } else {
      const long long area_big = PaddedArea(p.m, p.n, 128, 64);
      const long long area_narrow = PaddedArea(p.m, p.n, 128, 32);
      const long long area_small = PaddedArea(p.m, p.n, 64, 64);
      choice = (area_big <= area_narrow && area_big <= area_small) ? 3 : (area_narrow <= area_small ? 4 : 5);
    }
  }

  // grid.y holds the bin; more bins than a grid dimension allows are launched in slices.
  constexpr int kMaxGridY = 65535;
  for (int f0 = 0; f0 < p.bins; f0 += kMaxGridY) {
    const int bins = p.bins - f0 < kMaxGridY ? p.bins - f0 : kMaxGridY;
    const C* ca = reinterpret_cast<const C*>(a) + f0 * args.a_bin;
    const C* cb = reinterpret_cast<const C*>(b) + f0 * args.b_bin;
    C* cc = reinterpret_cast<C*>(c) + f0 * args.c_bin;
    int err = 0;
    if constexpr (detail::Storage<Real>::kHalf) {
      switch (choice) {
        case 6:
          err = LaunchHalfMma<Real>(args, bins, reinterpret_cast<const uint32_t*>(ca),
                                    reinterpret_cast<const uint32_t*>(cb), cc, stream);
          break;
        case 3: err = LaunchSimt<Real, 128, 64, 8, 4>(args, bins, ca, cb, cc, stream); break;
        case 4: err = LaunchSimt<Real, 128, 32, 8, 2>(args, bins, ca, cb, cc, stream); break;
        default: err = LaunchSimt<Real, 64, 64, 4, 4>(args, bins, ca, cb, cc, stream); break;
      }
    } else if constexpr (std::is_same<Real, float>::value) {
      switch (choice) {
        case 1: err = LaunchTf32<4>(args, bins, ca, cb, cc, stream); break;
        case 2: err = LaunchTf32<2>(args, bins, ca, cb, cc, stream); break;
        case 3: err = LaunchSimt<float, 128, 64, 8, 4>(args, bins, ca, cb, cc, stream); break;
        case 4: err = LaunchSimt<float, 128, 32, 8, 2>(args, bins, ca, cb, cc, stream); break;
        default: err = LaunchSimt<float, 64, 64, 4, 4>(args, bins, ca, cb, cc, stream); break;
      }
    } else {
      err = LaunchSimt<double, 64, 64, 4, 4>(args, bins, ca, cb, cc, stream);
    }
    if (err != 0) return err;
  }
  return 0;
}

}  // namespace

template <typename Real>
int LaunchSpectralMatmul(const SpectralMatmulParams& p, const Real* a, const Real* b, Real* c,
                         cudaStream_t stream) {
  using Device = typename DeviceType<Real>::type;
  return LaunchSpectralMatmulOf<Device>(p, reinterpret_cast<const Device*>(a),
                                        reinterpret_cast<const Device*>(b), reinterpret_cast<Device*>(c),
                                        stream);
}

template int LaunchSpectralMatmul<float>(const SpectralMatmulParams&, const float*, const float*, float*,
                                         cudaStream_t);
template int LaunchSpectralMatmul<double>(const SpectralMatmulParams&, const double*, const double*, double*,
                                          cudaStream_t);
template int LaunchSpectralMatmul<Float16>(const SpectralMatmulParams&, const Float16*, const Float16*,
                                           Float16*, cudaStream_t);
template int LaunchSpectralMatmul<BFloat16>(const SpectralMatmulParams&, const BFloat16*, const BFloat16*,
                                            BFloat16*, cudaStream_t);

}  // namespace cuda
}  // namespace fftconv
