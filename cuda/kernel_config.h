// The tuning choices of the CUDA kernels, in one place: named configurations, no packed codes. What
// each choice gained, and what lost against it, is in docs/performance.md; the losing alternatives
// are in git's history, not here.
//
// FFT block configurations, one row per frame size S with each direction's configurations: the
// ordinary one, which every device takes, and, for float, the ones for devices with large shared
// memory (227 KB per block, H100 / H200) in NCHW and NHWC where they differ (double has one table,
// the same in both directions). A configuration is
//   lanes      : L, lanes of a warp per length-S transform (a power of two; G * L <= 32 when L > 1)
//   images     : G, images per block (a power of two)
//   min_blocks : blocks per SM promised to the compiler (__launch_bounds__: the register budget)
// and a block has G * L * S / 2 threads (detail::BlockShape in cuda/fft_stages.cuh).
// The launchers take a large configuration where its staged strategy fits the device and, for an
// NHWC tensor, the channels come in whole blocks of its G (detail::LaunchWithShapes), unless the
// ordinary configuration runs the pipelined strategy.
#ifndef TF_FFTCONV_CUDA_KERNEL_CONFIG_H_
#define TF_FFTCONV_CUDA_KERNEL_CONFIG_H_

#include <type_traits>

namespace fftconv {
namespace cuda {
namespace config {

struct FftBlockConfig {
  int lanes = 0, images = 0, min_blocks = 0;  // all 0: not given (a large one: the ordinary one)
  constexpr bool Given() const { return lanes != 0; }
};

// One direction's configurations of a frame size.
struct DirectionConfig {
  FftBlockConfig ordinary;
  FftBlockConfig large_nchw = {}, large_nhwc = {};
};

struct FrameConfig {
  int fft_size;
  DirectionConfig forward, inverse;
};

// float. The 16-48 frames' were the fastest of the shapes timed on the H200; the 48 frame's forward,
// two lanes and 4 images, runs its pipelined strategy at two blocks per SM. Large:
//   - the inverse in NHWC at S = 16 and 32: one lane and 32 images, a 128-byte line per output
//     pixel (with 8 images the L2 took a write request of one sector per 32 bytes, 1.5x the NCHW
//     inverse's time);
//   - the 40 frame: the forward with two lanes and 16 images (Mathieu's x 0.121 -> 0.086 ms), the
//     inverse with one lane and 32 images in both layouts (NHWC y 0.326 -> 0.213 ms, NCHW
//     0.226 -> 0.177 ms; 205 KB of shared memory);
//   - the 64 frame's NCHW inverse: two lanes and 4 images, two blocks per SM (56 x 56 images
//     0.092 -> 0.083 ms); in NHWC that shape was slower (16-byte runs of 4 channels per pixel).
constexpr FrameConfig kFloat[] = {
    // S   forward: ordinary, large NCHW, large NHWC    inverse: ordinary, large NCHW, large NHWC
    {2, {{1, 128, 4}}, {{1, 128, 4}}},
    {4, {{1, 64, 4}}, {{1, 64, 4}}},
    {6, {{1, 32, 4}}, {{1, 32, 4}}},
    {8, {{1, 32, 4}}, {{1, 32, 4}}},
    {10, {{1, 32, 4}}, {{1, 32, 4}}},
    {12, {{1, 16, 4}}, {{1, 16, 4}}},
    {16, {{1, 16, 4}}, {{1, 16, 4}, {}, {1, 32, 2}}},
    {20, {{1, 16, 4}}, {{1, 16, 4}}},
    {24, {{1, 8, 4}}, {{1, 8, 4}}},
    {32, {{1, 8, 4}}, {{1, 8, 4}, {}, {1, 32, 1}}},
    {40, {{4, 8, 1}, {2, 16, 1}, {2, 16, 1}}, {{4, 8, 1}, {1, 32, 1}, {1, 32, 1}}},
    {48, {{2, 4, 2}}, {{4, 8, 1}}},
    {64, {{4, 8, 1}}, {{4, 8, 1}, {2, 4, 2}}},
    {80, {{4, 2, 1}}, {{4, 2, 1}}},
    {96, {{4, 2, 1}}, {{4, 2, 1}}},
    {128, {{4, 2, 1}}, {{4, 2, 1}}},
};

// double, the same in both directions and on every device (twice the registers and shared memory
// per value: more lanes, fewer images).
struct SizeConfig {
  int fft_size;
  FftBlockConfig both;
};
constexpr SizeConfig kDouble[] = {
    {2, {1, 128, 4}}, {4, {1, 64, 4}}, {6, {1, 32, 4}}, {8, {1, 32, 4}},  {10, {1, 32, 4}}, {12, {1, 16, 4}},
    {16, {1, 16, 4}}, {20, {2, 8, 2}}, {24, {2, 8, 2}}, {32, {2, 8, 2}},  {40, {4, 4, 1}},  {48, {4, 4, 1}},
    {64, {4, 4, 1}},  {80, {8, 1, 1}}, {96, {8, 1, 1}}, {128, {8, 1, 1}},
};

// The configurations of a frame size and direction; none given (lanes 0) for a size that is not an
// FFT size.
template <typename Real>
constexpr DirectionConfig FindDirection(int fft_size, bool inverse) {
  if (std::is_same<Real, double>::value) {
    for (const SizeConfig& row : kDouble) {
      if (row.fft_size == fft_size) return DirectionConfig{row.both};
    }
  } else {
    for (const FrameConfig& row : kFloat) {
      if (row.fft_size == fft_size) return inverse ? row.inverse : row.forward;
    }
  }
  return DirectionConfig{};
}

// How a forward or inverse transform runs its groups of G images, chosen per launch by the launcher
// (MakeRfft2dArgs, MakeIrfft2dArgs) in this order of preference:
//   kPipelined : persistent blocks loop over the groups with two shared-memory buffers, the next
//                group's data copied in (cp.async, or on sm_90+ a tensor copy) while this one is
//                transformed; float on sm_80+, shapes that keep two blocks per SM
//                (detail::kPipelinable), where both buffers fit and there are more groups than blocks;
//   kStaged    : one block per group, its frames (forward) or window (inverse) staged in shared memory;
//   kDirect    : where the stage does not fit the device's shared memory: rows read from (forward) or
//                written to (inverse) global memory, the column jobs (window rows) in chunks, one per
//                blockIdx.y.
// One byte, as it sits among the kernels' byte flags in their arguments.
enum class FftStrategy : unsigned char { kDirect, kStaged, kPipelined };

// The pipelined strategy's copies (detail::RunPipelinedGroups), per direction:
//   copy_parts  : pieces in which a group's copies are issued: 1, all before the group before it
//                 is processed; 2, half there and half between that group's passes (the inverse
//                 gained; the forward lost more in instruction fetches of the twice-inlined copy
//                 loop than it saved);
//   first_alone : a persistent block waits for its first group's copies before it issues the
//                 second group's (the inverses gained 2-8%; the forward did not).
struct PipelineConfig {
  int copy_parts;
  bool first_alone;
};
constexpr PipelineConfig kForwardPipeline{1, false};
constexpr PipelineConfig kInversePipeline{2, true};

// Scalar loads in flight per thread in the forward's staged copy (32 timed within noise).
constexpr int kStageLoadsInFlight = 16;

// The tensor-core products (spectral_matmul.cu): complex k per stage of the TF32 kernel, and
// pipeline stages (tiles in flight) of both tensor-core kernels (32 complex k in two stages took
// the weight gradient 12% longer).
constexpr int kTf32StageK = 16;
constexpr int kTensorCoreStages = 3;

}  // namespace config
}  // namespace cuda
}  // namespace fftconv

#endif  // TF_FFTCONV_CUDA_KERNEL_CONFIG_H_
