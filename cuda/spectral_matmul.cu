// Batched complex matmul, one product per frequency bin: c[f] = alpha * op_a(a[f]) * op_b(b[f]).
//
// Four kernels:
//   * ComplexGemmSimt : shared-memory tiled FP64 kernel for every architecture. Tiles of op_a and op_b
//     (op applied while loading: transpose by index, conjugate by sign) are double-buffered in shared
//     memory; each thread accumulates a TM x TN block of complex outputs with 4 real FMAs per product.
//   * ComplexGemmSimtGauss : the same tiles for float arithmetic on GPUs without tensor-core
//     kernels for it (FP32 before sm_80, half precision before sm_80), with 3 real FMAs per
//     complex product.
//   * ComplexGemmTf32 : float on sm_80+. The complex product is one real GEMM
//       C2[M x 2N] = A2[M x 2K] * B2[2K x 2N],  A2[m][2k+s] = (Re, Im)[s] of A[m][k],
//       B2 2x2 block of B[k][n] = [[Re, Im], [-Im, Re]],
//     so C2 is exactly c's interleaved (re, im) memory. It runs on mma.sync.m16n8k8 tf32 tensor cores
//     with FP32 accumulation, fed by a multi-stage cp.async pipeline that copies both operands as
//     they are stored; values are rounded to TF32 (ToTf32) as MMA fragments are built, or taken
//     as they are where the operands hold TF32 values already (tf32_operands: spectra that rfft2d
//     wrote with round_to_tf32, by the same rounding rule), which gives the same product.
//     With TF32 not allowed (kSplit), the same kernel keeps FP32 accuracy: each value is split as
//     x = hi + lo, hi = tf32(x), lo = x - hi (SplitTf32), and each MMA becomes three,
//     lo(a) hi(b) + hi(a) lo(b) + hi(a) hi(b); the dropped lo(a) lo(b) is at most 2^-22 of |a b|
//     and each operand's lo, truncated to TF32, 2^-21 (the kernel check holds the products to
//     FP32's tolerance). The tensor cores' accumulation truncates, so each stage's sums start from
//     zero and are added to the product in FP32, which rounds to nearest.
//   * ComplexGemmHalfMma : half-precision spectra ((re, im) pairs of __half or __nv_bfloat16) on
//     sm_80+: the same real GEMM on mma.sync.m16n8k16 with f16 / bf16 operands and FP32
//     accumulation, on the TF32 kernel's pipeline and tiles. Each 32-bit register of a fragment is
//     one stored (re, im) pair (conjugation flips a sign bit). Older GPUs take the SIMT kernel,
//     which converts half pairs to float2 as it loads its tiles.
// alpha is applied to the FP32 / FP64 accumulators before the product is rounded to its storage.
// Every kernel computes a product whose rows would leave most of a tile empty as
// c^T = op_b(b)^T op_a(a)^T, stored transposed (LaunchSpectralMatmulOf).
// Grid: x = output tiles of one bin (m-major), y = bin.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "complex_math.cuh"
#include "device_info.h"
#include "fftconv_cuda.h"
#include "hardware.cuh"
#include "kernel_config.h"

namespace fftconv {
namespace cuda {
namespace {

using detail::complex_t;
using detail::CpAsync;
using detail::CpAsyncCommit;
using detail::CpAsyncWait;

struct MatmulArgs {
  int m, n, k;
  int lda, ldb;                        // row length of a[f] and b[f] in memory (complex elements)
  long long a_bin, b_bin, c_bin;       // elements per bin
  bool a_trans, a_conj, b_trans, b_conj;
  int tiles_n;                         // output tiles along n; blockIdx.x = tile_m * tiles_n + tile_n
  double alpha;                        // c = alpha * op_a(a) op_b(b), rounded once to the compute type
  bool c_trans;                        // the epilogues store c[f] as [n][m] (the launcher computes
                                       // c^T = op_b(b)^T op_a(a)^T where that wastes less)
};

// Where output (m, n) of one bin is stored: c[f] is [m][n], or [n][m] when computed transposed.
__device__ __forceinline__ size_t OutputIndex(const MatmulArgs& args, int m, int n) {
  return args.c_trans ? static_cast<size_t>(n) * args.m + m : static_cast<size_t>(m) * args.n + n;
}

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
  detail::AwaitPrecedingGrids();
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
      if (n < args.n) c[OutputIndex(args, m, n)] = detail::ToStorage<Pair>(detail::CScale(acc[i][j], alpha));
    }
  }
}

// ------------------------------------------------------------------------------------------------
// SIMT kernel for float arithmetic (float, and half-precision storage computed in float) with the
// complex product taken as three real products (Gauss):
//   P1 = Re(a) Re(b),  P2 = Im(a) Im(b),  P3 = (Re(a) + Im(a)) (Re(b) + Im(b)),
//   Re(c) = P1 - P2,   Im(c) = P3 - P1 - P2,
// so each complex multiply-add is 3 FMAs instead of 4; the sums are formed once per operand element
// as its tile is stored, not once per product. The error stays within FP32's for these products:
// each P is an FP32 sum of products, and Im(c)'s cancellation is bounded by (|Re a| + |Im a|)
// (|Re b| + |Im b|), the size of the operands' own terms.
// Tiles: BM x BK of op_a, BK x BN of op_b, BK = 8 complex k; thread tile TM x TN (TM, TN multiples
// of 4, or TN = 2); 256 threads. Shared memory holds three real planes per operand, already
// conjugated: plane 0 = Re, 1 = Im, 2 = Re + Im, so that a thread's TM (TN) consecutive values of
// one plane are float4 loads.
template <typename Io, int BM, int BN, int TM, int TN, int kMinBlocks, bool kTransA, bool kTransB>
__global__ void __launch_bounds__(256, kMinBlocks)
    ComplexGemmSimtGauss(const typename detail::Storage<Io>::Pair* __restrict__ a,
                         const typename detail::Storage<Io>::Pair* __restrict__ b,
                         typename detail::Storage<Io>::Pair* __restrict__ c, const MatmulArgs args) {
  detail::AwaitPrecedingGrids();
  using Pair = typename detail::Storage<Io>::Pair;
  static_assert(std::is_same<typename detail::Storage<Io>::Compute, float>::value, "float arithmetic");
  constexpr int BK = 8;
  constexpr int kThreads = 256;
  static_assert((BM / TM) * (BN / TN) == kThreads, "thread tile");
  static_assert(TM % 4 == 0 && (TN % 4 == 0 || TN == 2), "vector loads of the thread tile");
  constexpr int kLoadsA = BM * BK / kThreads;
  constexpr int kLoadsB = BN * BK / kThreads;
  // a_planes[buf][plane][kk][mm] = plane of op_a(a)[m0 + mm][k0 + kk];
  // b_planes[buf][plane][kk][nn] = plane of op_b(b)[k0 + kk][n0 + nn].
  // Rows padded by 4 floats: 16-byte aligned, and the stores of 8 k rows by one warp spread over
  // the banks (row stride = 4 mod 32 floats).
  __shared__ __align__(16) float a_planes[2][3][BK][BM + 4];
  __shared__ __align__(16) float b_planes[2][3][BK][BN + 4];

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
  const float a_sign = args.a_conj ? -1.f : 1.f, b_sign = args.b_conj ? -1.f : 1.f;
  float2 ra[kLoadsA], rb[kLoadsB];
  auto load = [&](int k0) {
    a_loader.Load(a, m0, k0, args.m, args.k, args.lda, ra);
    b_loader.Load(b, k0, n0, args.k, args.n, args.ldb, rb);
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int r = 0; r < kLoadsA; ++r) {
      const int kk = a_loader.Col(r), mm = a_loader.Row(r);
      const float re = ra[r].x, im = a_sign * ra[r].y;
      a_planes[buf][0][kk][mm] = re;
      a_planes[buf][1][kk][mm] = im;
      a_planes[buf][2][kk][mm] = re + im;
    }
#pragma unroll
    for (int r = 0; r < kLoadsB; ++r) {
      const int kk = b_loader.Row(r), nn = b_loader.Col(r);
      const float re = rb[r].x, im = b_sign * rb[r].y;
      b_planes[buf][0][kk][nn] = re;
      b_planes[buf][1][kk][nn] = im;
      b_planes[buf][2][kk][nn] = re + im;
    }
  };

  // acc[p][i][j]: P1, P2, P3 (above) of output (ty * TM + i, tx * TN + j).
  float acc[3][TM][TN];
#pragma unroll
  for (int p = 0; p < 3; ++p)
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[p][i][j] = 0.f;

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
      float av[3][TM], bv[3][TN];
#pragma unroll
      for (int p = 0; p < 3; ++p) {
#pragma unroll
        for (int i = 0; i < TM; i += 4) {
          const float4 v = *reinterpret_cast<const float4*>(&a_planes[buf][p][kk][ty * TM + i]);
          av[p][i] = v.x, av[p][i + 1] = v.y, av[p][i + 2] = v.z, av[p][i + 3] = v.w;
        }
        if constexpr (TN == 2) {
          const float2 v = *reinterpret_cast<const float2*>(&b_planes[buf][p][kk][tx * TN]);
          bv[p][0] = v.x, bv[p][1] = v.y;
        } else {
#pragma unroll
          for (int j = 0; j < TN; j += 4) {
            const float4 v = *reinterpret_cast<const float4*>(&b_planes[buf][p][kk][tx * TN + j]);
            bv[p][j] = v.x, bv[p][j + 1] = v.y, bv[p][j + 2] = v.z, bv[p][j + 3] = v.w;
          }
        }
      }
#pragma unroll
      for (int p = 0; p < 3; ++p)
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[p][i][j] = fmaf(av[p][i], bv[p][j], acc[p][i][j]);
    }
    if (more) store(buf ^ 1);
    __syncthreads();
  }

  const float alpha = static_cast<float>(args.alpha);
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + ty * TM + i;
    if (m >= args.m) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int n = n0 + tx * TN + j;
      if (n < args.n) {
        const float2 v = make_float2(acc[0][i][j] - acc[1][i][j], acc[2][i][j] - acc[0][i][j] - acc[1][i][j]);
        c[OutputIndex(args, m, n)] = detail::ToStorage<Pair>(detail::CScale(v, alpha));
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// TF32 tensor-core kernel (sm_80+): a multi-stage cp.async pipeline feeding mma.sync.m16n8k8.
//
// Block tile 128 x BN complex outputs (BN = 4 * kNi * kWarpsN), BK = 16 complex k per stage;
// warps 2 (m) x kWarpsN (n), each computing 64 rows x 4 * kNi complex columns.
//
// Operands go from global to shared memory as they are stored (cp.async, 16 or 8 bytes per copy,
// zero-filled outside the matrix), so a transposed operand is never rearranged by a copy: the
// fragment loads index either layout. Shared memory per stage (floats, interleaved (re, im)):
//   A, not transposed: [128 rows m][BK complex k], row stride 2 * BK + 8
//   A, transposed:     [BK rows k][128 complex m], row stride 2 * 128 + 8
//   B, not transposed: [BK rows k][BN complex n],  row stride 2 * BN + 8
//   B, transposed:     [BN rows n][BK complex k],  row stride 2 * BK + 8
// Every stride is 8 (mod 32) floats, which puts the 64-bit fragment loads of a half-warp on 32
// distinct banks in both layouts, and a multiple of 4, which keeps the 16-byte copies aligned.
//
// The real GEMM C2 = A2 * B2 of the file header, with the 8 real k' of one MMA assigned to 4
// complex k (k0 + t for lane t): k' = t holds Re and k' = t + 4 holds Im of complex k0 + t. Then
//   A fragment (a0, a2) = (Re, Im) of op_a(a)[row][k0 + t], one 64-bit load, and (a1, a3) for row + 8;
//   B fragment of real column n' = 2n + u: (b0, b1) = (Re, -Im) of op_b(b)[k0 + t][n] for u = 0 and
//   (Im, Re) for u = 1, again one 64-bit load.
// Values are rounded to TF32 (ToTf32: cvt.rn on sm_90+, cvt.rna before) as fragments are built,
// unless they are TF32 values already (Tf32Fragments::kStoredBits); conjugation flips a sign bit.
// Both tensor-core kernels, this one and ComplexGemmHalfMma, share its block rows, stage count
// (config::kTensorCoreStages), tiles and transposition.
constexpr int kTf32Bm = 128;
constexpr int kTf32Bk = config::kTf32StageK;
constexpr int kTf32Stages = config::kTensorCoreStages;
static_assert(kTf32Stages >= 2, "the pipeline needs two stages");

constexpr int kHalfBk = 32;

// The block tile of both tensor-core kernels. E: the element one copy moves and one fragment
// register holds part of (float2 for TF32: 16 complex k per stage; a half pair as a 32-bit word:
// 32 complex k). Shared memory per stage, in elements:
//   A, not transposed: [128 rows m][BK k];  A, transposed: [BK rows k][128 m]
//   B, not transposed: [BK rows k][BN n];   B, transposed: [BN rows n][BK k]
// with rows padded by 4 elements (8 for a transposed A of half pairs): the bank spreads of each
// kernel's fragment loads (asserted here, explained at the kernels), and 16-byte aligned rows.
template <typename E, int kWarpsN, int kNi, bool kTransA, bool kTransB>
struct MmaTile {
  static constexpr bool kPairWords = sizeof(E) == 4;
  static constexpr bool kTransposedA = kTransA, kTransposedB = kTransB;
  static constexpr int kThreads = 64 * kWarpsN;
  static constexpr int kBk = kPairWords ? kHalfBk : kTf32Bk;  // complex k per stage
  static constexpr int kBn = 4 * kNi * kWarpsN;               // complex columns
  static constexpr int kARows = kTransA ? kBk : kTf32Bm, kACols = kTransA ? kTf32Bm : kBk;
  static constexpr int kBRows = kTransB ? kBn : kBk, kBCols = kTransB ? kBk : kBn;
  static constexpr int kAStride = kACols + (kPairWords && kTransA ? 8 : 4), kBStride = kBCols + 4;
  static constexpr int kAElems = kARows * kAStride, kBElems = kBRows * kBStride;
  static constexpr int kStageElems = kAElems + kBElems;
  static constexpr size_t kSmemBytes = sizeof(E) * kTf32Stages * kStageElems;
  static_assert(kPairWords ? (kTransA ? kAStride % 32 == 8 : kAStride % 8 == 4) && kBStride % 8 == 4
                           : kAStride % 16 == 4 && kBStride % 16 == 4,
                "bank spread of the fragment loads");
  // Blocks per SM the launch bounds ask for: as many as 64 K registers and 227 KB allow, at most 3.
  static constexpr int kMinBlocks = kThreads >= 256 ? 2 : (3 * kSmemBytes <= 227 * 1024 ? 3 : 2);
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// x rounded to TF32 for an MMA operand: detail::RoundTf32Bits, the rule rfft2d's round_to_tf32 uses
// too (cvt.rn on sm_90+, cvt.rna before; cvt.rna is not an instruction: ptxas expands it to an
// Inf / NaN test, an add and a mask, three per value, and cvt.rn took 8-10% off each TF32 product
// on the H200). Operands that hold TF32 values already skip it (Tf32Fragments::kStoredBits).
__device__ __forceinline__ uint32_t ToTf32(float x) { return detail::RoundTf32Bits(x); }
// x = hi + lo + O(2^-21 |x|), in three instructions: hi is x rounded to TF32 (half a TF32 ulp added
// to the bits, which carries into the exponent where it should, then the low 13 bits cleared); lo =
// x - hi, exact in FP32, goes to the MMA whole: the tensor cores read only the high 19 bits of a
// .tf32 operand, so lo enters truncated, an error below 2^-21 |x| of either sign (lo's sign is
// hi's rounding direction). With cvt.rna (an add, an Inf / NaN test and a select per value) the
// split took eight. NaN survives: a NaN whose add carries into the sign bit or out of the word
// gives hi = -0 or 0, but lo = NaN.
__device__ __forceinline__ void SplitTf32(float x, uint32_t* hi, uint32_t* lo) {
  *hi = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
  *lo = __float_as_uint(x - __uint_as_float(*hi));
}
__device__ __forceinline__ void MmaTf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// Copies the ROWS x COLS tile at (row0, col0) of a rows x cols matrix x of complex elements E (float2,
// or a half pair as one 32-bit word; row length ld) into shared memory (row stride kStride elements),
// kChunk elements per copy. The launcher guarantees kChunk divides cols and ld and aligns x, so a
// chunk is wholly inside or outside.
// Where the threads cover whole rows per pass, a thread's copies share one column and step by a fixed
// number of rows: one pointer and one row counter, which keeps the pipeline's registers few.
template <int ROWS, int COLS, int kStride, int kChunk, int kThreads, typename E>
__device__ __forceinline__ void CopyTileAsync(E* smem, const E* __restrict__ x, int row0, int col0,
                                              int rows, int cols, int ld, int tid) {
  constexpr int kChunksPerRow = COLS / kChunk;
  constexpr int kChunks = ROWS * kChunksPerRow;
  static_assert(kChunks % kThreads == 0, "tile copies");
  if constexpr (kThreads % kChunksPerRow == 0) {
    constexpr int kRowStep = kThreads / kChunksPerRow;
    const int r = tid / kChunksPerRow, cc = (tid % kChunksPerRow) * kChunk;
    const bool column_inside = col0 + cc < cols;
    int gr = row0 + r;
    const E* src = x + static_cast<size_t>(gr) * ld + col0 + cc;
    E* dst = smem + r * kStride + cc;
#pragma unroll
    for (int i = 0; i < kChunks / kThreads; ++i) {
      const bool inside = column_inside && gr < rows;
      CpAsync<sizeof(E) * kChunk>(dst, inside ? src : x, inside ? sizeof(E) * kChunk : 0);
      gr += kRowStep;
      src += static_cast<size_t>(kRowStep) * ld;
      dst += kRowStep * kStride;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kChunks / kThreads; ++i) {
      const int chunk = tid + i * kThreads;
      const int r = chunk / kChunksPerRow, cc = (chunk % kChunksPerRow) * kChunk;
      const int gr = row0 + r, gc = col0 + cc;
      const bool inside = gr < rows && gc < cols;
      CpAsync<sizeof(E) * kChunk>(smem + r * kStride + cc, inside ? x + static_cast<size_t>(gr) * ld + gc : x,
                                  inside ? sizeof(E) * kChunk : 0);
    }
  }
}

// Copies tile kt (complex k from kt * BK) of both operands into `stage`: A, then B at Tile::kAElems.
template <typename Tile, int kChunk, typename E>
__device__ __forceinline__ void CopyStageAsync(E* stage, const E* __restrict__ a, const E* __restrict__ b, int kt,
                                               int m0, int n0, const MatmulArgs& args, int tid) {
  constexpr int BM = kTf32Bm, BN = Tile::kBn, BK = Tile::kBk, kThreads = Tile::kThreads;
  const int k0 = kt * BK;
  if constexpr (Tile::kTransposedA) {
    CopyTileAsync<BK, BM, Tile::kAStride, kChunk, kThreads>(stage, a, k0, m0, args.k, args.m, args.lda, tid);
  } else {
    CopyTileAsync<BM, BK, Tile::kAStride, kChunk, kThreads>(stage, a, m0, k0, args.m, args.k, args.lda, tid);
  }
  E* stage_b = stage + Tile::kAElems;
  if constexpr (Tile::kTransposedB) {
    CopyTileAsync<BN, BK, Tile::kBStride, kChunk, kThreads>(stage_b, b, n0, k0, args.n, args.k, args.ldb, tid);
  } else {
    CopyTileAsync<BK, BN, Tile::kBStride, kChunk, kThreads>(stage_b, b, k0, n0, args.k, args.n, args.ldb, tid);
  }
}
#endif

// The epilogue of both tensor-core kernels: a warp's accumulators, times alpha, into C [M, N] complex
// (Pair: float2, or a half pair). acc[mi][ni] = (e0, e1) / (e2, e3): (re, im) of rows g / g + 8 of
// the 16-row tile mi (from row m_first), complex column t of the 4-column tile ni (from n_first).
template <int kRowTiles, int kColTiles, typename Pair>
__device__ __forceinline__ void StoreWarpTile(const float (&acc)[kRowTiles][kColTiles][4], Pair* c,
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
      for (int ni = 0; ni < kColTiles; ++ni) {
        const int n = n_first + ni * 4 + t;
        if (n < args.n) {
          const size_t at = OutputIndex(args, m, n);
          const Pair v = detail::ToStorage<Pair>(
              make_float2(alpha * acc[mi][ni][2 * half], alpha * acc[mi][ni][2 * half + 1]));
          c[at] = v;
        }
      }
    }
  }
}

// How ComplexGemmTf32 makes MMA fragments of the FP32 values it reads:
//   kRounded   : each value rounded to TF32 (ToTf32), the TF32 product;
//   kStoredBits: the bits as they are, for operands that hold TF32 values already (rfft2d's
//                round_to_tf32 spectra, tf32_operands): the same product as kRounded, whose
//                rounding leaves such values unchanged, without the conversions;
//   kSplit     : FP32 accuracy from three TF32 MMAs per product (file header), for TF32 not allowed.
enum class Tf32Fragments { kRounded, kStoredBits, kSplit };

template <int kWarpsN, int kNi, bool kTransA, bool kTransB, int kChunk, Tf32Fragments kFragments>
__global__ void __launch_bounds__(64 * kWarpsN, (MmaTile<float2, kWarpsN, kNi, kTransA, kTransB>::kMinBlocks))
    ComplexGemmTf32(const float2* __restrict__ a, const float2* __restrict__ b, float2* __restrict__ c,
                    const MatmulArgs args) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  detail::AwaitPrecedingGrids();
  constexpr bool kSplit = kFragments == Tf32Fragments::kSplit;
  // A value as an MMA operand (kRounded or kStoredBits).
  const auto operand = [](float x) -> uint32_t {
    if constexpr (kFragments == Tf32Fragments::kStoredBits) {
      return __float_as_uint(x);
    } else {
      return ToTf32(x);
    }
  };
  using Tile = MmaTile<float2, kWarpsN, kNi, kTransA, kTransB>;
  constexpr int BM = kTf32Bm, BN = Tile::kBn, BK = Tile::kBk;
  constexpr int RA = 2 * Tile::kAStride, RB = 2 * Tile::kBStride;  // row strides in floats
  extern __shared__ __align__(16) float smem_f[];  // [stage][A tile, B tile], (re, im) pairs

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

  // Tile kt of both operands into stage kt % kTf32Stages; one commit group per call (empty past the
  // last tile, so that the wait below always counts the same number of groups).
  const int k_tiles = (args.k + BK - 1) / BK;
  auto issue = [&](int kt) {
    if (kt < k_tiles) {
      CopyStageAsync<Tile, kChunk>(reinterpret_cast<float2*>(smem_f + (kt % kTf32Stages) * 2 * Tile::kStageElems), a,
                                   b, kt, m0, n0, args, tid);
    }
    CpAsyncCommit();
  };

  // Sign bits: conjugation of A flips Im; B's column 2n holds -Im (flipped again by conjugation).
  constexpr uint32_t kSign = 0x80000000u;
  const uint32_t a_flip = args.a_conj ? kSign : 0u;
  const uint32_t b_flip = args.b_conj ? kSign : 0u;
  const bool odd_column = g & 1;  // u: this lane's B values belong to real column 2n + 1

  // acc: the MMAs' accumulators, (re, im) of rows g and g + 8 (StoreWarpTile); with kSplit, the sums
  // of one stage, added into total (the product) after each.
  float acc[4][kNi][4] = {};
  float total[kSplit ? 4 : 1][kSplit ? kNi : 1][4] = {};

#pragma unroll
  for (int s = 0; s < kTf32Stages - 1; ++s) issue(s);
  for (int kt = 0; kt < k_tiles; ++kt) {
    CpAsyncWait<kTf32Stages - 2>();  // tile kt has landed (for this thread's copies)
    __syncthreads();                 // ... for every thread's; and stage (kt - 1) is no longer read
    issue(kt + kTf32Stages - 1);
    const float* as = smem_f + (kt % kTf32Stages) * 2 * Tile::kStageElems;
    const float* bs = as + 2 * Tile::kAElems;
#pragma unroll
    for (int ks = 0; ks < BK / 4; ++ks) {
      const int kc = ks * 4 + t;  // this lane's complex k inside the tile
      // Fragments of A rows (g, g + 8) of 16-row tile mi: (Re, Re, Im, Im) of k = kc; of B real
      // column 2n + odd_column: rows 2k, 2k + 1 of B2's block [[Re, Im], [-Im, Re]]. af_lo, bf_lo:
      // the low parts of the split (kSplit only).
      uint32_t af[4][4], bf[kNi][2], af_lo[4][4], bf_lo[kNi][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const int row = warp_m * 64 + mi * 16 + g;
        const float2 lo = *reinterpret_cast<const float2*>(as + (kTransA ? kc * RA + 2 * row : row * RA + 2 * kc));
        const float2 hi =
            *reinterpret_cast<const float2*>(as + (kTransA ? kc * RA + 2 * (row + 8) : (row + 8) * RA + 2 * kc));
        if constexpr (kSplit) {
          SplitTf32(lo.x, &af[mi][0], &af_lo[mi][0]);
          SplitTf32(hi.x, &af[mi][1], &af_lo[mi][1]);
          SplitTf32(lo.y, &af[mi][2], &af_lo[mi][2]);
          SplitTf32(hi.y, &af[mi][3], &af_lo[mi][3]);
          af_lo[mi][2] ^= a_flip;
          af_lo[mi][3] ^= a_flip;
          af[mi][2] ^= a_flip;
          af[mi][3] ^= a_flip;
        } else {
          af[mi][0] = operand(lo.x);
          af[mi][1] = operand(hi.x);
          af[mi][2] = operand(lo.y) ^ a_flip;
          af[mi][3] = operand(hi.y) ^ a_flip;
        }
      }
#pragma unroll
      for (int ni = 0; ni < kNi; ++ni) {
        const int col = warp_n * (4 * kNi) + ni * 4 + (g >> 1);  // complex column
        const float2 v = *reinterpret_cast<const float2*>(bs + (kTransB ? col * RB + 2 * kc : kc * RB + 2 * col));
        if constexpr (kSplit) {
          uint32_t re, im, re_lo, im_lo;
          SplitTf32(v.x, &re, &re_lo);
          SplitTf32(v.y, &im, &im_lo);
          im ^= b_flip;
          im_lo ^= b_flip;
          bf[ni][0] = odd_column ? im : re;
          bf[ni][1] = odd_column ? re : im ^ kSign;
          bf_lo[ni][0] = odd_column ? im_lo : re_lo;
          bf_lo[ni][1] = odd_column ? re_lo : im_lo ^ kSign;
        } else {
          const uint32_t re = operand(v.x), im = operand(v.y) ^ b_flip;
          bf[ni][0] = odd_column ? im : re;
          bf[ni][1] = odd_column ? re : im ^ kSign;
        }
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNi; ++ni) {
          if constexpr (kSplit) {
            // The small terms first, so that they are not lost under the large one's rounding.
            MmaTf32(acc[mi][ni], af_lo[mi], bf[ni]);
            MmaTf32(acc[mi][ni], af[mi], bf_lo[ni]);
          }
          MmaTf32(acc[mi][ni], af[mi], bf[ni]);
        }
    }
    if constexpr (kSplit) {
      // The tensor cores' accumulation does not round to nearest: its error grows with every MMA
      // that adds into an accumulator (linearly in k, 3.8e-5 at k = 312 in tests/test_tiling.py).
      // So each stage's 12 MMAs start from zero and their sum joins `total` with an FP32 add.
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            total[mi][ni][e] += acc[mi][ni][e];
            acc[mi][ni][e] = 0.f;
          }
    }
  }
  CpAsyncWait<0>();  // the trailing groups are empty; leave none outstanding at exit

  if constexpr (kSplit) {
    StoreWarpTile(total, c, m0 + warp_m * 64, n0 + warp_n * (4 * kNi), g, t, args);
  } else {
    StoreWarpTile(acc, c, m0 + warp_m * 64, n0 + warp_n * (4 * kNi), g, t, args);
  }
#endif  // __CUDA_ARCH__ >= 800
}

// ------------------------------------------------------------------------------------------------
// Half-precision tensor-core kernel (sm_80+), Io = __half or __nv_bfloat16: the pipeline and tiles of
// ComplexGemmTf32 on m16n8k16 MMAs, which take 8 complex k (16 real k') per MMA. A (re, im) pair is
// one 32-bit word, so the fragments are stored words:
//   A fragment (a0, a2) = op_a(a)[row][k0 + t] and op_a(a)[row][k0 + t + 4] (the pairs of real
//   k' = 2t, 2t + 1 and 2t + 8, 2t + 9), (a1, a3) the same for row + 8;
//   B fragment of real column n' = 2n + u: the words of op_b(b)[k0 + t][n] and op_b(b)[k0 + t + 4][n]
//   as (Re, -Im) for u = 0 and swapped to (Im, Re) for u = 1;
//   accumulator (row r, real columns 2j, 2j+1) = (Re, Im) of c[r][j].
// BK = 32 complex k per stage. Shared memory per stage (32-bit words):
//   A, not transposed: [128 rows m][32 k], row stride 36;  A, transposed: [32 rows k][128 m], 136
//   B, not transposed: [32 rows k][BN n],  row stride BN + 4;  B, transposed: [BN rows n][32 k], 36
// Strides of 4 (mod 8) words put a warp's 32-bit fragment loads (8 rows x 4 k, or 4 columns x 4 k)
// on distinct banks, 8 (mod 32) those of a transposed A (4 k x 8 rows); all keep 16-byte copies
// aligned. Conjugation flips the sign bit of the imaginary half.

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
template <typename Io, int kWarpsN, int kNi, bool kTransA, bool kTransB, int kChunk>
__global__ void __launch_bounds__(64 * kWarpsN, (MmaTile<uint32_t, kWarpsN, kNi, kTransA, kTransB>::kMinBlocks))
    ComplexGemmHalfMma(const uint32_t* __restrict__ a, const uint32_t* __restrict__ b,
                       typename detail::Storage<Io>::Pair* __restrict__ c, const MatmulArgs args) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  detail::AwaitPrecedingGrids();
  using Tile = MmaTile<uint32_t, kWarpsN, kNi, kTransA, kTransB>;
  constexpr int BM = kTf32Bm, BN = Tile::kBn, BK = Tile::kBk;
  constexpr int RA = Tile::kAStride, RB = Tile::kBStride;
  extern __shared__ __align__(16) uint32_t smem_w[];  // [stage][A tile, B tile]

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

  const int k_tiles = (args.k + BK - 1) / BK;
  auto issue = [&](int kt) {
    if (kt < k_tiles) {
      CopyStageAsync<Tile, kChunk>(smem_w + (kt % kTf32Stages) * Tile::kStageElems, a, b, kt, m0, n0, args, tid);
    }
    CpAsyncCommit();
  };

  // Sign bit of the imaginary half (high 16 bits of a pair) and of the real half (low 16 bits).
  constexpr uint32_t kImSign = 0x80000000u, kReSign = 0x00008000u;
  const uint32_t a_flip = args.a_conj ? kImSign : 0u;
  // Column 2n: (Re, -Im) of op_b(b), op_b conjugating Im first; column 2n + 1: (Im, Re), swapped.
  const bool odd_column = g & 1;
  const uint32_t b_flip = odd_column ? (args.b_conj ? kReSign : 0u) : (args.b_conj ? 0u : kImSign);

  float acc[4][kNi][4];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.f;

#pragma unroll
  for (int s = 0; s < kTf32Stages - 1; ++s) issue(s);
  for (int kt = 0; kt < k_tiles; ++kt) {
    CpAsyncWait<kTf32Stages - 2>();
    __syncthreads();
    issue(kt + kTf32Stages - 1);
    const uint32_t* as = smem_w + (kt % kTf32Stages) * Tile::kStageElems;
    const uint32_t* bs = as + Tile::kAElems;
#pragma unroll
    for (int ks = 0; ks < BK / 8; ++ks) {
      const int kc = ks * 8 + t;  // this lane's first complex k inside the tile; the second is kc + 4
      uint32_t af[4][4], bf[kNi][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const int row = warp_m * 64 + mi * 16 + g;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = row + 8 * (e & 1), k = kc + 4 * (e >> 1);
          af[mi][e] = as[kTransA ? k * RA + r : r * RA + k] ^ a_flip;
        }
      }
#pragma unroll
      for (int ni = 0; ni < kNi; ++ni) {
        const int col = warp_n * (4 * kNi) + ni * 4 + (g >> 1);  // complex column
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int k = kc + 4 * e;
          const uint32_t word = bs[kTransB ? col * RB + k : k * RB + col];
          bf[ni][e] = (odd_column ? __byte_perm(word, 0, 0x1032) : word) ^ b_flip;
        }
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNi; ++ni) MmaHalf<Io>(acc[mi][ni], af[mi], bf[ni]);
    }
  }
  CpAsyncWait<0>();

  StoreWarpTile(acc, c, m0 + warp_m * 64, n0 + warp_n * (4 * kNi), g, t, args);
#endif  // __CUDA_ARCH__ >= 800
}

// ------------------------------------------------------------------------------------------------
// The SIMT kernels: four real FMAs per complex product (ComplexGemmSimt) for double, three
// (ComplexGemmSimtGauss) for float arithmetic.
template <typename Io, int BM, int BN, int TM, int TN, bool kTransA, bool kTransB>
int LaunchSimtKernel(dim3 grid, const MatmulArgs& args, const typename detail::Storage<Io>::Pair* a,
                     const typename detail::Storage<Io>::Pair* b, typename detail::Storage<Io>::Pair* c,
                     cudaStream_t stream) {
  if constexpr (std::is_same<typename detail::Storage<Io>::Compute, float>::value) {
    // Three accumulator planes: the 8 x 4 thread tile takes more than half the registers.
    constexpr int kMinBlocks = TM * TN >= 32 ? 1 : 2;
    return detail::LaunchKernel(ComplexGemmSimtGauss<Io, BM, BN, TM, TN, kMinBlocks, kTransA, kTransB>, grid,
                                dim3(256), 0, stream, a, b, c, args);
  } else {
    return detail::LaunchKernel(ComplexGemmSimt<Io, BM, BN, TM, TN, kTransA, kTransB>, grid, dim3(256), 0, stream,
                                a, b, c, args);
  }
}

template <typename Io, int BM, int BN, int TM, int TN>
int LaunchSimt(MatmulArgs args, int bins, const typename detail::Storage<Io>::Pair* a,
               const typename detail::Storage<Io>::Pair* b, typename detail::Storage<Io>::Pair* c,
               cudaStream_t stream) {
  const long long tiles_m = (args.m + BM - 1) / BM;
  args.tiles_n = (args.n + BN - 1) / BN;
  const dim3 grid(static_cast<unsigned>(tiles_m * args.tiles_n), static_cast<unsigned>(bins));
  if (args.a_trans) {
    return args.b_trans ? LaunchSimtKernel<Io, BM, BN, TM, TN, true, true>(grid, args, a, b, c, stream)
                        : LaunchSimtKernel<Io, BM, BN, TM, TN, true, false>(grid, args, a, b, c, stream);
  }
  return args.b_trans ? LaunchSimtKernel<Io, BM, BN, TM, TN, false, true>(grid, args, a, b, c, stream)
                      : LaunchSimtKernel<Io, BM, BN, TM, TN, false, false>(grid, args, a, b, c, stream);
}

// Launches a tensor-core kernel of block tile Tile: grid x = output tiles of one bin, y = bin.
template <typename Tile, typename Kernel, typename E, typename Out>
int LaunchMmaKernel(Kernel kernel, MatmulArgs args, int bins, const E* a, const E* b, Out* c, cudaStream_t stream) {
  const long long tiles_m = (args.m + kTf32Bm - 1) / kTf32Bm;
  args.tiles_n = (args.n + Tile::kBn - 1) / Tile::kBn;
  cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Tile::kSmemBytes));
  if (e != cudaSuccess) return static_cast<int>(e);
  const dim3 grid(static_cast<unsigned>(tiles_m * args.tiles_n), static_cast<unsigned>(bins));
  return detail::LaunchKernel(kernel, grid, dim3(Tile::kThreads), Tile::kSmemBytes, stream, a, b, c, args);
}

template <int kWarpsN, int kNi, bool kTransA, bool kTransB, int kChunk, Tf32Fragments kFragments>
int LaunchTf32Tile(MatmulArgs args, int bins, const float2* a, const float2* b, float2* c, cudaStream_t stream) {
  return LaunchMmaKernel<MmaTile<float2, kWarpsN, kNi, kTransA, kTransB>>(
      ComplexGemmTf32<kWarpsN, kNi, kTransA, kTransB, kChunk, kFragments>, args, bins, a, b, c, stream);
}

// 16-byte copies where both operands' rows and bins hold an even number of complex elements and the
// buffers are 16-byte aligned (every layer with even channel and batch counts), else 8-byte copies.
// kStoredBits has kernels for the 16-byte copies only (every layer with even channel and batch
// counts): the 8-byte copies take kRounded's, whose rounding leaves TF32 values as they are, so the
// product is the same and the library holds 12 kernels fewer.
template <int kWarpsN, int kNi, Tf32Fragments kWide>
int LaunchTf32(MatmulArgs args, int bins, const float2* a, const float2* b, float2* c, cudaStream_t stream) {
  const bool wide_copies = args.lda % 2 == 0 && args.ldb % 2 == 0 && args.a_bin % 2 == 0 && args.b_bin % 2 == 0 &&
                           reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
  constexpr Tf32Fragments kNarrow = kWide == Tf32Fragments::kStoredBits ? Tf32Fragments::kRounded : kWide;
  if (wide_copies) {
    if (args.a_trans) {
      return args.b_trans ? LaunchTf32Tile<kWarpsN, kNi, true, true, 2, kWide>(args, bins, a, b, c, stream)
                          : LaunchTf32Tile<kWarpsN, kNi, true, false, 2, kWide>(args, bins, a, b, c, stream);
    }
    return args.b_trans ? LaunchTf32Tile<kWarpsN, kNi, false, true, 2, kWide>(args, bins, a, b, c, stream)
                        : LaunchTf32Tile<kWarpsN, kNi, false, false, 2, kWide>(args, bins, a, b, c, stream);
  }
  if (args.a_trans) {
    return args.b_trans ? LaunchTf32Tile<kWarpsN, kNi, true, true, 1, kNarrow>(args, bins, a, b, c, stream)
                        : LaunchTf32Tile<kWarpsN, kNi, true, false, 1, kNarrow>(args, bins, a, b, c, stream);
  }
  return args.b_trans ? LaunchTf32Tile<kWarpsN, kNi, false, true, 1, kNarrow>(args, bins, a, b, c, stream)
                      : LaunchTf32Tile<kWarpsN, kNi, false, false, 1, kNarrow>(args, bins, a, b, c, stream);
}

// The TF32 product (TF32 allowed) of one tile: fragments of the stored bits where the operands hold
// TF32 values already (stored_bits), else rounded.
template <int kWarpsN, int kNi>
int LaunchTf32Rounding(bool stored_bits, MatmulArgs args, int bins, const float2* a, const float2* b, float2* c,
                       cudaStream_t stream) {
  return stored_bits ? LaunchTf32<kWarpsN, kNi, Tf32Fragments::kStoredBits>(args, bins, a, b, c, stream)
                     : LaunchTf32<kWarpsN, kNi, Tf32Fragments::kRounded>(args, bins, a, b, c, stream);
}

// FP32 accuracy from split operands (TF32 not allowed) takes one tile, 128 x 32 complex outputs on
// eight warps of 64 x 8: the per-stage sums and the product are two accumulator sets, which the
// wider tiles' registers cannot hold at two blocks per SM.
constexpr int kSplitWarpsN = 4, kSplitNi = 2;
constexpr int kSplitBn = 4 * kSplitWarpsN * kSplitNi;

template <typename Io, int kWarpsN, int kNi, bool kTransA, bool kTransB, int kChunk>
int LaunchHalfTile(MatmulArgs args, int bins, const uint32_t* a, const uint32_t* b,
                   typename detail::Storage<Io>::Pair* c, cudaStream_t stream) {
  return LaunchMmaKernel<MmaTile<uint32_t, kWarpsN, kNi, kTransA, kTransB>>(
      ComplexGemmHalfMma<Io, kWarpsN, kNi, kTransA, kTransB, kChunk>, args, bins, a, b, c, stream);
}

// 16-byte copies (4 pairs) where both operands' rows and bins hold a multiple of 4 pairs and the
// buffers are 16-byte aligned, else 4-byte copies.
template <typename Io, int kWarpsN, int kNi>
int LaunchHalfMma(MatmulArgs args, int bins, const uint32_t* a, const uint32_t* b,
                  typename detail::Storage<Io>::Pair* c, cudaStream_t stream) {
  const bool wide_copies = args.lda % 4 == 0 && args.ldb % 4 == 0 && args.a_bin % 4 == 0 && args.b_bin % 4 == 0 &&
                           reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
  if (wide_copies) {
    if (args.a_trans) {
      return args.b_trans ? LaunchHalfTile<Io, kWarpsN, kNi, true, true, 4>(args, bins, a, b, c, stream)
                          : LaunchHalfTile<Io, kWarpsN, kNi, true, false, 4>(args, bins, a, b, c, stream);
    }
    return args.b_trans ? LaunchHalfTile<Io, kWarpsN, kNi, false, true, 4>(args, bins, a, b, c, stream)
                        : LaunchHalfTile<Io, kWarpsN, kNi, false, false, 4>(args, bins, a, b, c, stream);
  }
  if (args.a_trans) {
    return args.b_trans ? LaunchHalfTile<Io, kWarpsN, kNi, true, true, 1>(args, bins, a, b, c, stream)
                        : LaunchHalfTile<Io, kWarpsN, kNi, true, false, 1>(args, bins, a, b, c, stream);
  }
  return args.b_trans ? LaunchHalfTile<Io, kWarpsN, kNi, false, true, 1>(args, bins, a, b, c, stream)
                      : LaunchHalfTile<Io, kWarpsN, kNi, false, false, 1>(args, bins, a, b, c, stream);
}

inline long long PaddedArea(int m, int n, int bm, int bn) {
  return static_cast<long long>((m + bm - 1) / bm) * bm * static_cast<long long>((n + bn - 1) / bn) * bn;
}

// A tile for an m x n product: its code in the launcher's switch, and the product's padded work in it.
struct TileChoice {
  int tile;
  long long area;
};

// Tensor-core tiles of 64, 48 and 32 complex columns (codes 64, 48, 32): the least padded work, ties
// to the wider tile.
inline TileChoice BestMmaTile(int m, int n) {
  const long long wide = PaddedArea(m, n, kTf32Bm, 64), mid = PaddedArea(m, n, kTf32Bm, 48),
                  narrow = PaddedArea(m, n, kTf32Bm, 32);
  if (wide <= mid && wide <= narrow) return {64, wide};
  return mid <= narrow ? TileChoice{48, mid} : TileChoice{32, narrow};
}

// SIMT tiles 128 x 64 (code 3, where big_tile allows it), 128 x 32 (4) and 64 x 64 (5): the least
// padded work, ties in that order.
inline TileChoice BestSimtTile(int m, int n, bool big_tile) {
  const long long big = PaddedArea(m, n, 128, 64), narrow = PaddedArea(m, n, 128, 32),
                  small = PaddedArea(m, n, 64, 64);
  if (big_tile && big <= narrow && big <= small) return {3, big};
  return narrow <= small ? TileChoice{4, narrow} : TileChoice{5, small};
}

// The arguments of c^T = op_b(b)^T op_a(a)^T, whose product the kernel stores transposed into c:
// b becomes the first operand (transposed unless it was, conjugated as it was), a the second.
template <typename P>
MatmulArgs Transposed(const MatmulArgs& args, const P** a, const P** b) {
  MatmulArgs t = args;
  t.m = args.n;
  t.n = args.m;
  t.a_trans = !args.b_trans;
  t.a_conj = args.b_conj;
  t.lda = args.ldb;
  t.a_bin = args.b_bin;
  t.b_trans = !args.a_trans;
  t.b_conj = args.a_conj;
  t.ldb = args.lda;
  t.b_bin = args.a_bin;
  t.c_trans = true;
  const P* first = *b;
  *b = *a;
  *a = first;
  return t;
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
  args.a_conj = p.adjoint_a || p.conjugate_a;
  args.b_trans = p.transpose_b || p.adjoint_b;
  args.b_conj = p.adjoint_b || p.conjugate_b;
  args.lda = args.a_trans ? p.m : p.k;  // a[f] is m x k, or k x m when transposed
  args.ldb = args.b_trans ? p.k : p.n;  // b[f] is k x n, or n x k when transposed
  args.a_bin = static_cast<long long>(p.m) * p.k;
  args.b_bin = static_cast<long long>(p.k) * p.n;
  args.c_bin = static_cast<long long>(p.m) * p.n;
  args.tiles_n = 1;
  args.alpha = p.alpha;
  args.c_trans = false;

  // Kernel choice: tensor cores on sm_80+ for half precision (whose operands are already half
  // precision, so the TF32 switch does not apply) and for float (TF32, or FP32 accuracy from split
  // operands when TF32 is not allowed); else the SIMT tiles (FP32 / FP64, half precision computing
  // in float), the one that wastes the least work.
  bool tensor_cores = false;
  if constexpr (detail::Storage<Real>::kHalf || std::is_same<Real, float>::value) {
    detail::DeviceLimits limits;
    const int err = detail::CurrentDeviceLimits(&limits);
    if (err != 0) return err;
    tensor_cores = limits.compute_capability >= 80;
  }
  const bool split = std::is_same<Real, float>::value && tensor_cores && !p.allow_tf32;
  // TF32 products of operands that hold TF32 values already (rfft2d's round_to_tf32): their bits go
  // to the MMAs unconverted. The split, SIMT, double and half-precision kernels ignore it.
  const bool stored_bits = p.tf32_operands && !split;
  // Few rows (a batch of 32 in the forward and input-gradient products on tensor cores; Cin = 96
  // rows of the weight gradient's 128-row SIMT tiles) would leave much of each tile empty: then
  // c^T = op_b(b)^T op_a(a)^T is computed instead, with the operands' roles, transposes and
  // conjugations exchanged and c stored transposed, where that saves a fifth of the padded work.
  // The three-product kernel's 128 x 64 tile holds three accumulator planes, which leaves one
  // block per SM: it was slower than 128 x 32 on each of Mathieu's products.
  const bool simt_big_tile = !std::is_same<typename detail::Storage<Real>::Compute, float>::value;
  // The tile an m x n product takes in the kernels this type and device run: tensor cores 64, 48 or
  // 32 complex columns, 0 for float split into TF32 parts (128 x 32); SIMT 3, 4 or 5 (FP64: 64 x 64).
  const auto best_tile = [&](int m, int n) -> TileChoice {
    if (split) return {0, PaddedArea(m, n, kTf32Bm, kSplitBn)};
    if (tensor_cores) return BestMmaTile(m, n);
    if (std::is_same<Real, double>::value) return {5, PaddedArea(m, n, 64, 64)};
    return BestSimtTile(m, n, simt_big_tile);
  };
  if (best_tile(p.n, p.m).area * 5 < best_tile(p.m, p.n).area * 4) {
    args = Transposed(args, &a, &b);
  }
  const int tile = best_tile(args.m, args.n).tile;

  // grid.y holds the bin; more bins than a grid dimension allows are launched in slices.
  constexpr int kMaxGridY = 65535;
  for (int f0 = 0; f0 < p.bins; f0 += kMaxGridY) {
    const int bins = p.bins - f0 < kMaxGridY ? p.bins - f0 : kMaxGridY;
    const C* ca = reinterpret_cast<const C*>(a) + f0 * args.a_bin;
    const C* cb = reinterpret_cast<const C*>(b) + f0 * args.b_bin;
    C* cc = reinterpret_cast<C*>(c) + f0 * args.c_bin;
    int err = 0;
    if constexpr (detail::Storage<Real>::kHalf) {
      const uint32_t* wa = reinterpret_cast<const uint32_t*>(ca);
      const uint32_t* wb = reinterpret_cast<const uint32_t*>(cb);
      switch (tensor_cores ? tile : -tile) {
        case 64: err = LaunchHalfMma<Real, 4, 4>(args, bins, wa, wb, cc, stream); break;
        case 48: err = LaunchHalfMma<Real, 2, 6>(args, bins, wa, wb, cc, stream); break;
        case 32: err = LaunchHalfMma<Real, 2, 4>(args, bins, wa, wb, cc, stream); break;
        case -3: err = LaunchSimt<Real, 128, 64, 8, 4>(args, bins, ca, cb, cc, stream); break;
        case -4: err = LaunchSimt<Real, 128, 32, 8, 2>(args, bins, ca, cb, cc, stream); break;
        default: err = LaunchSimt<Real, 64, 64, 4, 4>(args, bins, ca, cb, cc, stream); break;
      }
    } else if constexpr (std::is_same<Real, float>::value) {
      switch (tensor_cores ? tile : -tile) {
        case 0: err = LaunchTf32<kSplitWarpsN, kSplitNi, Tf32Fragments::kSplit>(args, bins, ca, cb, cc, stream); break;
        case 64: err = LaunchTf32Rounding<4, 4>(stored_bits, args, bins, ca, cb, cc, stream); break;
        case 48: err = LaunchTf32Rounding<2, 6>(stored_bits, args, bins, ca, cb, cc, stream); break;
        case 32: err = LaunchTf32Rounding<2, 4>(stored_bits, args, bins, ca, cb, cc, stream); break;
        case -3: err = LaunchSimt<float, 128, 64, 8, 4>(args, bins, ca, cb, cc, stream); break;
        case -4: err = LaunchSimt<float, 128, 32, 8, 2>(args, bins, ca, cb, cc, stream); break;
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

#define FFTCONV_INSTANTIATE(Real) \
  template int LaunchSpectralMatmul<Real>(const SpectralMatmulParams&, const Real*, const Real*, Real*, cudaStream_t);
FFTCONV_FOR_EACH_LAUNCHER_TYPE(FFTCONV_INSTANTIATE)
#undef FFTCONV_INSTANTIATE

}  // namespace cuda
}  // namespace fftconv
