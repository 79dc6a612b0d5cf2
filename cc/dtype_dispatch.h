// The element types of the ops, written down once. Every op takes images of a real type Real
// (float, double, Eigen::half or Eigen::bfloat16) and spectra of Real's spectrum element
// (SpectrumElement, cc/fftconv_cpu.h). The TensorFlow kernels are registered for each real type
// (ForEachRealType, cc/fftconv_kernel_util.h), and the XLA handlers pick theirs from a buffer's
// element type when they run (DispatchRealType, cc/fftconv_ffi.h); both walk RealTypes. No
// TensorFlow or XLA headers here: the CPU kernels and their check use it too.
#ifndef TF_FFTCONV_CC_DTYPE_DISPATCH_H_
#define TF_FFTCONV_CC_DTYPE_DISPATCH_H_

#include <type_traits>

// The half-precision element types (Eigen/Core); names only here.
namespace Eigen {
struct half;
struct bfloat16;
}  // namespace Eigen

namespace fftconv {

// A type as a value, for the generic lambdas that dispatch hands it to: typename decltype(tag)::type.
template <typename T>
struct TypeTag {
  using type = T;
};

template <typename... Types>
struct TypeList {};

// The ops' real types, in the order every registration and every dispatch tries them.
using RealTypes = TypeList<float, double, Eigen::half, Eigen::bfloat16>;

// Full for float and double, Half for Eigen::half, BFloat16 for Eigen::bfloat16: the types that stand
// for Real where the half-precision types need their own (their spectra, their launchers' types).
template <typename Real, typename Full, typename Half, typename BFloat16>
using ByPrecision =
    std::conditional_t<std::is_same<Real, Eigen::half>::value, Half,
                       std::conditional_t<std::is_same<Real, Eigen::bfloat16>::value, BFloat16, Full>>;

// Calls visit(TypeTag<Real>()) for each real type.
template <typename Visit, typename... Types>
void ForEachType(TypeList<Types...>, Visit&& visit) {
  (visit(TypeTag<Types>()), ...);
}
template <typename Visit>
void ForEachRealType(Visit&& visit) {
  ForEachType(RealTypes(), visit);
}

// Returns visit(TypeTag<T>()) for the first T of the list with key_of(TypeTag<T>()) == key, or
// otherwise() where none has.
template <typename Key, typename KeyOf, typename Visit, typename Otherwise>
auto DispatchType(TypeList<>, const Key&, KeyOf&, Visit&, Otherwise& otherwise) {
  return otherwise();
}
template <typename Key, typename KeyOf, typename Visit, typename Otherwise, typename First,
          typename... Rest>
auto DispatchType(TypeList<First, Rest...>, const Key& key, KeyOf& key_of, Visit& visit,
                  Otherwise& otherwise) {
  if (key == key_of(TypeTag<First>())) return visit(TypeTag<First>());
  return DispatchType(TypeList<Rest...>(), key, key_of, visit, otherwise);
}
template <typename Key, typename KeyOf, typename Visit, typename Otherwise>
auto DispatchRealType(const Key& key, KeyOf&& key_of, Visit&& visit, Otherwise&& otherwise) {
  return DispatchType(RealTypes(), key, key_of, visit, otherwise);
}

}  // namespace fftconv

#endif  // TF_FFTCONV_CC_DTYPE_DISPATCH_H_
