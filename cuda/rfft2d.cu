// Forward real 2-D FFT of a batch of small images (fbfft-style), writing a frequency-major spectrum.
//
// One block transforms G consecutive images n0 .. n0+G-1 (n = b * channels + c):
//   1. stage   : the S x S frames are zeroed in shared memory and the images' pixels copied in at
//                (offset_h, offset_w) from NCHW or NHWC global memory with coalesced (vectorised where
//                aligned) loads. No padded copy exists in global memory.
//   2. row pass: frame rows 2j and 2j+1 are packed into one complex row z = row_a + i * row_b and
//                transformed (length S, L lanes, data in registers). Pairs outside the image rows are
//                not transformed (their spectrum is zero). The packed spectra Z_j[k] go to shared memory.
//   3. columns : column job c (1 <= c < S/2) rebuilds column kx = c of the row spectra from
//                Z_j[c] and Z_j[S-c]; job 0 packs the two real columns kx = 0 and kx = S/2 into one
//                complex column. Each job runs a length-S FFT along ky and writes its bins; threads of
//                one warp write consecutive images of the same bin (coalesced).
// On sm_80+ with float tensors the same three steps run in persistent blocks that loop over groups of
// G images, the pixels of the next group copied into a second buffer by cp.async while this group is
// transformed (the pipelined strategy, Rfft2dPipelinedKernel), where both buffers fit in shared
// memory; on sm_90+ an NHWC group of whole channels is one tensor copy, zeros included
// (detail::TensorCopyStage). Otherwise one block per group runs them (the staged strategy,
// Rfft2dKernel). When the device's shared memory is too small for the staged strategy (large S,
// double), the stage is skipped (rows read straight from global memory) and the column jobs are split
// into chunks, one chunk per blockIdx.y, each block recomputing the row pass (the direct strategy).
// Half precision (Io = __half / __nv_bfloat16): pixels are converted to float as they are loaded,
// the transforms run in float, and each bin is stored divided by S^2 as a __half2 / __nv_bfloat162
// (re, im) pair: the mean-normalised spectrum [bins, images, 2], bounded by the largest |pixel|.
#include <cuda_runtime.h>

#include <algorithm>

#include "device_info.h"
#include "fft_stages.cuh"
#include "fftconv_cuda.h"

namespace fftconv {
namespace cuda {
namespace {

using detail::complex_t;

struct Rfft2dArgs {
  int images;                 // batch * channels
  int channels, height, width;
  int offset_h, offset_w;
  bool nhwc;
  int pair_begin, pair_end;   // frame row pairs (2j, 2j+1) that hold pixels: [pair_begin, pair_end)
  bool use_stage;             // strategy != kDirect, the kernels' test: frames staged in shared memory, one chunk
  config::FftStrategy strategy;  // read by the launcher
  bool vector_io;             // 16-byte global loads in the stage copy (float4; pipelined: NHWC only)
  bool tensor_copy;           // pipelined, NHWC: one tensor copy per group fills the stage where the launch
                              // can (TensorCopyStage, sm_90+); read by the launcher, not the kernels
  detail::StageIndex stage;   // staged: frames, S x S; pipelined: stage_rows frame rows x S columns,
                              // pixel-major for NHWC (PixelMajorStage)
  int stage_elements;         // G * stage.image_stride
  int stage_row0;             // pipelined: frame row of stage row 0 (2 * pair_begin)
  int stage_rows;             // pipelined: 2 * (pair_end - pair_begin)
  int buffer_elements;        // pipelined: floats per buffer (its stage or its row spectra), a multiple of
                              // 4 (NCHW) or 32 (NHWC)
  int groups;                 // groups of G images, ceil(images / G)
  int persistent_blocks;      // pipelined: the grid, blocks resident at once (fewer than groups)
  int slot_stride;            // row spectra: [slot][pair j][image i], slot stride (complex)
  int chunk_jobs;             // column jobs per block
  detail::FastDivmod div_hw, div_w, div_channels;
  detail::FastDivmod div_h, div_pad_cols;  // the pipelined zero fill: height, read_cols - width
  detail::FastDivmod div_pad_quads;         // its NHWC zero fill: (read_cols - width) * G / 4 quads per row
  bool round_tf32;            // float spectrum values stored rounded to TF32 (round_to_tf32, sm_80+)
  // The image inside the frame's first LeadingValues<S, L>() columns (rows): the row (column)
  // transforms read only those and prune the steps that the zeros after them make trivial.
  bool leading_cols, leading_rows;
  int read_cols;              // frame columns the row pass reads (LeadingValues or S): the pipelined zero fill
};

// Copies the block's images into their zeroed frames (pixel (h, w) at frame (offset_h + h, offset_w + w)).
template <typename Io, typename Real, int G, int kThreads>
__device__ __forceinline__ void LoadStage(const Io* __restrict__ input, Real* stage, const Rfft2dArgs& a,
                                          int n0, int nvalid) {
  const int tid = threadIdx.x;
  const int hw = a.height * a.width;
  Real* frame = stage + a.stage.At(0, a.offset_h, a.offset_w);
  constexpr int kUnroll = config::kStageLoadsInFlight;  // per thread (vector path: kUnroll / 2 float4)
  if (!a.nhwc) {
    // NCHW: the block's images are one contiguous run of nvalid * H * W values.
    const Io* src = input + static_cast<size_t>(n0) * hw;
    const int total = nvalid * hw;
    int scalar_begin = 0;
    if constexpr (std::is_same<Io, float>::value) {
      if (a.vector_io) {
        const float4* src4 = reinterpret_cast<const float4*>(src);
        const int total4 = total / 4;
        constexpr int kVec = kUnroll / 2;
        for (int v0 = tid; v0 < total4; v0 += kThreads * kVec) {
          float4 v[kVec];
#pragma unroll
          for (int u = 0; u < kVec; ++u) {
            const int idx = v0 + u * kThreads;
            v[u] = idx < total4 ? __ldg(src4 + idx) : make_float4(0.f, 0.f, 0.f, 0.f);
          }
#pragma unroll
          for (int u = 0; u < kVec; ++u) {
            const int idx = v0 + u * kThreads;
            if (idx < total4) {
              int i, rem, h, w;
              a.div_hw.DivMod(4 * idx, i, rem);
              a.div_w.DivMod(rem, h, w);
              const float comp[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                frame[a.stage.At(i, h, w)] = comp[e];
                if (++w == a.width) {
                  w = 0;
                  if (++h == a.height) {
                    h = 0;
                    ++i;
                  }
                }
              }
            }
          }
        }
        scalar_begin = total4 * 4;
      }
    }
    for (int e0 = scalar_begin + tid; e0 < total; e0 += kThreads * kUnroll) {
      Real v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int e = e0 + u * kThreads;
        v[u] = e < total ? detail::ToCompute(src[e]) : Real(0);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int e = e0 + u * kThreads;
        if (e < total) {
          int i, rem, h, w;
          a.div_hw.DivMod(e, i, rem);
          a.div_w.DivMod(rem, h, w);
          frame[a.stage.At(i, h, w)] = v[u];
        }
      }
    }
  } else {
    // NHWC: for every pixel the block's images are (mostly) consecutive channels.
    if constexpr (std::is_same<Io, float>::value && G % 4 == 0) {
      if (a.vector_io) {
        // channels % 4 == 0: four consecutive images share b and are 16-byte aligned.
        constexpr int kQuads = G / 4;
        const int i = 4 * (tid % kQuads);
        if (i < nvalid) {
          int b, c;
          a.div_channels.DivMod(n0 + i, b, c);
          const float* src = input + static_cast<size_t>(b) * hw * a.channels + c;
          constexpr int kVec = kUnroll / 2;
          for (int p0 = tid / kQuads; p0 < hw; p0 += (kThreads / kQuads) * kVec) {
            float4 v[kVec];
#pragma unroll
            for (int u = 0; u < kVec; ++u) {
              const int pix = p0 + u * (kThreads / kQuads);
              v[u] = pix < hw ? __ldg(reinterpret_cast<const float4*>(src + static_cast<size_t>(pix) * a.channels))
                              : make_float4(0.f, 0.f, 0.f, 0.f);
            }
#pragma unroll
            for (int u = 0; u < kVec; ++u) {
              const int pix = p0 + u * (kThreads / kQuads);
              if (pix < hw) {
                int h, w;
                a.div_w.DivMod(pix, h, w);
                float* dst = frame + a.stage.At(i, h, w);
                dst[0] = v[u].x;
                dst[a.stage.image_stride] = v[u].y;
                dst[2 * a.stage.image_stride] = v[u].z;
                dst[3 * a.stage.image_stride] = v[u].w;
              }
            }
          }
        }
        return;
      }
    }
    const int i = tid % G;
    if (i >= nvalid) return;
    int b, c;
    a.div_channels.DivMod(n0 + i, b, c);
    const Io* src = input + static_cast<size_t>(b) * hw * a.channels + c;
    for (int p0 = tid / G; p0 < hw; p0 += (kThreads / G) * kUnroll) {
      Real v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int pix = p0 + u * (kThreads / G);
        v[u] = pix < hw ? detail::ToCompute(src[static_cast<size_t>(pix) * a.channels]) : Real(0);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int pix = p0 + u * (kThreads / G);
        if (pix < hw) {
          int h, w;
          a.div_w.DivMod(pix, h, w);
          frame[a.stage.At(i, h, w)] = v[u];
        }
      }
    }
  }
}

// Row pass, after the loads: transforms the packed rows x of pair j in place (all zero where the pair
// holds no pixels; zero from column kLeading on).
template <typename Real, int S, int L, int G, int kLeading>
__device__ __forceinline__ void TransformRowPairInPlace(complex_t<Real> (&x)[S / L], bool row_active, int l,
                                                        unsigned group_mask) {
  using C = complex_t<Real>;
  constexpr int P = S / L;
  if (row_active) {
    detail::DistributedFft<Real, false, S, L, kLeading>(x, l, G, group_mask);
  } else {
#pragma unroll
    for (int r = 0; r < P; ++r) x[r] = C{Real(0), Real(0)};
  }
}

// Hands each row spectrum value of a transformed pair (register r of lane l) to place(r, job, which),
// the column job that reads it and which of its parts (detail::RowSpectrumJobOf).
template <int S, int L, typename Place>
__device__ __forceinline__ void ForEachRowSpectrum(int l, Place&& place) {
  using Layout = detail::FftLayout<S, L>;
  constexpr int P = S / L;
#pragma unroll
  for (int r = 0; r < P; ++r) {
    int job, which;
    detail::RowSpectrumJobOf<S>(Layout::OutputIndex(r, l), job, which);
    place(r, job, which);
  }
}

// Row pass, after the loads: transforms the packed rows x of pair j and writes the row spectra of
// the block's column jobs [c0, c0 + a.chunk_jobs) to row_specs ([slot][pair j][image i], see
// Rfft2dKernel).
template <typename Real, int S, int L, int G, int kLeading>
__device__ __forceinline__ void TransformRowPair(complex_t<Real> (&x)[S / L], bool row_active, int j, int i,
                                                 int l, unsigned group_mask, const Rfft2dArgs& a, int c0,
                                                 complex_t<Real>* row_specs) {
  TransformRowPairInPlace<Real, S, L, G, kLeading>(x, row_active, l, group_mask);
  ForEachRowSpectrum<S, L>(l, [&](int r, int job, int which) {
    if (job >= c0 && job - c0 < a.chunk_jobs) row_specs[(2 * (job - c0) + which) * a.slot_stride + j * G + i] = x[r];
  });
}

// The direct strategy's loads: the packed rows 2j and 2j + 1 of image n straight from global memory,
// lane l's columns p L + l, zeros outside the image (and for an invalid image or an inactive
// pair).
template <typename Io, int S, int L>
__device__ __forceinline__ void LoadRowPairFromGlobal(const Io* __restrict__ input, const Rfft2dArgs& a, int n,
                                                      bool image_valid, int j, bool row_active, int l,
                                                      complex_t<typename detail::Storage<Io>::Compute> (&x)[S / L]) {
  using Real = typename detail::Storage<Io>::Compute;
  using C = complex_t<Real>;
  using Layout = detail::FftLayout<S, L>;
  constexpr int P = S / L;
  const detail::ImageIndex image =
      detail::ImageIndex::Make(image_valid ? n : 0, a.channels, a.height, a.width, a.nhwc);
  const int ha = 2 * j - a.offset_h, hb = ha + 1;  // image rows of the pair
  const bool load_a = row_active && image_valid && ha >= 0 && ha < a.height;
  const bool load_b = row_active && image_valid && hb >= 0 && hb < a.height;
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int w = Layout::InputIndex(p, l) - a.offset_w;
    const bool in_w = w >= 0 && w < a.width;
    x[p] = C{load_a && in_w ? detail::ToCompute(input[image.At(ha, w)]) : Real(0),
             load_b && in_w ? detail::ToCompute(input[image.At(hb, w)]) : Real(0)};
  }
}

// A spectrum value as stored: rounded to its storage type; a float one first rounded to TF32 where
// round_tf32 says (detail::RoundedToTf32, the matmul's rule), after the output scale.
template <typename Pair, typename C>
__device__ __forceinline__ Pair StoredSpectrum(C v, bool round_tf32) {
  if constexpr (std::is_same<Pair, float2>::value) {
    if (round_tf32) return make_float2(detail::RoundedToTf32(v.x), detail::RoundedToTf32(v.y));
  }
  return detail::ToStorage<Pair>(v);
}

// Column pass: job c = c0 + q over frame rows h = InputIndex(p, l) (pair h / 2, part h % 2) of the
// row spectra, those below kLeading only (the rest are zero); writes bins (ky, c) of image n
// (column job 0: kx = 0 and kx = S/2). kSwappedPairs: the pairs of TensorCopyStage::SwapsRows were
// packed second row first (one lane per transform: h is known at compile time).
template <typename Io, int S, int L, int G, int kLeading, bool kSwappedPairs = false>
__device__ __forceinline__ void TransformColumns(const complex_t<typename detail::Storage<Io>::Compute>* row_specs,
                                                 typename detail::Storage<Io>::Pair* __restrict__ spectrum,
                                                 const Rfft2dArgs& a, int q, int i, int l, int n, bool image_valid,
                                                 unsigned group_mask, int c0) {
  using Real = typename detail::Storage<Io>::Compute;
  using Pair = typename detail::Storage<Io>::Pair;
  using C = complex_t<Real>;
  using Layout = detail::FftLayout<S, L>;
  constexpr int P = S / L, kHalf = S / 2;
  // The column pass's factor 1/2, and 1/S^2 for a mean-normalised half-precision spectrum.
  const Real out_scale = detail::Storage<Io>::kHalf ? Real(0.5) / Real(S * S) : Real(0.5);
  const int c = c0 + q;
  if (q >= a.chunk_jobs || c >= kHalf) return;
  const C* spec_u = row_specs + (2 * q) * a.slot_stride + i;  // Z_j[c]   (Z_j[0])
  const C* spec_m = spec_u + a.slot_stride;                    // Z_j[S-c] (Z_j[S/2])
  C y[P];
  constexpr int kRead = kLeading / L;  // values per lane that may be nonzero
#pragma unroll
  for (int p = kRead; p < P; ++p) y[p] = C{Real(0), Real(0)};
  static_assert(!kSwappedPairs || L == 1, "swapped pairs: one lane per transform");
  // Whether row h is its pair's imaginary part (second row, or first of a swapped pair).
  const auto imaginary_part = [&](int h) {
    return ((h & 1) != 0) != (kSwappedPairs && detail::TensorCopyStage<S, G, L>::SwapsRows(h >> 1));
  };
  if (c == 0) {
    // Row spectra of real rows at kx = 0 and kx = S/2 are real: pack them as (kx=0, kx=S/2).
#pragma unroll
    for (int p = 0; p < kRead; ++p) {
      const int h = Layout::InputIndex(p, l);
      const C u = spec_u[(h >> 1) * G], m = spec_m[(h >> 1) * G];
      y[p] = imaginary_part(h) ? C{u.y, m.y} : C{u.x, m.x};
    }
  } else {
    // Split the packed pair: 2A = u + conj(m) (row 2j), 2B = (u - conj(m)) / i (row 2j+1); the
    // factor 1/2 is applied to the outputs.
#pragma unroll
    for (int p = 0; p < kRead; ++p) {
      const int h = Layout::InputIndex(p, l);
      const C u = spec_u[(h >> 1) * G], m = spec_m[(h >> 1) * G];
      y[p] = imaginary_part(h) ? C{u.y + m.y, m.x - u.x} : C{u.x + m.x, u.y - m.y};
    }
  }
  detail::DistributedFft<Real, false, S, L, kLeading>(y, l, G, group_mask);
  Pair* out = spectrum + n;
  // Lane l holds the bins ky = P * BitReverse(l, L) + k1 (k1 < P) of its column, k1 in register
  // DigitReversePosition(k1, P). Its stores walk them in ky order, one bin row (ky_step values)
  // apart: each address is the one before plus the step, one instruction, where an index of its own
  // took five (the index, its widening and the pointer's two halves), and job 0's second column
  // about twelve per store with the branch and the reloads around each.
  const int ky_step = (S / 2 + 1) * a.images;
  Pair* const lane_first = out + detail::SpectrumIndex(S, P * detail::BitReverse(l, L), 0, a.images, 0);
  // Stores value(r) of every register r as the bins (ky, kx) of image n, for a valid image.
  const auto store_walk = [&](int kx, auto&& value) {
    Pair* at = lane_first + kx * a.images;
#pragma unroll
    for (int k1 = 0; k1 < P; ++k1) {
      detail::StoreStreaming(at, StoredSpectrum<Pair>(value(detail::DigitReversePosition(k1, P)), a.round_tf32));
      at += ky_step;
    }
  };
  const auto store_column = [&](int kx) {
    if (image_valid) store_walk(kx, [&](int r) { return detail::CScale(y[r], out_scale); });
  };
  if (c == 0) {
    // Unpack the two real columns: X[ky,0] = (Y + conj(Ym))/2, X[ky,S/2] = (Y - conj(Ym))/2i,
    // Ym = Y[(S - ky) mod S]. Job 0 stores kx = S/2 here and leaves kx = 0 in y for the stores that
    // every job runs below: its warp's other jobs then wait through the second column's stores
    // only, not through a second copy of every store (a warp runs both sides of a branch its lanes
    // take apart, and in a block of four warps the warp holding job 0 sets the block's pace).
    C mirror[P];
#pragma unroll
    for (int r = 0; r < P; ++r) mirror[r] = detail::MirrorOutput<Real, S, L>(y, r, l, G, group_mask);
    if (image_valid) {
      store_walk(kHalf, [&](int r) {
        return C{out_scale * (y[r].y + mirror[r].y), out_scale * (mirror[r].x - y[r].x)};
      });
    }
#pragma unroll
    for (int r = 0; r < P; ++r) y[r] = C{y[r].x + mirror[r].x, y[r].y - mirror[r].y};
  }
  store_column(c);
}

// input: the images in Io; spectrum: [bins, images] of Storage<Io>::Pair. Shape: a detail::BlockShape.
// The staged and direct strategies.
template <typename Io, int S, typename Shape>
__global__ void __launch_bounds__(Shape::kThreads, Shape::kMinBlocks)
    Rfft2dKernel(const Io* __restrict__ input, typename detail::Storage<Io>::Pair* __restrict__ spectrum,
                 const Rfft2dArgs a) {
  detail::AwaitPrecedingGrids();
  using Real = typename detail::Storage<Io>::Compute;
  using C = complex_t<Real>;
  constexpr int L = Shape::kLanes, G = Shape::kImagesPerBlock, kThreads = Shape::kThreads;
  using Layout = detail::FftLayout<S, L>;
  constexpr int P = S / L;

  // Shared memory, one buffer used twice:
  //   stage     : real S x S frames, layout a.stage                             (staged only)
  //   row_specs : complex [slot][pair j][image i], slot stride a.slot_stride; for column job c of the
  //               block's chunk (c0 = first job), slot 2*(c - c0) holds Z_j[c] (Z_j[0] for c = 0) and
  //               slot 2*(c - c0) + 1 holds Z_j[S - c] (Z_j[S/2] for c = 0), for every pair j < S/2
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Real* stage = reinterpret_cast<Real*>(smem_raw);
  C* row_specs = reinterpret_cast<C*>(smem_raw);

  const int tid = threadIdx.x;
  const int i = tid % G;              // image of the block
  const int l = (tid / G) % L;        // lane inside the transform
  const int q = tid / (G * L);        // job: row pair (row pass), column job (column pass)
  const int n0 = blockIdx.x * G;
  const int nvalid = min(G, a.images - n0);
  const int n = n0 + i;
  const bool image_valid = i < nvalid;
  const unsigned group_mask = detail::LaneGroupMask(G * L);
  const int c0 = blockIdx.y * a.chunk_jobs;  // first column job of this block

  // ---- Row pass: pair j = q packs frame rows 2j and 2j+1.
  const int j = q;
  const bool row_active = j >= a.pair_begin && j < a.pair_end;
  C x[P];
  if (a.use_stage) {
    detail::ZeroShared(stage, a.stage_elements * static_cast<int>(sizeof(Real)), tid, kThreads);
    __syncthreads();
    LoadStage<Io, Real, G, kThreads>(input, stage, a, n0, nvalid);
    __syncthreads();
    const Real* row_a = stage + a.stage.At(i, 2 * j, 0);
    const Real* row_b = row_a + a.stage.row_stride;
#pragma unroll
    for (int p = 0; p < P; ++p) x[p] = C{row_a[Layout::InputIndex(p, l)], row_b[Layout::InputIndex(p, l)]};
    __syncthreads();  // the stage is overwritten by row_specs below
  } else {
    LoadRowPairFromGlobal<Io, S, L>(input, a, n, image_valid, j, row_active, l, x);
  }
  // Where the image lies in the frame's first kLeading columns (rows), x (the row spectra) are zero
  // past them, as loaded: the pruned transforms take them so.
  constexpr int kLeading = detail::LeadingValues<S, L>();
  if (kLeading < S && a.leading_cols) {
    TransformRowPair<Real, S, L, G, kLeading>(x, row_active, j, i, l, group_mask, a, c0, row_specs);
  } else {
    TransformRowPair<Real, S, L, G, S>(x, row_active, j, i, l, group_mask, a, c0, row_specs);
  }
  __syncthreads();
  if (kLeading < S && a.leading_rows) {
    TransformColumns<Io, S, L, G, kLeading>(row_specs, spectrum, a, q, i, l, n, image_valid, group_mask, c0);
  } else {
    TransformColumns<Io, S, L, G, S>(row_specs, spectrum, a, q, i, l, n, image_valid, group_mask, c0);
  }
}

// The pipelined strategy's copy of piece `part` of group g's pixels (detail::CopyPiece of the copy loop) into a
// buffer's stage, by cp.async, and (piece 0) the zeros around them: the frame columns outside the
// image in each image row, and a stage row outside the image (frame row offset_h - 1 when offset_h is
// odd, offset_h + height when that is odd); only the first a.read_cols columns, those the row pass
// reads.
//   NCHW: 4 bytes per copy (the stage's rows are padded against bank conflicts, so not 16-byte
//         aligned); a warp copies 128 consecutive bytes.
//   NHWC (kPixelMajor): 16 bytes, four channels of a pixel, where the channels and the input allow
//         (a.vector_io); else 4 bytes.
template <bool kPixelMajor, int G, int S, int L, int kThreads>
__device__ __forceinline__ void StageGroupAsync(const float* __restrict__ input, float* stage, const Rfft2dArgs& a,
                                                int g, int part, int tid) {
  const auto at = [&](int i, int r, int c) { return detail::StageAt<kPixelMajor, S, G, L>(a.stage, i, r, c); };
  const int n0 = g * G;
  const int nvalid = min(G, a.images - n0);
  const int hw = a.height * a.width;
  const int top = a.offset_h - a.stage_row0;  // stage row of image row 0: 0 or 1
  if constexpr (!kPixelMajor) {
    // NCHW: the group's images are one contiguous run of nvalid * H * W values.
    const float* src = input + static_cast<size_t>(n0) * hw;
    const detail::CopyPiece piece(nvalid * hw, kThreads, part, config::kForwardPipeline.copy_parts);
    for (int e = piece.begin + tid; e < piece.end; e += kThreads) {
      int i, rem, h, w;
      a.div_hw.DivMod(e, i, rem);
      a.div_w.DivMod(rem, h, w);
      detail::CpAsync<4>(stage + at(i, top + h, a.offset_w + w), src + e, 4);
    }
  } else {
    bool copied = false;
    if constexpr (G % 4 == 0) {
      if (a.vector_io) {
        // Four consecutive images (channels % 4 == 0: they share b) per copy.
        constexpr int kQuads = G / 4;
        const int i = 4 * (tid % kQuads);
        if (i < nvalid) {
          int b, c;
          a.div_channels.DivMod(n0 + i, b, c);
          const float* src = input + static_cast<size_t>(b) * hw * a.channels + c;
          const detail::CopyPiece piece(hw, kThreads / kQuads, part, config::kForwardPipeline.copy_parts);
          const int first = piece.begin + tid / kQuads;
          detail::PixelWalk walk(a.div_w, first, kThreads / kQuads);
          for (int pix = first; pix < piece.end; pix += kThreads / kQuads, walk.Next(a.width)) {
            detail::CpAsync<16>(stage + at(i, top + walk.h, a.offset_w + walk.w),
                                src + static_cast<size_t>(pix) * a.channels, 16);
          }
        }
        copied = true;
      }
    }
    const int i = tid % G;
    if (!copied && i < nvalid) {
      int b, c;
      a.div_channels.DivMod(n0 + i, b, c);
      const float* src = input + static_cast<size_t>(b) * hw * a.channels + c;
      const detail::CopyPiece piece(hw, kThreads / G, part, config::kForwardPipeline.copy_parts);
      const int first = piece.begin + tid / G;
      detail::PixelWalk walk(a.div_w, first, kThreads / G);
      for (int pix = first; pix < piece.end; pix += kThreads / G, walk.Next(a.width)) {
        detail::CpAsync<4>(stage + at(i, top + walk.h, a.offset_w + walk.w),
                           src + static_cast<size_t>(pix) * a.channels, 4);
      }
    }
  }
  if (part != 0) return;
  const int bottom = top + a.height;  // stage row after the image
  if constexpr (kPixelMajor && G % 4 == 0) {
    // Pixel-major: in a stage row the G images of a pixel are G consecutive floats, so the frame
    // columns left of the image are the row's first offset_w * G floats and those right of it the
    // run from (offset_w + width) * G to read_cols * G. Both are zeroed 16 bytes at a time, consecutive
    // threads on consecutive quads (the one-float stores below put a warp's 32 stores G floats apart:
    // an 8-way bank conflict at G = 8). Rows are 16-byte aligned when row_stride % 4 == 0
    // (PixelMajorStage: swizzled, or padded with G * L a multiple of 8: every shape the pipelined strategy takes). A
    // quad k of frame column k / kQuadsPerPixel lies at that column's swizzled place; whole rows are
    // zeroed as they are (the swizzle permutes their first read_cols columns among themselves).
    if (a.stage.row_stride % 4 == 0) {
      using Stage = detail::PixelMajorStage<S, G, L>;
      constexpr int kQuadsPerPixel = G / 4;
      const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
      if (a.width < a.read_cols) {
        const int left_quads = a.offset_w * kQuadsPerPixel;
        const int image_quads = a.width * kQuadsPerPixel;
        for (int e = tid; e < a.height * (a.read_cols - a.width) * kQuadsPerPixel; e += kThreads) {
          int h, k;
          a.div_pad_quads.DivMod(e, h, k);  // image row h, k-th quad outside the image in it
          float4* row = reinterpret_cast<float4*>(stage + (top + h) * a.stage.row_stride);
          const int quad = k < left_quads ? k : k + image_quads;
          row[Stage::Column(top + h, quad / kQuadsPerPixel) * kQuadsPerPixel + quad % kQuadsPerPixel] = zero;
        }
      }
      const int row_quads = a.read_cols * kQuadsPerPixel;
      if (top == 1) {
        for (int e = tid; e < row_quads; e += kThreads) reinterpret_cast<float4*>(stage)[e] = zero;
      }
      if (bottom < a.stage_rows) {
        float4* row = reinterpret_cast<float4*>(stage + bottom * a.stage.row_stride);
        for (int e = tid; e < row_quads; e += kThreads) row[e] = zero;
      }
      return;
    }
  }
  if (a.width < a.read_cols) {
    const int pad_cols = a.read_cols - a.width;
    for (int e = tid; e < G * a.height * pad_cols; e += kThreads) {
      int row, k, i, h;
      a.div_pad_cols.DivMod(e, row, k);
      a.div_h.DivMod(row, i, h);
      const int col = k < a.offset_w ? k : k + a.width;
      stage[at(i, top + h, col)] = 0.f;
    }
  }
  if (top == 1 || bottom < a.stage_rows) {
    const int cols = a.read_cols;
    for (int e = tid; e < G * 2 * cols; e += kThreads) {
      const int i = e / (2 * cols), which = e / cols % 2, col = e % cols;
      const int r = which == 0 ? 0 : bottom;
      if ((which == 0 && top == 1) || (which == 1 && bottom < a.stage_rows)) stage[at(i, r, col)] = 0.f;
    }
  }
}

// The tensor map of the pipelined strategy's tensor copies (TensorCopyStage) is a kernel parameter kept in the
// parameter space (__grid_constant__: the copy reads it there; compute_70+ only, where the body runs).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
#define FFTCONV_GRID_CONSTANT
#else
#define FFTCONV_GRID_CONSTANT __grid_constant__
#endif

// The pipelined strategy: persistent blocks over groups of G images, two buffers (stage, then row spectra). The stage
// is image-major (NCHW), pixel-major (NHWC, kPixelMajor) or, with kTensorCopy (NHWC on sm_90+),
// column-major and filled by one tensor copy of `map` per group; map is unused otherwise.
template <int S, typename Shape, bool kPixelMajor, bool kTensorCopy>
__global__ void __launch_bounds__(Shape::kThreads, (detail::PipelinedMinBlocks<S, Shape>()))
    Rfft2dPipelinedKernel(const float* __restrict__ input, float2* __restrict__ spectrum, const Rfft2dArgs a,
                          const FFTCONV_GRID_CONSTANT CUtensorMap map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  detail::AwaitPrecedingGrids();
  using C = float2;
  constexpr int L = Shape::kLanes, G = Shape::kImagesPerBlock, kThreads = Shape::kThreads;
  using Layout = detail::FftLayout<S, L>;
  using CopyStage = detail::TensorCopyStage<S, G, L>;
  static_assert(!kTensorCopy || (kPixelMajor && CopyStage::kUsable), "tensor copies fill NHWC stages of L = 1");
  constexpr int P = S / L;
  extern __shared__ __align__(128) unsigned char pipelined_smem[];
  // Two buffers of a.buffer_elements floats (then, with kTensorCopy, their two barriers).
  float* const buffers = reinterpret_cast<float*>(pipelined_smem);

  const int tid = threadIdx.x;
  const int i = tid % G;
  const int l = (tid / G) % L;
  const int q = tid / (G * L);
  const unsigned group_mask = detail::LaneGroupMask(G * L);
  const int j = q;
  const bool row_active = j >= a.pair_begin && j < a.pair_end;

  // Transforms group g from its stage in `buffer`; copy_rest() issues the next group's other copy
  // pieces (RunPipelinedGroups; nothing with tensor copies).
  const auto process = [&](float* buffer, int g, auto&& copy_rest) {
    const int n = g * G + i;
    const bool image_valid = n < a.images;
    C* row_specs = reinterpret_cast<C*>(buffer);
    // Row pass over the frame's first kCols columns (the rest zero, not read: the zero fill
    // stops at a.read_cols).
    const auto row_pass = [&](auto cols) {
      constexpr int kCols = decltype(cols)::value;
      C x[P];
      if (row_active) {
        const int r = 2 * j - a.stage_row0;  // stage rows r and r + 1
        if constexpr (kTensorCopy) {
          // Column p of rows r and r + 1 (L = 1), G floats apart; a job of SwapsRows loads row r + 1
          // first and packs it as the real part (32 banks per load; TensorCopyStage).
          const int column_stride = CopyStage::ColumnStride(a.stage_rows);
          const bool swap = CopyStage::SwapsRows(j);
          const float* first = buffer + CopyStage::At(a.stage_rows, i, r + (swap ? 1 : 0), 0);
          const float* second = buffer + CopyStage::At(a.stage_rows, i, r + (swap ? 0 : 1), 0);
#pragma unroll
          for (int p = 0; p < P; ++p) {
            x[p] = p < kCols ? C{first[p * column_stride], second[p * column_stride]} : C{0.f, 0.f};
          }
        } else if constexpr (kPixelMajor) {
          // Lane l's values p sit in column p * L + l (FftLayout::InputIndex), stored at
          // (p ^ m) * L + l (m the rows' swizzle): one pointer per residue p % J, so that every
          // load is a pointer plus a constant (the row stride too, where the stage is swizzled;
          // PixelMajorStage's ReadPointer and ReadStep).
          using Stage = detail::PixelMajorStage<S, G, L>;
          constexpr int J = Stage::kReadPointers;
          const int row_stride = Stage::RowStride(a.stage);
          const int m = Stage::Swizzle(r);
          const float* lane = buffer + Stage::LaneStart(row_stride, r, l, i);
          const float* base[J];
#pragma unroll
          for (int k = 0; k < J; ++k) base[k] = lane + Stage::ReadPointer(k, m);
#pragma unroll
          for (int p = 0; p < P; ++p) {
            const float* at = base[p % J] + Stage::ReadStep(p);
            x[p] = p < kCols / L ? C{at[0], at[row_stride]} : C{0.f, 0.f};
          }
        } else {
          const float* row_a = buffer + a.stage.At(i, r, 0);
          const float* row_b = row_a + a.stage.row_stride;
#pragma unroll
          for (int p = 0; p < P; ++p) {
            x[p] = p < kCols / L ? C{row_a[Layout::InputIndex(p, l)], row_b[Layout::InputIndex(p, l)]}
                                 : C{0.f, 0.f};
          }
        }
      }
      __syncthreads();  // the stage is overwritten by row_specs
      TransformRowPair<float, S, L, G, kCols>(x, row_active, j, i, l, group_mask, a, 0, row_specs);
    };
    constexpr int kLeading = detail::LeadingValues<S, L>();
    if (kLeading < S && a.leading_cols) {
      row_pass(std::integral_constant<int, kLeading>{});
    } else {
      row_pass(std::integral_constant<int, S>{});
    }
    copy_rest();  // the next group's other pieces, between this group's two passes
    __syncthreads();
    if (kLeading < S && a.leading_rows) {
      TransformColumns<float, S, L, G, kLeading, kTensorCopy>(row_specs, spectrum, a, q, i, l, n, image_valid,
                                                              group_mask, 0);
    } else {
      TransformColumns<float, S, L, G, S, kTensorCopy>(row_specs, spectrum, a, q, i, l, n, image_valid, group_mask,
                                                       0);
    }
  };

  if constexpr (kTensorCopy) {
#if __CUDA_ARCH__ >= 900
    unsigned long long* const barriers = reinterpret_cast<unsigned long long*>(buffers + 2 * a.buffer_elements);
    const unsigned copy_bytes = static_cast<unsigned>(sizeof(float) * G * a.stage_rows * a.read_cols);
    detail::RunTensorCopyGroups(
        buffers, a.buffer_elements, barriers, a.groups,
        [&](float* buffer, int g, unsigned long long* barrier) {
          // Group g: channels c .. c + G - 1 of image b (channels % G == 0), the box from frame row
          // stage_row0 and frame column 0, in image coordinates.
          int b, c;
          a.div_channels.DivMod(g * G, b, c);
          detail::BarrierExpectBytes(barrier, copy_bytes);
          detail::TensorCopy4d(buffer, &map, barrier, c, a.stage_row0 - a.offset_h, -a.offset_w, b);
        },
        [&](float* buffer, int g) { process(buffer, g, [] {}); });
#endif
  } else {
    detail::RunPipelinedGroups<config::kForwardPipeline.copy_parts, config::kForwardPipeline.first_alone>(
        buffers, a.buffer_elements, a.groups,
        [&](float* buffer, int g, int part) {
          StageGroupAsync<kPixelMajor, G, S, L, kThreads>(input, buffer, a, g, part, tid);
        },
        process);
  }
#endif
}

// The kernel's arguments for one block shape: its strategy, shared memory, chunks of column jobs.
template <typename Io, int S, typename Shape>
Rfft2dArgs MakeRfft2dArgs(const Rfft2dParams& p, const void* input, int compute_capability, int multiprocessors,
                      size_t max_smem, size_t* smem) {
  using Real = typename detail::Storage<Io>::Compute;
  constexpr int L = Shape::kLanes, G = Shape::kImagesPerBlock;
  constexpr int kHalf = S / 2;
  Rfft2dArgs a;
  a.images = p.batch * p.channels;
  a.channels = p.channels;
  a.height = p.height;
  a.width = p.width;
  a.offset_h = p.offset_h;
  a.offset_w = p.offset_w;
  a.nhwc = p.nhwc;
  a.round_tf32 = p.round_to_tf32 && std::is_same<Io, float>::value && compute_capability >= 80;
  a.pair_begin = p.offset_h / 2;
  a.pair_end = (p.offset_h + p.height + 1) / 2;
  a.div_hw = detail::FastDivmod(p.height * p.width);
  a.div_w = detail::FastDivmod(p.width);
  a.div_channels = detail::FastDivmod(p.channels);
  constexpr int kLeading = detail::LeadingValues<S, L>();
  a.leading_cols = kLeading < S && p.offset_w + p.width <= kLeading;
  a.leading_rows = kLeading < S && p.offset_h + p.height <= kLeading;
  a.read_cols = a.leading_cols ? kLeading : S;
  a.div_h = detail::FastDivmod(p.height);
  a.div_pad_cols = detail::FastDivmod(a.read_cols - p.width);
  a.div_pad_quads = detail::FastDivmod((a.read_cols - p.width) * G / 4);
  a.groups = (a.images + G - 1) / G;
  a.slot_stride = detail::ComplexSlotStride(kHalf, G);
  a.chunk_jobs = kHalf;
  a.vector_io = false;
  a.tensor_copy = false;
  a.stage_row0 = 0;
  a.stage_rows = S;
  a.buffer_elements = 0;
  a.persistent_blocks = 0;
  const size_t slot_bytes = sizeof(complex_t<Real>) * static_cast<size_t>(a.slot_stride);
  const size_t specs_bytes = 2 * kHalf * slot_bytes;

  // The pipelined strategy: two buffers, each the stage of the frame rows that hold pixels or the row spectra.
  if constexpr (std::is_same<Io, float>::value && detail::kPipelinable<S, Shape>) {
    if (compute_capability >= 80) {
      a.stage_row0 = 2 * a.pair_begin;
      a.stage_rows = 2 * (a.pair_end - a.pair_begin);
      if (p.nhwc) {
        a.stage = detail::PixelMajorStage<S, G, L>::Make();
        a.stage_elements = a.stage_rows * a.stage.row_stride;
        a.vector_io = G % 4 == 0 && (reinterpret_cast<uintptr_t>(input) & 15) == 0 && p.channels % 4 == 0 &&
                      a.stage.row_stride % 4 == 0;
      } else {
        a.stage = detail::MakeStageIndex(a.stage_rows, S, G, L);
        a.stage_elements = G * a.stage.image_stride;
      }
      const int specs_elements = static_cast<int>(specs_bytes / sizeof(float));
      // NHWC's stage is pixel-major (its buffers whole 128-byte lines), NCHW's image-major.
      a.buffer_elements = static_cast<int>(
          detail::PipelineBufferBytes(sizeof(float) * std::max(a.stage_elements, specs_elements), p.nhwc) /
          sizeof(float));
      *smem = 2 * sizeof(float) * static_cast<size_t>(a.buffer_elements);
      // Tensor copies: whole groups of one image's channels, the box's rows whole 16-byte units of a
      // 16-byte aligned tensor (the column-major stage is no larger than the pixel-major one, whose
      // layout a launch falls back to: LaunchRfft2dShaped). Two barriers after the buffers.
      a.tensor_copy = p.nhwc && detail::TensorCopyStage<S, G, L>::kUsable &&
                      compute_capability >= 90 && p.channels % G == 0 &&
                      (reinterpret_cast<uintptr_t>(input) & 15) == 0;
      if (a.tensor_copy) *smem += 2 * sizeof(unsigned long long);
      a.persistent_blocks = detail::PipelinedGrid<S, Shape>(a.groups, multiprocessors, max_smem, *smem);
      if (a.persistent_blocks > 0) {
        a.strategy = config::FftStrategy::kPipelined;
        a.use_stage = true;
        return a;
      }
      a.vector_io = false;
      a.tensor_copy = false;
      a.stage_row0 = 0;
      a.stage_rows = S;
    }
  }

  // The staged strategy: frames staged in shared memory, all column jobs in one block (stage and row spectra
  // share the memory).
  a.stage = detail::MakeStageIndex(S, S, G, L);
  a.stage_elements = G * a.stage.image_stride;
  const size_t stage_bytes = sizeof(Real) * static_cast<size_t>(a.stage_elements);
  *smem = stage_bytes > specs_bytes ? stage_bytes : specs_bytes;
  a.strategy = config::FftStrategy::kStaged;
  if (*smem > max_smem) {
    // The direct strategy: rows read from global memory, column jobs in chunks that fit.
    a.strategy = config::FftStrategy::kDirect;
    while (a.chunk_jobs > 1 && 2 * a.chunk_jobs * slot_bytes > max_smem) a.chunk_jobs /= 2;
    *smem = 2 * a.chunk_jobs * slot_bytes;
  }
  a.use_stage = a.strategy != config::FftStrategy::kDirect;
  a.vector_io = detail::UseVectorIo<Io>(input, a.strategy, G, p.nhwc, p.channels);
  return a;
}

template <typename Io, int S, typename Shape>
int LaunchRfft2dShaped(const Rfft2dArgs& a, size_t smem, const Io* input, Io* spectrum, cudaStream_t stream) {
  using Pair = typename detail::Storage<Io>::Pair;
  using Block = detail::BlockShapeOf<S, Shape>;
  constexpr int kHalf = S / 2;
  if constexpr (std::is_same<Io, float>::value && detail::kPipelinable<S, Shape>) {
    if (a.strategy == config::FftStrategy::kPipelined) {
      CUtensorMap map{};
      if constexpr (detail::TensorCopyStage<S, Block::kImagesPerBlock, Block::kLanes>::kUsable) {
        const auto kernel = Rfft2dPipelinedKernel<S, Block, true, true>;
        if (a.tensor_copy && detail::RunsSm90Code(reinterpret_cast<const void*>(kernel))) {
          // NHWC input as a 4-D tensor ordered (channel, row, column, image): the box lands
          // column-major (TensorCopyStage).
          const cuuint64_t c = a.channels, h = a.height, w = a.width;
          const cuuint64_t dims[4] = {c, h, w, a.images / c};
          const cuuint64_t strides[3] = {4 * w * c, 4 * c, 4 * h * w * c};
          const cuuint32_t box[4] = {static_cast<cuuint32_t>(Block::kImagesPerBlock),
                                     static_cast<cuuint32_t>(a.stage_rows), static_cast<cuuint32_t>(a.read_cols), 1};
          if (detail::EncodeTensorMap4d(&map, input, dims, strides, box) == 0) {
            return detail::LaunchWithSharedMemory(kernel, dim3(a.persistent_blocks), Shape::kThreads, smem, stream,
                                                  input, reinterpret_cast<float2*>(spectrum), a, map);
          }
        }
      }
      // Otherwise the pixel-major stage (a's, made alongside), filled by every thread's copies.
      const auto kernel =
          a.nhwc ? Rfft2dPipelinedKernel<S, Block, true, false> : Rfft2dPipelinedKernel<S, Block, false, false>;
      return detail::LaunchWithSharedMemory(kernel, dim3(a.persistent_blocks), Shape::kThreads, smem, stream, input,
                                            reinterpret_cast<float2*>(spectrum), a, map);
    }
  }
  // Chunks of column jobs; the last one may be partial (S / 2 = 3 * 2^(k-1) halves to odd counts).
  const dim3 grid(static_cast<unsigned>(a.groups), static_cast<unsigned>((kHalf + a.chunk_jobs - 1) / a.chunk_jobs));
  return detail::LaunchWithSharedMemory(Rfft2dKernel<Io, S, Block>, grid, Shape::kThreads, smem, stream, input,
                                        reinterpret_cast<Pair*>(spectrum), a);
}

// spectrum: [bins, images] pairs, as Io values (re, im).
template <typename Io, int S>
int LaunchRfft2dSized(const Rfft2dParams& p, const Io* input, Io* spectrum, cudaStream_t stream) {
  using Real = typename detail::Storage<Io>::Compute;
  detail::DeviceLimits limits;
  const int err = detail::CurrentDeviceLimits(&limits);
  if (err != 0) return err;
  return detail::LaunchPreferringLarge<Real, S, false>(
      limits, p.nhwc, p.channels,
      [&](auto tag, size_t max_smem, size_t* smem) {
        return MakeRfft2dArgs<Io, S, typename decltype(tag)::type>(p, input, limits.compute_capability,
                                                                   limits.multiprocessors, max_smem, smem);
      },
      [&](auto tag, const Rfft2dArgs& a, size_t smem) {
        return LaunchRfft2dShaped<Io, S, typename decltype(tag)::type>(a, smem, input, spectrum, stream);
      });
}

template <typename Real>
int LaunchRfft2dOf(const Rfft2dParams& p, const Real* input, Real* spectrum, cudaStream_t stream) {
  const int s = p.fft_size;
  const long long images = static_cast<long long>(p.batch) * p.channels;
  if (images <= 0) return 0;
  if (p.height <= 0 || p.width <= 0) {
    // An empty image is an all-zero frame: its spectrum is zero.
    return static_cast<int>(cudaMemsetAsync(
        spectrum, 0, static_cast<size_t>(NumBins(s) * images) * 2 * sizeof(Real), stream));
  }
  return detail::DispatchFftSize(s, [&](auto size) {
    return LaunchRfft2dSized<Real, decltype(size)::value>(p, input, spectrum, stream);
  });
}

}  // namespace

template <typename Real>
int LaunchRfft2d(const Rfft2dParams& p, const Real* input, Real* spectrum, cudaStream_t stream) {
  using Device = typename DeviceType<Real>::type;
  return LaunchRfft2dOf<Device>(p, reinterpret_cast<const Device*>(input),
                                reinterpret_cast<Device*>(spectrum), stream);
}

#define FFTCONV_INSTANTIATE(Real) \
  template int LaunchRfft2d<Real>(const Rfft2dParams&, const Real*, Real*, cudaStream_t);
FFTCONV_FOR_EACH_LAUNCHER_TYPE(FFTCONV_INSTANTIATE)
#undef FFTCONV_INSTANTIATE

}  // namespace cuda
}  // namespace fftconv
