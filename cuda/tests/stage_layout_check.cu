// Host-side check of the forward transforms' pixel-major (NHWC) stage, PixelMajorStage in
// cuda/fft_stages.cuh, for every forward block shape (FftShape, and LargeShape for NHWC) of every
// frame size: no GPU needed, so it runs where the tests run (tests/test_stage_layout.py, through
// `make stage-layout-check`). For each shape it checks:
//   - each stage row's columns are a permutation of the frame's S columns that keeps the first
//     LeadingValues (the pruned row pass) and each lane's columns (c mod L) in place;
//   - the row pass's pointer arithmetic (ReadPointer, ReadStep) finds every value where StageAt puts
//     it, in both rows of a pair;
//   - a warp's row-pass loads (G images x L lanes x the row jobs of a warp) hit 32 distinct banks for
//     every value p, whatever frame row pair the warp starts at;
//   - swizzled stages keep rows 128-byte aligned, and a pixel's four-channel quads (G a multiple of
//     4: the 16-byte copies) stay together and 16-byte aligned.
// For the shapes whose stage a tensor copy fills (TensorCopyStage: one lane per transform), that a
// warp's two row-pass loads of a column read each job's two rows and hit 32 distinct banks each.
// And for every inverse block shape, the inverse's pixel-major NHWC stage (InverseStageAt,
// MakePixelMajorInverseStage): each warp's row-pass stores, for every output register, on 32
// distinct banks; quads 16-byte aligned where the rows allow the 16-byte loads. And the NHWC copy
// loops' PixelWalk against division, for widths 1..130 and the loops' steps; and the pipelined
// strategy's copy pieces (CopyPiece): each thread's indices over the pieces are its indices of the whole loop.
// Prints one line per shape and a SUMMARY; exits 1 on any failure.
#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>
#include <vector>

#include "cuda/fft_stages.cuh"

namespace {

using namespace fftconv::cuda::detail;  // the layouts under test

int failures = 0, checked = 0;

#define EXPECT(cond, ...)                       \
  do {                                          \
    if (!(cond)) {                              \
      if (++failures <= 20) {                   \
        std::printf("FAIL S=%d G=%d L=%d: ", S, G, L); \
        std::printf(__VA_ARGS__);               \
        std::printf("\n");                      \
      }                                         \
    }                                           \
  } while (0)

// The column-major stage of tensor copies (TensorCopyStage), for shapes that take it: a warp's two
// row-pass loads of each column p (its jobs' first loads, then their second loads; jobs of
// SwapsRows load their pair's second row first) each hit 32 distinct banks, for every first pair
// of the stage (pair_begin) and every warp, and together read each job's two rows.
template <int S, typename Shape>
void CheckTensorCopyStage(const char* which) {
  constexpr int G = Shape::kImagesPerBlock, L = Shape::kLanes;
  using Stage = TensorCopyStage<S, G, L>;
  if constexpr (Stage::kUsable) {
    for (int pair_begin = 0; pair_begin < S / 2; ++pair_begin) {
      const int stage_rows = S - 2 * pair_begin;  // the pairs from pair_begin to the frame's end
      for (int warp = 0; warp < Shape::kThreads / 32; ++warp) {
        for (int p = 0; p < S; p += S / 4 > 1 ? S / 4 - 1 : 1) {  // columns at a few places
          std::set<int> banks_first, banks_second;
          int active = 0;
          for (int lane = 0; lane < 32; ++lane) {
            const int t = 32 * warp + lane, i = t % G, j = t / G;
            if (j < pair_begin || j >= S / 2) continue;
            ++active;
            const int r = 2 * (j - pair_begin);
            const bool swap = Stage::SwapsRows(j);
            const int first = Stage::At(stage_rows, i, r + (swap ? 1 : 0), p);
            const int second = Stage::At(stage_rows, i, r + (swap ? 0 : 1), p);
            EXPECT(first != second && std::min(first, second) == Stage::At(stage_rows, i, r, p) &&
                       std::max(first, second) == Stage::At(stage_rows, i, r + 1, p),
                   "pair %d image %d column %d: the loads miss the pair's rows", j, i, p);
            banks_first.insert(first % 32);
            banks_second.insert(second % 32);
          }
          EXPECT(static_cast<int>(banks_first.size()) == active && static_cast<int>(banks_second.size()) == active,
                 "pair_begin %d warp %d column %d: %zu and %zu distinct banks for %d lanes", pair_begin, warp, p,
                 banks_first.size(), banks_second.size(), active);
        }
      }
    }
    ++checked;
    std::printf("S=%-3d G=%-3d L=%d %-8s tensor-copy column-major stage, %d pairs per 128-byte line\n", S, G, L, which,
                Stage::kPairsPerLine);
  }
}

template <int S, typename Shape>
void CheckShape(const char* which) {
  constexpr int G = Shape::kImagesPerBlock, L = Shape::kLanes;
  {
    using Stage = PixelMajorStage<S, G, L>;
    const StageIndex s = Stage::Make();
    constexpr int P = S / L;
    constexpr int J = Stage::kReadPointers;
    constexpr int kLeading = LeadingValues<S, L>();
    const int rows = 2 * Stage::kJobsPerWarp + 4;
    // Columns: a permutation per row, the leading ones and the lanes kept.
    for (int r = 0; r < rows; ++r) {
      std::set<int> seen;
      for (int c = 0; c < S; ++c) {
        const int to = Stage::Column(r, c);
        seen.insert(to);
        EXPECT(to >= 0 && to < S, "row %d column %d stored at column %d, outside the frame", r, c, to);
        EXPECT(to % L == c % L, "row %d column %d moved to another lane (%d)", r, c, to);
        if (c < kLeading) {
          EXPECT(to < kLeading, "row %d leading column %d stored past the leading ones (%d)", r, c, to);
        }
      }
      EXPECT(static_cast<int>(seen.size()) == S, "row %d: columns not a permutation", r);
    }
    // The row pass's pointers against StageAt, and the banks of a warp's loads.
    for (int row0 = 0; row0 < 2 * Stage::kJobsPerWarp; row0 += 2) {  // stage row of the warp's first job
      for (int p = 0; p < P; ++p) {
        std::set<int> banks_a, banks_b;
        for (int lane = 0; lane < 32; ++lane) {
          const int i = lane % G, l = (lane / G) % L, job = lane / (G * L);
          const int r = row0 + 2 * job;  // stage rows r, r + 1 of the job's pair
          const int at_a = StageAt<true, S, G, L>(s, i, r, p * L + l);
          const int at_b = StageAt<true, S, G, L>(s, i, r + 1, p * L + l);
          const int row_stride = Stage::RowStride(s);
          const int lane_start = Stage::LaneStart(row_stride, r, l, i);
          const int pointer = lane_start + Stage::ReadPointer(p % J, Stage::Swizzle(r));
          EXPECT(pointer + Stage::ReadStep(p) == at_a, "row %d value %d lane %d image %d: the pointers find %d, StageAt %d",
                 r, p, l, i, pointer + Stage::ReadStep(p), at_a);
          EXPECT(pointer + Stage::ReadStep(p) + row_stride == at_b, "row %d value %d lane %d image %d: the pair's second row",
                 r + 1, p, l, i);
          banks_a.insert(at_a % 32);
          banks_b.insert(at_b % 32);
        }
        EXPECT(banks_a.size() == 32 && banks_b.size() == 32,
               "warp from stage row %d, value %d: %zu and %zu distinct banks of 32", row0, p, banks_a.size(),
               banks_b.size());
      }
    }
    if (Stage::kSwizzled) {
      EXPECT(s.row_stride * 4 % 128 == 0, "swizzled rows of %d floats are not 128-byte aligned", s.row_stride);
    }
    // A pixel's quads (four channels, one 16-byte copy) stay together and aligned.
    for (int r = 0; r < rows && G % 4 == 0; ++r) {
      for (int c = 0; c < S; ++c) {
        for (int i = 0; i + 3 < G; i += 4) {
          const int at = StageAt<true, S, G, L>(s, i, r, c);
          const int last = StageAt<true, S, G, L>(s, i + 3, r, c);
          EXPECT(at % 4 == 0, "row %d column %d images %d..%d: quad not 16-byte aligned (%d)", r, c, i, i + 3, at);
          EXPECT(last == at + 3, "row %d column %d: a quad split", r, c);
        }
      }
    }
    ++checked;
    std::printf("S=%-3d G=%-3d L=%d %-8s %s, row stride %d\n", S, G, L, which,
                Stage::kSwizzled ? "swizzled" : "padded", s.row_stride);
  }
  CheckTensorCopyStage<S, Shape>(which);
}

// The inverse's pixel-major stage, in the shapes that take the pipelined strategy (kPipelinable): thread t of the
// block is image t % G, lane (t / G) % L, row job q = t / (G L) storing window rows 2q and 2q + 1
// (Irfft2dPipelinedKernel's StageRowPair).
template <int S, typename Shape>
void CheckInverseShape(const char* which) {
  constexpr int G = Shape::kImagesPerBlock, L = Shape::kLanes, P = S / L;
  if constexpr (!fftconv::cuda::detail::kPipelinable<S, Shape>) return;
  const StageIndex s = MakePixelMajorInverseStage(S, G, L);
  for (int warp = 0; warp < Shape::kThreads / 32; ++warp) {
    for (int r = 0; r < P; ++r) {
      std::set<int> banks;
      for (int lane = 0; lane < 32; ++lane) {
        const int t = 32 * warp + lane, i = t % G, l = (t / G) % L, q = t / (G * L);
        banks.insert(InverseStageAt<true, G>(s, i, 2 * q, FftLayout<S, L>::OutputIndex(r, l)) % 32);
      }
      EXPECT(banks.size() == 32, "inverse stage, warp %d, register %d: %zu distinct banks of 32", warp, r,
             banks.size());
    }
  }
  if (G % 4 == 0 && s.row_stride % 4 == 0) {
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < S; ++c) {
        for (int i = 0; i < G; i += 4) {
          const int at = InverseStageAt<true, G>(s, i, r, c);
          EXPECT(at % 4 == 0, "inverse stage row %d column %d image %d: quad not 16-byte aligned", r, c, i);
        }
      }
    }
  }
  ++checked;
  std::printf("S=%-3d G=%-3d L=%d %-8s inverse pixel-major, row stride %d%s\n", S, G, L, which, s.row_stride,
              G % 4 == 0 && s.row_stride % 4 == 0 ? ", 16-byte quads" : "");
}

template <int S>
void CheckSize() {
  CheckShape<S, FftShape<float, S, false>>("ordinary");
  CheckShape<S, LargeShape<float, S, false, true>>("large");
  CheckInverseShape<S, FftShape<float, S, true>>("ordinary");
  CheckInverseShape<S, LargeShape<float, S, true, true>>("large");
}

// PixelWalk from `first` by `step` against division, over a group's pixels of images `width` wide.
void CheckPixelWalk() {
  constexpr int S = 0, G = 0, L = 0;  // for EXPECT's message
  int walks = 0;
  for (int width = 1; width <= 130; ++width) {
    const FastDivmod div_width(width);
    for (const int step : {1, 2, 4, 8, 16, 32, 64, 128, 3, 48, 96}) {
      for (int first = 0; first < step; ++first) {
        PixelWalk walk(div_width, first, step);
        for (int pix = first; pix < 130 * width; pix += step, walk.Next(width)) {
          EXPECT(walk.h == pix / width && walk.w == pix % width, "width %d step %d pixel %d: walked to (%d, %d)", width,
                 step, pix, walk.h, walk.w);
        }
        ++walks;
      }
    }
  }
  std::printf("PixelWalk: %d walks checked against division\n", walks);
}

// CopyPiece: for 1..4 pieces, loop totals 0..600 and the copy loops' steps, the indices each
// thread (first < step) visits piece by piece are those of the whole loop, in the same order.
void CheckCopyPieces() {
  constexpr int S = 0, G = 0, L = 0;  // for EXPECT's message
  int loops = 0;
  for (int parts = 1; parts <= 4; ++parts) {
    for (int total = 0; total <= 600; ++total) {
      for (const int step : {1, 2, 4, 8, 16, 32, 64, 128, 3, 48, 96}) {
        for (int first = 0; first < step; ++first) {
          int expected = first;  // the whole loop's next index
          for (int part = 0; part < parts; ++part) {
            const CopyPiece piece(total, step, part, parts);
            EXPECT(piece.begin % step == 0 || piece.begin == total, "parts %d total %d step %d: piece %d begins at %d",
                   parts, total, step, part, piece.begin);
            for (int e = piece.begin + first; e < piece.end; e += step) {
              EXPECT(e == expected, "parts %d total %d step %d first %d: piece %d visits %d, expected %d", parts,
                     total, step, first, part, e, expected);
              expected = e + step;
            }
          }
          EXPECT(expected >= total, "parts %d total %d step %d first %d: stopped before %d", parts, total, step, first,
                 expected);
          ++loops;
        }
      }
    }
  }
  std::printf("CopyPiece: %d copy loops checked against the whole loop\n", loops);
}

}  // namespace

int main() {
  CheckSize<2>();
  CheckSize<4>();
  CheckSize<6>();
  CheckSize<8>();
  CheckSize<10>();
  CheckSize<12>();
  CheckSize<16>();
  CheckSize<20>();
  CheckSize<24>();
  CheckSize<32>();
  CheckSize<40>();
  CheckSize<48>();
  CheckSize<64>();
  CheckSize<80>();
  CheckSize<96>();
  CheckSize<128>();
  CheckPixelWalk();
  CheckCopyPieces();
  std::printf("SUMMARY: %d shapes checked, %d failures\n", checked, failures);
  return failures == 0 && checked > 0 ? 0 : 1;
}
