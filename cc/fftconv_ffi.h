// The XLA side of the three ops at run time: each op's XLA lowering (cc/xla_lowering.cc) emits a
// typed-FFI custom call, and XLA runs it through the handlers registered here under one target name
// per op, on the "Host" platform (cc/xla_lowering.cc, the CPU kernels) and on "CUDA" (cc/ops_gpu.cc,
// the cuda/ launchers on XLA's stream). Only the header-only FFI API is used, so no XLA internals.
//
// Also the registration guard of the whole library: a second copy of it loaded into the same
// process (from another path) must register nothing, since duplicate TensorFlow kernels make every
// later call ambiguous and duplicate XLA registrations are fatal.
#ifndef TF_FFTCONV_CC_FFTCONV_FFI_H_
#define TF_FFTCONV_CC_FFTCONV_FFI_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "cc/fftconv_cpu.h"
#include "xla/ffi/api/ffi.h"

namespace fftconv {

namespace ffi = ::xla::ffi;

// Custom-call targets, the same on every platform.
inline constexpr char kRfft2dTarget[] = "tf_fftconv_rfft2d";
inline constexpr char kIrfft2dTarget[] = "tf_fftconv_irfft2d";
inline constexpr char kSpectralMatmulTarget[] = "tf_fftconv_spectral_matmul";

// True in the first copy of the library that a process loads, false in any later copy. The XLA FFI
// registry is process-wide (it lives in libtensorflow_framework), so the first copy claims a marker
// name in it and a later copy finds the name taken. Hidden visibility keeps the function's static
// inside each copy (a default-visibility inline static would be one object shared by all copies).
// The marker's handler is never called, but must answer XLA's version query as any handler does.
// (A handler without arguments leaves a variable of the FFI header's decoder unused.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
[[gnu::visibility("hidden")]] inline XLA_FFI_Error* LibraryMarker(XLA_FFI_CallFrame* call_frame) {
  static auto* handler = ffi::Ffi::Bind().To([] { return ffi::Error::Success(); }).release();
  return handler->Call(call_frame);
}
#pragma GCC diagnostic pop

[[gnu::visibility("hidden")]] inline bool FirstCopyInProcess() {
  static const bool first = [] {
    XLA_FFI_Error* error = ffi::Ffi::RegisterStaticHandler(
        XLA_FFI_GetApi(), "tf_fftconv_op_library", "Host", LibraryMarker);
    if (error == nullptr) return true;
    XLA_FFI_Error_Destroy_Args args;
    args.struct_size = XLA_FFI_Error_Destroy_Args_STRUCT_SIZE;
    args.extension_start = nullptr;
    args.error = error;
    XLA_FFI_GetApi()->XLA_FFI_Error_Destroy(&args);
    std::fprintf(stderr,
                 "tf_fftconv: another copy of the op library is already loaded in this process; "
                 "this copy registers no kernels, and the ops run the first copy's\n");
    return false;
  }();
  return first;
}

// The traits of a handler on `platform`. The CUDA handlers only validate on the host and launch
// kernels (and memsets) on the stream they are given: no allocation, no synchronisation, no
// host-device copies. So XLA may record them into its command buffers (CUDA graphs) with the
// fusions around them, and a compiled step launches as one graph instead of being cut at every
// custom call. TF_FFTCONV_XLA_COMMAND_BUFFERS=0, read when the library loads, keeps them out.
inline XLA_FFI_Handler_Traits HandlerTraits(const char* platform) {
  if (std::string(platform) != "CUDA") return 0;
  const char* setting = std::getenv("TF_FFTCONV_XLA_COMMAND_BUFFERS");
  if (setting != nullptr && std::string(setting) == "0") return 0;
  return XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE;
}

// XLA_FFI_REGISTER_HANDLER behind the guard above; true where the handler was registered.
inline bool RegisterFfiHandler(const char* target, const char* platform, XLA_FFI_Handler* handler) {
  return FirstCopyInProcess() &&
         ffi::Ffi::RegisterStaticHandler(XLA_FFI_GetApi(), target, platform, handler,
                                         HandlerTraits(platform)) == nullptr;
}

// A validation or launch status as the FFI error XLA raises: InvalidArgument stays
// InvalidArgument (TensorFlow reports it as InvalidArgumentError with the same message).
inline ffi::Error FfiError(const absl::Status& status) {
  if (status.ok()) return ffi::Error::Success();
  const std::string message(status.message());
  return status.code() == absl::StatusCode::kInvalidArgument
             ? ffi::Error::InvalidArgument(message)
             : ffi::Error::Internal(message);
}

// float16 and bfloat16 buffers hold half-precision spectra ([.., 2] pairs) or images.
inline bool IsHalfFfiType(ffi::DataType type) {
  return type == ffi::DataType::F16 || type == ffi::DataType::BF16;
}

// What a buffer holds: images of a real type Real, or spectra of SpectrumElement<Real>.
enum class BufferContents { kImages, kSpectra };

// The element type of a Real's image and spectrum buffers: a half-precision spectrum holds (re, im)
// pairs of its own type.
template <typename Real>
constexpr ffi::DataType FfiElementType(BufferContents contents) {
  const bool images = contents == BufferContents::kImages;
  using T = ffi::DataType;
  if constexpr (std::is_same<Real, float>::value) return images ? T::F32 : T::C64;
  if constexpr (std::is_same<Real, double>::value) return images ? T::F64 : T::C128;
  if constexpr (std::is_same<Real, Eigen::half>::value) return ffi::DataType::F16;
  if constexpr (std::is_same<Real, Eigen::bfloat16>::value) return ffi::DataType::BF16;
}

// The binding of a custom call's handler on Device's platform: the platform's context first (XLA's
// thread pool on the host, its stream on CUDA), then kOperands operand buffers (1 or 2) and the
// result buffer; then BindInt64Attrs' attributes by name, in the order the handler takes them.
// (Bindings move only inside their own chain: each step here returns the next one's result.)
template <typename Device, int kOperands>
auto BindCall() {
  static_assert(kOperands == 1 || kOperands == 2, "one or two operands");
  if constexpr (kOperands == 1) {
    return ffi::Ffi::Bind()
        .Ctx<typename Device::FfiContextBinding>()
        .template Arg<ffi::AnyBuffer>()
        .template Ret<ffi::AnyBuffer>();
  } else {
    return ffi::Ffi::Bind()
        .Ctx<typename Device::FfiContextBinding>()
        .template Arg<ffi::AnyBuffer>()
        .template Arg<ffi::AnyBuffer>()
        .template Ret<ffi::AnyBuffer>();
  }
}
template <typename Binding, typename... Names>
auto BindInt64Attrs(Binding&& binding, const char* name, Names... names) {
  if constexpr (sizeof...(Names) == 0) {
    return std::move(binding).template Attr<int64_t>(name);
  } else {
    return BindInt64Attrs(std::move(binding).template Attr<int64_t>(name), names...);
  }
}

// The XLA handler that kMakeHandler (a function returning a bound handler, BindCall ... .To(call))
// makes once, when it is first called.
template <auto kMakeHandler>
XLA_FFI_Error* FfiHandler(XLA_FFI_CallFrame* call_frame) {
  static auto* handler = kMakeHandler().release();
  return handler->Call(call_frame);
}

// What every handler does once its call's parameters are made (params_status): an error for bad
// parameters, nothing for an empty result, else run(TypeTag<Real>()) for the Real whose `contents`
// buffers have the element type `type`, and InvalidArgument `refusal` for any other type.
template <typename Run>
ffi::Error RunFfiCall(const absl::Status& params_status, const ffi::AnyBuffer& result,
                      ffi::DataType type, BufferContents contents, const char* refusal, Run&& run) {
  if (!params_status.ok()) return FfiError(params_status);
  if (result.element_count() == 0) return ffi::Error::Success();
  return DispatchRealType(
      type, [contents](auto real) { return FfiElementType<typename decltype(real)::type>(contents); },
      [&run](auto real) { return FfiError(run(real)); },
      [refusal] { return ffi::Error::InvalidArgument(refusal); });
}

// The buffer's dimensions as int64, for the shared validation; false if its rank is not `rank`.
inline bool BufferDims(const ffi::AnyBuffer& buffer, int rank, int64_t* dims) {
  const auto buffer_dims = buffer.dimensions();
  if (static_cast<int>(buffer_dims.size()) != rank) return false;
  for (int i = 0; i < rank; ++i) dims[i] = buffer_dims[i];
  return true;
}

// A ParallelRunner over XLA's intra-op thread pool. The calling thread takes part and waits only
// for blocks that were claimed, so a busy pool (or a caller that is itself one of the pool's
// threads) cannot stall the call: blocks no worker picked up are run by the caller. Workers hold
// the shared state, never the caller's stack, once all blocks are claimed.
inline ParallelRunner FfiParallelRunner(ffi::ThreadPool& pool) {
  return [&pool](int64_t units, int64_t cost_per_unit,
                 const std::function<void(int64_t, int64_t)>& work) {
    if (units <= 0) return;
    const int64_t threads = std::max<int64_t>(1, pool.num_threads());
    // Blocks of at least ~64k instructions (below that a task costs more than it saves), up to
    // four per thread for balance.
    const int64_t min_units = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, cost_per_unit));
    const int64_t blocks = std::min<int64_t>(threads * 4, (units + min_units - 1) / min_units);
    if (threads == 1 || blocks <= 1) {
      work(0, units);
      return;
    }
    struct State {
      std::atomic<int64_t> next{0};
      int64_t finished = 0;
      std::mutex mutex;
      std::condition_variable all_finished;
    };
    auto state = std::make_shared<State>();
    const std::function<void(int64_t, int64_t)>* work_ptr = &work;
    auto run_blocks = [state, units, blocks, work_ptr] {
      for (int64_t block; (block = state->next.fetch_add(1)) < blocks;) {
        (*work_ptr)(block * units / blocks, (block + 1) * units / blocks);
        std::lock_guard<std::mutex> lock(state->mutex);
        if (++state->finished == blocks) state->all_finished.notify_all();
      }
    };
    for (int64_t i = 1; i < std::min(threads, blocks); ++i) pool.Schedule([run_blocks] { run_blocks(); });
    run_blocks();
    std::unique_lock<std::mutex> lock(state->mutex);
    state->all_finished.wait(lock, [&] { return state->finished == blocks; });
  };
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_FFTCONV_FFI_H_
