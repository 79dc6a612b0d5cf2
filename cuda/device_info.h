// Properties of the current CUDA device that the launchers need, queried once per device and cached.
#ifndef TF_FFTCONV_CUDA_DEVICE_INFO_H_
#define TF_FFTCONV_CUDA_DEVICE_INFO_H_

#include <cuda.h>  // CUtensorMap

namespace fftconv {
namespace cuda {
namespace detail {

struct DeviceLimits {
  int compute_capability;     // 10 * major + minor, e.g. 90 for sm_90
  int max_shared_per_block;   // opt-in dynamic shared memory limit per block, bytes
  int multiprocessors;        // SMs, which size the grids of persistent kernels
  int device;                 // the device these are of (cudaGetDevice)
};

// Fills `limits` for the calling thread's current device; returns a cudaError_t code (0 on success).
int CurrentDeviceLimits(DeviceLimits* limits);

// Caps the shared memory the launchers count on (bytes; 0 restores the device limit). Lets tests run
// the strategies meant for devices with less shared memory (48 KiB on sm_60, 64 KiB on sm_75).
void SetSharedMemoryCapForTesting(int bytes);

// Caps the compute capability the launchers see (e.g. 75; 0 restores the device's), so that tests on
// a new GPU run the paths chosen for older ones (the half-precision matmul without tensor cores).
void SetComputeCapabilityCapForTesting(int compute_capability);

// Caps the blocks of a persistent kernel's grid (0: as many as are resident at once), so that tests
// with few images still make each block loop over several groups of them, as large inputs do.
void SetPersistentBlocksCapForTesting(int blocks);
int PersistentBlocksCap();

// Whether `kernel` may be launched on the current device as a programmatic dependent of the work
// before it on its stream: the device is sm_90 or later (capped as above), and the code that runs
// there was compiled for sm_90 or later (the function's PTX version, asked once per device and
// kernel), so that it executes AwaitPrecedingGrids' wait. PTX of an older target, compiled for the
// device when it is loaded, has no such wait, and its launches stay plain ones.
bool DependentLaunchAllowed(const void* kernel);

// Turns dependent launches off (false) or back on, so that tests and timings compare both in one
// process.
void SetDependentLaunchForTesting(bool enabled);

// Whether the current device is sm_90 or later (capped as above) and runs `kernel` from code compiled
// for sm_90 or later (as for DependentLaunchAllowed): where its sm_90 instructions exist, so that it
// may take tensor copies (the tensor memory accelerator).
bool RunsSm90Code(const void* kernel);

// Describes a 4-D float tensor for tensor copies (cuTensorMapEncodeTiled, found through the runtime
// once per process): dims innermost first, strides in bytes of dims 1..3 (multiples of 16, any
// order), a box of `box` elements per dimension, zeros outside the tensor. Returns 0, or nonzero
// where the driver has no such function or refuses the description (the launcher then copies
// without it).
int EncodeTensorMap4d(CUtensorMap* map, const void* base, const cuuint64_t dims[4],
                      const cuuint64_t strides[3], const cuuint32_t box[4]);

}  // namespace detail
}  // namespace cuda
}  // namespace fftconv

#endif  // TF_FFTCONV_CUDA_DEVICE_INFO_H_
