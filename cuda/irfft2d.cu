// Inverse real 2-D FFT of frequency-major spectra with the crop fused into the store.
//
// Semantics: numpy.fft.irfft2(frame_spectrum)[offset_h : offset_h + out_h, offset_w : offset_w + out_w],
// i.e. a full complex inverse FFT along ky first, then the complex-to-real inverse along kx in which
// the imaginary parts of the kx = 0 and kx = S/2 values are ignored; everything scaled by 1 / S^2.
//
// One block handles G consecutive images n0 .. n0+G-1:
//   1. columns : column job c (1 <= c < S/2) reads bin (ky, c) for all ky (threads of a warp read
//                consecutive images of a bin: coalesced) and inverts along ky. Job 0 packs the two
//                columns kx = 0 and kx = S/2: their Hermitian parts H0, HN (whose inverses are the real
//                parts numpy keeps) form H0 + i * HN, so one complex inverse yields both real columns.
//                The results of all S rows are kept in shared memory.
//   2. row pass: two window rows are packed into one complex length-S inverse (Hermitian extension of
//                row a plus i times that of row b); the frame rows go to a stage in shared memory.
//   3. store   : the window of the stage is copied to NCHW / NHWC global memory with coalesced
//                (vector) stores: the crop is fused into this copy.
// On sm_80+ with float tensors the same three steps run in persistent blocks that loop over groups of
// G images, the spectrum of the next group copied into a second buffer by cp.async while this group
// is transformed (the pipelined strategy, Irfft2dPipelinedKernel), where both buffers fit in shared
// memory; otherwise one block per group runs them (the staged strategy, Irfft2dKernel).
// When the window does not fit in shared memory, rows are split into chunks, one chunk per blockIdx.y
// (each block recomputes the column inverse), and the row pass writes global memory directly (the
// direct strategy).
// Half precision (Io = __half / __nv_bfloat16): the (re, im) pairs of the mean-normalised spectrum
// are converted to float as they are read, the transforms run in float, and the window is rounded
// to Io as it is stored, without the 1/S^2 (the stored spectrum is already divided by S^2).
#include <cuda_runtime.h>

#include <algorithm>

#include "device_info.h"
#include "fft_stages.cuh"
#include "fftconv_cuda.h"

namespace fftconv {
namespace cuda {
namespace {

using detail::complex_t;

struct Irfft2dArgs {
  int images;                 // batch * channels
  int channels, out_h, out_w;
  int offset_h, offset_w;
  bool nhwc;
  bool use_stage;             // strategy != kDirect, the kernels' test: all S frame rows of the column results
                              // + a stage, one chunk
  config::FftStrategy strategy;  // read by the launcher
  bool vector_io;             // float4 global stores in the stage copy
  bool copy16;                // pipelined: 16-byte copies of the spectrum (two images; 8 bytes otherwise)
  bool pixel_major;           // pipelined, NHWC: the stage pixel-major (detail::InverseStageAt)
  detail::StageIndex stage;   // window rows (rounded up to even) x S frame columns
  int row_stride;             // column results: [row][column job c][image i], row stride (complex)
  int chunk_rows;             // direct: window rows per block (even unless it covers the window)
  int groups;                 // groups of G images, ceil(images / G)
  int persistent_blocks;      // pipelined: the grid, blocks resident at once (fewer than groups)
  int buffer_elements;        // pipelined: floats per buffer (its spectrum, column results or stage)
  detail::FastDivmod div_hw, div_w, div_channels;
  // The window inside the frame's first KeptOutputs<S, L>() rows (columns): the column (row)
  // transforms compute only those outputs (pipelined and staged; the direct column pass too).
  bool keep_rows, keep_cols;
};

// Copies the output windows from the stage (window row h, frame column offset_w + w) to global memory.
template <typename Io, typename Real, int G, int kThreads, bool kPixelMajor = false>
__device__ __forceinline__ void StoreStage(const Real* stage, Io* __restrict__ output, const Irfft2dArgs& a,
                                           int n0, int nvalid) {
  const int tid = threadIdx.x;
  const int hw = a.out_h * a.out_w;
  const Real* window = stage + detail::InverseStageAt<kPixelMajor, G>(a.stage, 0, 0, a.offset_w);
  const auto at = [&](int i, int h, int w) { return detail::InverseStageAt<kPixelMajor, G>(a.stage, i, h, w); };
  if (!kPixelMajor && !a.nhwc) {
    // NCHW: the block's output images are one contiguous run of nvalid * out_h * out_w values.
    Io* dst = output + static_cast<size_t>(n0) * hw;
    const int total = nvalid * hw;
    int scalar_begin = 0;
    if constexpr (std::is_same<Io, float>::value) {
      if (a.vector_io) {
        float4* dst4 = reinterpret_cast<float4*>(dst);
        const int total4 = total / 4;
        for (int idx = tid; idx < total4; idx += kThreads) {
          int i, rem, h, w;
          a.div_hw.DivMod(4 * idx, i, rem);
          a.div_w.DivMod(rem, h, w);
          float comp[4];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            comp[e] = window[a.stage.At(i, h, w)];
            if (++w == a.out_w) {
              w = 0;
              if (++h == a.out_h) {
                h = 0;
                ++i;
              }
            }
          }
          detail::StoreStreaming(dst4 + idx, make_float4(comp[0], comp[1], comp[2], comp[3]));
        }
        scalar_begin = total4 * 4;
      }
    }
    for (int e = scalar_begin + tid; e < total; e += kThreads) {
      int i, rem, h, w;
      a.div_hw.DivMod(e, i, rem);
      a.div_w.DivMod(rem, h, w);
      detail::StoreStreaming(dst + e, detail::ToStorage<Io>(window[a.stage.At(i, h, w)]));
    }
  } else {
    if constexpr (std::is_same<Io, float>::value && G % 4 == 0) {
      if (a.vector_io) {
        // channels % 4 == 0: four consecutive images share b and are 16-byte aligned.
        constexpr int kQuads = G / 4;
        const int i = 4 * (tid % kQuads);
        if (i >= nvalid) return;
        int b, c;
        a.div_channels.DivMod(n0 + i, b, c);
        float* dst = output + static_cast<size_t>(b) * hw * a.channels + c;
        detail::PixelWalk walk(a.div_w, tid / kQuads, kThreads / kQuads);
        for (int pix = tid / kQuads; pix < hw; pix += kThreads / kQuads, walk.Next(a.out_w)) {
          const float* src = window + at(i, walk.h, walk.w);
          const float4 quad = kPixelMajor ? *reinterpret_cast<const float4*>(src)
                                          : make_float4(src[0], src[a.stage.image_stride], src[2 * a.stage.image_stride],
                                                        src[3 * a.stage.image_stride]);
          detail::StoreStreaming<true>(reinterpret_cast<float4*>(dst + static_cast<size_t>(pix) * a.channels), quad);
        }
        return;
      }
    }
    const int i = tid % G;
    if (i >= nvalid) return;
    int b, c;
    a.div_channels.DivMod(n0 + i, b, c);
    Io* dst = output + static_cast<size_t>(b) * hw * a.channels + c;
    detail::PixelWalk walk(a.div_w, tid / G, kThreads / G);
    for (int pix = tid / G; pix < hw; pix += kThreads / G, walk.Next(a.out_w)) {
      detail::StoreStreaming<true>(dst + static_cast<size_t>(pix) * a.channels,
                             detail::ToStorage<Io>(window[at(i, walk.h, walk.w)]));
    }
  }
}

// Column pass, loads: column job c's values along ky of one image, from `in` (the image's bin (0, 0))
// with `stride` images between bins; job 0 packs the Hermitian parts of the columns kx = 0 and
// kx = S/2, H0 + i * HN. Zero for an invalid image.
template <typename Io, int S, int L>
__device__ __forceinline__ void LoadColumn(const typename detail::Storage<Io>::Pair* in, int stride, bool image_valid,
                                           int c, int l,
                                           complex_t<typename detail::Storage<Io>::Compute> (&y)[S / L]) {
  using Real = typename detail::Storage<Io>::Compute;
  using C = complex_t<Real>;
  using Layout = detail::FftLayout<S, L>;
  constexpr int P = S / L, kHalf = S / 2;
  if (c != 0) {
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const C v = detail::ToCompute(in[detail::SpectrumIndex(S, Layout::InputIndex(p, l), c, stride, 0)]);
      y[p] = image_valid ? v : C{Real(0), Real(0)};
    }
  } else {
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const int ky = Layout::InputIndex(p, l);
      const int ky_mirror = ky == 0 ? 0 : S - ky;  // (S - ky) mod S
      const C x0 = detail::ToCompute(in[detail::SpectrumIndex(S, ky, 0, stride, 0)]);
      const C x0m = detail::ToCompute(in[detail::SpectrumIndex(S, ky_mirror, 0, stride, 0)]);
      const C xn = detail::ToCompute(in[detail::SpectrumIndex(S, ky, kHalf, stride, 0)]);
      const C xnm = detail::ToCompute(in[detail::SpectrumIndex(S, ky_mirror, kHalf, stride, 0)]);
      // 2H = X[ky] + conj(X[-ky]) for both columns; v = H0 + i * HN.
      const Real h0x = Real(0.5) * (x0.x + x0m.x), h0y = Real(0.5) * (x0.y - x0m.y);
      const Real hnx = Real(0.5) * (xn.x + xnm.x), hny = Real(0.5) * (xn.y - xnm.y);
      y[p] = image_valid ? C{h0x - hny, h0y + hnx} : C{Real(0), Real(0)};
    }
  }
}

// Row pass, loads: window rows a and b packed into one complex length-S inverse (Hermitian extension
// of row a plus i times that of row b), read from the column results' rows buf_a and buf_b.
template <typename Real, int S, int L, int G>
__device__ __forceinline__ void LoadRowPair(const complex_t<Real>* columns, int row_stride, int buf_a, int buf_b,
                                            int i, int l, complex_t<Real> (&x)[S / L]) {
  using C = complex_t<Real>;
  using Layout = detail::FftLayout<S, L>;
  constexpr int P = S / L;
  const C* ya_row = columns + buf_a * row_stride + i;
  const C* yb_row = columns + buf_b * row_stride + i;
  // Input k = p * L + l: k < S/2 for p < P/2, k >= S/2 for p >= P/2 (k = S/2 exactly when p = P/2, l = 0).
#pragma unroll
  for (int p = 0; p < P; ++p) {
    if (p < P / 2) {
      const int k = Layout::InputIndex(p, l);
      const C ya = ya_row[k * G], yb = yb_row[k * G];
      x[p] = (p == 0 && l == 0) ? C{ya.x, yb.x}                 // k = 0: the real kx = 0 values
                                : C{ya.x - yb.y, ya.y + yb.x};  // Ya[k] + i Yb[k]
    } else {
      const bool nyquist = p == P / 2 && l == 0;                          // k = S/2
      const int kk = nyquist ? 0 : S - Layout::InputIndex(p, l);        // column job holding bin S - k
      const C ya = ya_row[kk * G], yb = yb_row[kk * G];
      x[p] = nyquist ? C{ya.y, yb.y}                                     // the real kx = S/2 values
                     : C{ya.x + yb.y, yb.x - ya.y};                      // conj(Ya[S-k]) + i conj(Yb[S-k])
    }
  }
}

// Row pass, stores: the inverse of pair q (window rows 2q and 2q + 1) into the stage, scaled; frame
// columns below kKept only (the window's, when kKept < S).
template <typename Real, int S, int L, int G, int kKept, bool kPixelMajor>
__device__ __forceinline__ void StageRowPair(complex_t<Real> (&x)[S / L], Real* stage, const detail::StageIndex& si,
                                             int q, int i, int l, unsigned group_mask, Real scale) {
  using Layout = detail::FftLayout<S, L>;
  constexpr int P = S / L;
  constexpr int kColumnStride = kPixelMajor ? G : 1;
  detail::DistributedFft<Real, true, S, L, S, kKept>(x, l, G, group_mask);
  Real* row_a = stage + detail::InverseStageAt<kPixelMajor, G>(si, i, 2 * q, 0);
  Real* row_b = row_a + si.row_stride;  // exists: stage rows are rounded up to even
#pragma unroll
  for (int r = 0; r < P; ++r) {
    if (r % (S / kKept) != 0) continue;  // an output past kKept (DifStagesKeeping)
    const int w = Layout::OutputIndex(r, l);
    row_a[w * kColumnStride] = x[r].x * scale;
    row_b[w * kColumnStride] = x[r].y * scale;
  }
}

// The row pass's transform and stores with or without the kept-columns pruning (a.keep_cols).
template <typename Real, int S, int L, int G, bool kPixelMajor = false>
__device__ __forceinline__ void StageRowPairOf(const Irfft2dArgs& a, complex_t<Real> (&x)[S / L], Real* stage, int q,
                                               int i, int l, unsigned group_mask, Real scale) {
  constexpr int kKept = detail::KeptOutputs<S, L>();
  if (kKept < S && a.keep_cols) {
    StageRowPair<Real, S, L, G, kKept, kPixelMajor>(x, stage, a.stage, q, i, l, group_mask, scale);
  } else {
    StageRowPair<Real, S, L, G, S, kPixelMajor>(x, stage, a.stage, q, i, l, group_mask, scale);
  }
}

// spectrum: [bins, images] of Storage<Io>::Pair; output: the window in Io. Shape: a detail::BlockShape.
// The staged and direct strategies.
template <typename Io, int S, typename Shape>
__global__ void __launch_bounds__(Shape::kThreads, Shape::kMinBlocks)
    Irfft2dKernel(const typename detail::Storage<Io>::Pair* __restrict__ spectrum, Io* __restrict__ output,
                  const Irfft2dArgs a) {
  detail::AwaitPrecedingGrids();
  using Real = typename detail::Storage<Io>::Compute;
  using C = complex_t<Real>;
  constexpr int L = Shape::kLanes, G = Shape::kImagesPerBlock, kThreads = Shape::kThreads;
  using Layout = detail::FftLayout<S, L>;
  constexpr int P = S / L;
  // A mean-normalised half-precision spectrum is already divided by S^2.
  const Real scale = detail::Storage<Io>::kHalf ? Real(1) : Real(1) / Real(S * S);

  // Shared memory, one buffer used twice:
  //   columns : complex [row][column job c][image i], row stride a.row_stride; rows are the S frame
  //             rows (staged) or the window rows of the block's chunk (direct); job 0 holds
  //             (real column kx = 0, real column kx = S/2) packed as re / im
  //   stage   : real [image][window row][frame column], layout a.stage (staged)
  extern __shared__ __align__(16) unsigned char smem_raw[];
  C* columns = reinterpret_cast<C*>(smem_raw);
  Real* stage = reinterpret_cast<Real*>(smem_raw);

  const int tid = threadIdx.x;
  const int i = tid % G;
  const int l = (tid / G) % L;
  const int q = tid / (G * L);
  const int n0 = blockIdx.x * G;
  const int nvalid = min(G, a.images - n0);
  const int n = n0 + i;
  const bool image_valid = i < nvalid;
  const unsigned group_mask = detail::LaneGroupMask(G * L);
  const int row0 = blockIdx.y * a.chunk_rows;  // first window row of this block

  // ---- Column pass: job c = q, inverse along ky.
  {
    const int c = q;
    C y[P];
    LoadColumn<Io, S, L>(spectrum + (image_valid ? n : 0), a.images, image_valid, c, l, y);
    constexpr int kKept = detail::KeptOutputs<S, L>();
    // Pruned, only the registers r = 0 (mod S / kKept) hold outputs: rows below kKept, which hold
    // the window (the direct strategy's row test below skips the others).
    const bool keep_rows = kKept < S && a.keep_rows;
    if (keep_rows) {
      detail::DistributedFft<Real, true, S, L, S, kKept>(y, l, G, group_mask);
    } else {
      detail::DistributedFft<Real, true, S, L>(y, l, G, group_mask);
    }
    C* col = columns + c * G + i;
    if (a.use_stage) {
#pragma unroll
      for (int r = 0; r < P; ++r) {
        if (!keep_rows || r % (S / kKept) == 0) col[Layout::OutputIndex(r, l) * a.row_stride] = y[r];
      }
    } else {
#pragma unroll
      for (int r = 0; r < P; ++r) {
        const int rel = Layout::OutputIndex(r, l) - a.offset_h - row0;  // row inside the chunk
        if (rel >= 0 && rel < a.chunk_rows && row0 + rel < a.out_h) col[rel * a.row_stride] = y[r];
      }
    }
  }
  __syncthreads();

  // ---- Row pass: job q packs window rows row0 + 2q (a) and row0 + 2q + 1 (b).
  const int ra = 2 * q;
  const bool row_active = ra < a.chunk_rows && row0 + ra < a.out_h;
  const bool has_b = ra + 1 < a.chunk_rows && row0 + ra + 1 < a.out_h;
  // Buffer rows of a and b; without b, row a is read twice (any real row works, its result is dropped).
  const int buf_a = row_active ? (a.use_stage ? a.offset_h + ra : ra) : 0;
  const int buf_b = has_b ? buf_a + 1 : buf_a;
  C x[P];
  LoadRowPair<Real, S, L, G>(columns, a.row_stride, buf_a, buf_b, i, l, x);
  if (a.use_stage) {
    __syncthreads();  // columns is overwritten by the stage below
    if (row_active) StageRowPairOf<Real, S, L, G>(a, x, stage, q, i, l, group_mask, scale);
    __syncthreads();
    StoreStage<Io, Real, G, kThreads>(stage, output, a, n0, nvalid);
  } else if (row_active) {
    detail::DistributedFft<Real, true, S, L>(x, l, G, group_mask);
    if (image_valid) {
      const detail::ImageIndex image = detail::ImageIndex::Make(n, a.channels, a.out_h, a.out_w, a.nhwc);
#pragma unroll
      for (int r = 0; r < P; ++r) {
        const int w = Layout::OutputIndex(r, l) - a.offset_w;
        if (w >= 0 && w < a.out_w) {
          output[image.At(row0 + ra, w)] = detail::ToStorage<Io>(x[r].x * scale);
          if (has_b) output[image.At(row0 + ra + 1, w)] = detail::ToStorage<Io>(x[r].y * scale);
        }
      }
    }
  }
}

// The pipelined strategy's copy of piece `part` of group g's spectrum (detail::CopyPiece of the copy loop), bins x G
// complex values, into a buffer ([bin][image], G images per bin) by cp.async: 16 bytes (two images)
// per copy where a.copy16, else 8. Images past the end are zero-filled.
template <int G, int S, int kThreads>
__device__ __forceinline__ void CopySpectrumAsync(const float2* __restrict__ spectrum, float2* buffer,
                                                  const Irfft2dArgs& a, int g, int part, int tid) {
  constexpr int kBins = S * (S / 2 + 1);
  const int n0 = g * G;
  const int nvalid = min(G, a.images - n0);
  if (G % 2 == 0 && a.copy16) {
    constexpr int kPairs = G / 2;
    const detail::CopyPiece piece(kBins * kPairs, kThreads, part, config::kInversePipeline.copy_parts);
    for (int e = piece.begin + tid; e < piece.end; e += kThreads) {
      const int bin = e / kPairs, i = 2 * (e % kPairs);
      const int valid = min(2, max(0, nvalid - i));
      const float2* src = spectrum + static_cast<size_t>(bin) * a.images + n0 + (valid > 0 ? i : 0);
      detail::CpAsync<16>(buffer + bin * G + i, src, 8 * valid);
    }
  } else {
    const detail::CopyPiece piece(kBins * G, kThreads, part, config::kInversePipeline.copy_parts);
    for (int e = piece.begin + tid; e < piece.end; e += kThreads) {
      const int bin = e / G, i = e % G;
      const bool valid = i < nvalid;
      const float2* src = spectrum + static_cast<size_t>(bin) * a.images + (valid ? n0 + i : 0);
      detail::CpAsync<8>(buffer + bin * G + i, src, valid ? 8 : 0);
    }
  }
}

// The pipelined strategy (float tensors, sm_80+; shapes with kPipelinable): persistent blocks. Block b inverts the
// groups of G images g = b, b + gridDim.x, ...; while one group is inverted, the spectrum of the next
// is copied into the other of two shared-memory buffers by cp.async, so the loads are in flight
// during the transforms instead of in a phase of their own. Each buffer holds in turn a group's
// spectrum ([bin][image], complex), its column results (columns, as in Irfft2dKernel) and its stage.
template <int S, typename Shape, bool kPixelMajor>
__global__ void __launch_bounds__(Shape::kThreads, (detail::PipelinedMinBlocks<S, Shape>()))
    Irfft2dPipelinedKernel(const float2* __restrict__ spectrum, float* __restrict__ output, const Irfft2dArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  detail::AwaitPrecedingGrids();
  using C = float2;
  constexpr int L = Shape::kLanes, G = Shape::kImagesPerBlock, kThreads = Shape::kThreads;
  using Layout = detail::FftLayout<S, L>;
  constexpr int P = S / L;
  const float scale = 1.f / static_cast<float>(S * S);
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* const buffers = reinterpret_cast<float*>(smem_raw);  // two of a.buffer_elements

  const int tid = threadIdx.x;
  const int i = tid % G;
  const int l = (tid / G) % L;
  const int q = tid / (G * L);
  const unsigned group_mask = detail::LaneGroupMask(G * L);
  const int ra = 2 * q;
  const bool row_active = ra < a.out_h;
  const int buf_a = row_active ? a.offset_h + ra : 0;
  const int buf_b = ra + 1 < a.out_h ? buf_a + 1 : buf_a;

  detail::RunPipelinedGroups<config::kInversePipeline.copy_parts, config::kInversePipeline.first_alone>(
      buffers, a.buffer_elements, a.groups,
      [&](float* buffer, int g, int part) {
        CopySpectrumAsync<G, S, kThreads>(spectrum, reinterpret_cast<C*>(buffer), a, g, part, tid);
      },
      [&](float* buffer, int g, auto&& copy_rest) {
        C* const columns = reinterpret_cast<C*>(buffer);
        // ---- Column pass: job c = q, from the staged spectrum (zero for images past the end).
        C y[P];
        LoadColumn<float, S, L>(columns + i, G, true, q, l, y);
        __syncthreads();  // the spectrum is overwritten by the column results
        constexpr int kKept = detail::KeptOutputs<S, L>();
        if (kKept < S && a.keep_rows) {
          // Only the rows below kKept, which hold the window (DifStagesKeeping).
          detail::DistributedFft<float, true, S, L, S, kKept>(y, l, G, group_mask);
#pragma unroll
          for (int r = 0; r < P; r += S / kKept) columns[Layout::OutputIndex(r, l) * a.row_stride + q * G + i] = y[r];
        } else {
          detail::DistributedFft<float, true, S, L>(y, l, G, group_mask);
#pragma unroll
          for (int r = 0; r < P; ++r) columns[Layout::OutputIndex(r, l) * a.row_stride + q * G + i] = y[r];
        }
        copy_rest();  // the next group's other pieces, between this group's column and row passes
        __syncthreads();

        // ---- Row pass and stores, as the staged strategy's.
        C x[P];
        LoadRowPair<float, S, L, G>(columns, a.row_stride, buf_a, buf_b, i, l, x);
        __syncthreads();  // the column results are overwritten by the stage
        if (row_active) StageRowPairOf<float, S, L, G, kPixelMajor>(a, x, buffer, q, i, l, group_mask, scale);
        __syncthreads();
        const int n0 = g * G;
        StoreStage<float, float, G, kThreads, kPixelMajor>(buffer, output, a, n0, min(G, a.images - n0));
      });
#endif
}

// The kernel's arguments for one block shape: its strategy, shared memory, chunks of window rows.
template <typename Io, int S, typename Shape>
Irfft2dArgs MakeIrfft2dArgs(const Irfft2dParams& p, const void* spectrum, const void* output, int compute_capability,
                        int multiprocessors, size_t max_smem, size_t* smem) {
  using Real = typename detail::Storage<Io>::Compute;
  constexpr int L = Shape::kLanes, G = Shape::kImagesPerBlock;
  Irfft2dArgs a;
  a.images = p.batch * p.channels;
  a.channels = p.channels;
  a.out_h = p.out_h;
  a.out_w = p.out_w;
  a.offset_h = p.offset_h;
  a.offset_w = p.offset_w;
  a.nhwc = p.nhwc;
  a.div_hw = detail::FastDivmod(p.out_h * p.out_w);
  a.div_w = detail::FastDivmod(p.out_w);
  a.div_channels = detail::FastDivmod(p.channels);
  constexpr int kKept = detail::KeptOutputs<S, L>();
  a.keep_rows = kKept < S && p.offset_h + p.out_h <= kKept;
  a.keep_cols = kKept < S && p.offset_w + p.out_w <= kKept;
  a.stage = detail::MakeStageIndex((p.out_h + 1) & ~1, S, G, L);
  // Rows two apart must land on different banks: 2 * row_stride = G (mod 16), as for slot strides.
  a.row_stride = detail::ComplexSlotStride(S / 2, G);
  a.groups = (a.images + G - 1) / G;
  a.buffer_elements = 0;
  a.persistent_blocks = 0;
  a.copy16 = false;
  a.pixel_major = false;
  const size_t row_bytes = sizeof(complex_t<Real>) * static_cast<size_t>(a.row_stride);

  // The staged strategy: all S frame rows of the column results, then the stage, in the same memory.
  const size_t stage_bytes = sizeof(Real) * static_cast<size_t>(G) * a.stage.image_stride;
  const size_t columns_bytes = row_bytes * S;
  *smem = stage_bytes > columns_bytes ? stage_bytes : columns_bytes;
  a.strategy = config::FftStrategy::kStaged;
  a.use_stage = true;
  a.chunk_rows = p.out_h;
  a.vector_io = detail::UseVectorIo<Io>(output, a.strategy, G, p.nhwc, p.channels);

  // The pipelined strategy: the staged strategy's memory, or a group's spectrum where that is larger,
  // twice.
  if constexpr (std::is_same<Io, float>::value && detail::kPipelinable<S, Shape>) {
    if (compute_capability >= 80) {
      // NHWC: the pixel-major stage (detail::InverseStageAt), in buffers of whole 128-byte lines.
      const bool pixel_major = p.nhwc;
      const detail::StageIndex pixel_stage = detail::MakePixelMajorInverseStage(S, G, L);
      const size_t pixel_stage_bytes = sizeof(float) * static_cast<size_t>((p.out_h + 1) & ~1) * pixel_stage.row_stride;
      const size_t columns_or_stage_bytes = pixel_major ? std::max(columns_bytes, pixel_stage_bytes) : *smem;
      const size_t spectrum_bytes = sizeof(float2) * static_cast<size_t>(NumBins(S)) * G;
      const size_t buffer_bytes = detail::PipelineBufferBytes(std::max(columns_or_stage_bytes, spectrum_bytes), pixel_major);
      a.persistent_blocks = detail::PipelinedGrid<S, Shape>(a.groups, multiprocessors, max_smem, 2 * buffer_bytes);
      if (a.persistent_blocks > 0) {
        a.strategy = config::FftStrategy::kPipelined;
        if (pixel_major) {
          a.pixel_major = true;
          a.stage = pixel_stage;
          // 16-byte loads of a pixel's quads need rows of whole quads (a row stride of 2 mod 16, at
          // G L = 4, has none: those store one float at a time).
          a.vector_io = a.vector_io && pixel_stage.row_stride % 4 == 0;
        }
        a.buffer_elements = static_cast<int>(buffer_bytes / sizeof(float));
        a.copy16 = (reinterpret_cast<uintptr_t>(spectrum) & 15) == 0 && a.images % 2 == 0;
        *smem = 2 * buffer_bytes;
        return a;
      }
    }
  }
  if (*smem > max_smem) {
    // The direct strategy: chunks of window rows (even count), direct global stores.
    a.strategy = config::FftStrategy::kDirect;
    a.use_stage = false;
    int rows = static_cast<int>(max_smem / row_bytes) & ~1;
    if (rows < 2) rows = 2;
    a.chunk_rows = rows < p.out_h ? rows : p.out_h;
    *smem = row_bytes * a.chunk_rows;
    a.vector_io = false;
  }
  return a;
}

template <typename Io, int S, typename Shape>
int LaunchIrfft2dShaped(const Irfft2dArgs& a, size_t smem, const Io* spectrum, Io* output, cudaStream_t stream) {
  using Pair = typename detail::Storage<Io>::Pair;
  using Block = detail::BlockShapeOf<S, Shape>;
  if constexpr (std::is_same<Io, float>::value && detail::kPipelinable<S, Shape>) {
    if (a.strategy == config::FftStrategy::kPipelined) {
      // The stage layout is the kernel's (a.stage holds its strides): pixel-major for NHWC.
      const auto kernel = a.pixel_major ? Irfft2dPipelinedKernel<S, Block, true> : Irfft2dPipelinedKernel<S, Block, false>;
      return detail::LaunchWithSharedMemory(kernel, dim3(a.persistent_blocks),
                                            Shape::kThreads, smem, stream, reinterpret_cast<const float2*>(spectrum),
                                            output, a);
    }
  }
  const dim3 grid(static_cast<unsigned>(a.groups), static_cast<unsigned>((a.out_h + a.chunk_rows - 1) / a.chunk_rows));
  return detail::LaunchWithSharedMemory(Irfft2dKernel<Io, S, Block>, grid, Shape::kThreads, smem, stream,
                                        reinterpret_cast<const Pair*>(spectrum), output, a);
}

// spectrum: [bins, images] pairs, as Io values (re, im).
template <typename Io, int S>
int LaunchIrfft2dSized(const Irfft2dParams& p, const Io* spectrum, Io* output, cudaStream_t stream) {
  using Real = typename detail::Storage<Io>::Compute;
  detail::DeviceLimits limits;
  const int err = detail::CurrentDeviceLimits(&limits);
  if (err != 0) return err;
  return detail::LaunchPreferringLarge<Real, S, true>(
      limits, p.nhwc, p.channels,
      [&](auto tag, size_t max_smem, size_t* smem) {
        return MakeIrfft2dArgs<Io, S, typename decltype(tag)::type>(p, spectrum, output, limits.compute_capability,
                                                                    limits.multiprocessors, max_smem, smem);
      },
      [&](auto tag, const Irfft2dArgs& a, size_t smem) {
        return LaunchIrfft2dShaped<Io, S, typename decltype(tag)::type>(a, smem, spectrum, output, stream);
      });
}

template <typename Real>
int LaunchIrfft2dOf(const Irfft2dParams& p, const Real* spectrum, Real* output, cudaStream_t stream) {
  const long long images = static_cast<long long>(p.batch) * p.channels;
  if (images <= 0 || p.out_h <= 0 || p.out_w <= 0) return 0;
  return detail::DispatchFftSize(p.fft_size, [&](auto size) {
    return LaunchIrfft2dSized<Real, decltype(size)::value>(p, spectrum, output, stream);
  });
}

}  // namespace

template <typename Real>
int LaunchIrfft2d(const Irfft2dParams& p, const Real* spectrum, Real* output, cudaStream_t stream) {
  using Device = typename DeviceType<Real>::type;
  return LaunchIrfft2dOf<Device>(p, reinterpret_cast<const Device*>(spectrum),
                                 reinterpret_cast<Device*>(output), stream);
}

#define FFTCONV_INSTANTIATE(Real) \
  template int LaunchIrfft2d<Real>(const Irfft2dParams&, const Real*, Real*, cudaStream_t);
FFTCONV_FOR_EACH_LAUNCHER_TYPE(FFTCONV_INSTANTIATE)
#undef FFTCONV_INSTANTIATE

}  // namespace cuda
}  // namespace fftconv
