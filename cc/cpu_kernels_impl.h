// The CPU kernels of the three ops for one instruction set. cc/cpu_kernels.cc includes this file
// once per instruction set, each time inside its own namespace and with FFTCONV_CPU_VECTOR_BYTES set
// to that set's vector width; so it has no include guard and includes nothing itself.
//
// Every kernel computes kLanes independent problems side by side, one per lane of a vector:
// consecutive images of the [batch, channels] order for the FFTs, consecutive bins for the matmul.
// Every arithmetic operation is then a whole vector, whatever the transform size or the matrix
// shapes, and the frequency-major spectrum [bins, images] is read and written kLanes contiguous
// complex values at a time. Complex data inside a kernel is planar: an array of real-part vectors
// and one of imaginary-part vectors (the inverse FFT is then the forward one with the two swapped).
//
// Storage and arithmetic types: each kernel is a template on Real, the type it computes in, and Io,
// the scalar type of the tensors it reads and writes. Io is Real for float32 and float64; for
// Eigen::half and Eigen::bfloat16, Real is float and values are converted as they enter and leave
// the vectors, a vector's worth at a time on the whole-vector paths (LoadVec, StoreVec), so no
// converted copy of any tensor is made. Spectra are always
// interleaved (re, im) pairs of Io: std::complex<Real> for float32 / float64, the trailing
// dimension of 2 of a half-precision spectrum [bins, batch, channels, 2] otherwise.

template <typename Real>
struct Simd {
  // may_alias: single lanes are also read and written through Real pointers.
  typedef Real Vec __attribute__((vector_size(FFTCONV_CPU_VECTOR_BYTES), __may_alias__));
  // The same vector at any address that is a multiple of sizeof(Real).
  typedef Real UnalignedVec
      __attribute__((vector_size(FFTCONV_CPU_VECTOR_BYTES), __aligned__(sizeof(Real)),
                     __may_alias__));
  static constexpr int kLanes = FFTCONV_CPU_VECTOR_BYTES / sizeof(Real);

  static Vec Load(const Real* from) { return *reinterpret_cast<const UnalignedVec*>(from); }
  static void Store(const Vec& v, Real* to) { *reinterpret_cast<UnalignedVec*>(to) = v; }
};

// True when the kernel reads and writes its compute type itself. Otherwise (half precision
// stored, float computed) values are converted on their way in and out of the vectors.
template <typename Real, typename Io>
constexpr bool kSameType = std::is_same<Real, Io>::value;

template <typename Real, typename Io>
inline Real ToCompute(Io value) {
  return static_cast<Real>(value);
}
template <typename Io, typename Real>
inline Io ToStorage(Real value) {
  return static_cast<Io>(value);
}

// kLanes consecutive values of Io as one vector of Real, and back: a plain (unaligned) vector
// access for Io = Real, kLanes conversions through a vector's worth of registers otherwise. Every
// whole-vector path of the kernels goes through these, so half precision takes the same paths as
// float32 with the conversion in blocks of kLanes.
// float16 (Eigen::half, IEEE binary16): the AVX2 and AVX-512 copies (x86-64 only) convert a whole
// vector in one F16C / AVX-512 instruction, rounding to nearest even and overflowing to infinity as
// Eigen::half(float) does (cc/cpu_kernels.cc includes immintrin.h for them). GCC 12 compiles
// __builtin_convertvector of _Float16 vectors one lane at a time even where that instruction
// exists, so the baseline copy's vector conversion below is one value per lane.
#if FFTCONV_CPU_VECTOR_BYTES == 16 && defined(__FLT16_MAX__)
// float16 lanes as the compiler's _Float16 (the same bits as Eigen::half).
typedef _Float16 Float16Lanes
    __attribute__((vector_size(FFTCONV_CPU_VECTOR_BYTES / 2), __aligned__(2), __may_alias__));
#endif

template <typename Real, typename Io>
inline typename Simd<Real>::Vec LoadVec(const Io* from) {
  using S = Simd<Real>;
  if constexpr (kSameType<Real, Io>) {
    return S::Load(from);
#if FFTCONV_CPU_VECTOR_BYTES == 64
  } else if constexpr (std::is_same<Real, float>::value && std::is_same<Io, Eigen::half>::value) {
    return (typename S::Vec)_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(from)));
#elif FFTCONV_CPU_VECTOR_BYTES == 32
  } else if constexpr (std::is_same<Real, float>::value && std::is_same<Io, Eigen::half>::value) {
    return (typename S::Vec)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(from)));
#elif defined(__FLT16_MAX__)
  } else if constexpr (std::is_same<Real, float>::value && std::is_same<Io, Eigen::half>::value) {
    return __builtin_convertvector(*reinterpret_cast<const Float16Lanes*>(from),
                                   typename S::Vec);
#endif
  } else {
    typename S::Vec v;
    Real* lanes = reinterpret_cast<Real*>(&v);
    for (int l = 0; l < S::kLanes; ++l) lanes[l] = ToCompute<Real>(from[l]);
    return v;
  }
}
template <typename Real, typename Io>
inline void StoreVec(const typename Simd<Real>::Vec& v, Io* to) {
  using S = Simd<Real>;
  if constexpr (kSameType<Real, Io>) {
    S::Store(v, to);
#if FFTCONV_CPU_VECTOR_BYTES == 64
  } else if constexpr (std::is_same<Real, float>::value && std::is_same<Io, Eigen::half>::value) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to),
                        _mm512_cvtps_ph((__m512)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif FFTCONV_CPU_VECTOR_BYTES == 32
  } else if constexpr (std::is_same<Real, float>::value && std::is_same<Io, Eigen::half>::value) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to),
                     _mm256_cvtps_ph((__m256)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__FLT16_MAX__)
  } else if constexpr (std::is_same<Real, float>::value && std::is_same<Io, Eigen::half>::value) {
    // Rounded to nearest even, overflowing to infinity, as Eigen::half(float) rounds.
    *reinterpret_cast<Float16Lanes*>(to) = __builtin_convertvector(v, Float16Lanes);
#endif
  } else {
    const Real* lanes = reinterpret_cast<const Real*>(&v);
    for (int l = 0; l < S::kLanes; ++l) to[l] = ToStorage<Io>(lanes[l]);
  }
}

// A zeroed heap array of vectors, aligned to their width.
template <typename Real>
class VecArray {
 public:
  using Vec = typename Simd<Real>::Vec;

  explicit VecArray(size_t size)
      : size_(size),
        data_(static_cast<Vec*>(::operator new(std::max<size_t>(size, 1) * sizeof(Vec),
                                               std::align_val_t(FFTCONV_CPU_VECTOR_BYTES)))) {
    Zero(0, size);
  }
  ~VecArray() { ::operator delete(data_, std::align_val_t(FFTCONV_CPU_VECTOR_BYTES)); }
  VecArray(const VecArray&) = delete;
  VecArray& operator=(const VecArray&) = delete;

  Vec* data() { return data_; }
  Vec& operator[](size_t i) { return data_[i]; }
  size_t size() const { return size_; }
  // Zeroes elements [begin, end).
  void Zero(size_t begin, size_t end) {
    std::memset(static_cast<void*>(data_ + begin), 0, (end - begin) * sizeof(Vec));
  }

 private:
  size_t size_;
  Vec* data_;
};

// ---------------------------------------------------------------------------------------------
// Lanes in and out of memory.

// Interleaved complex values (re, im, re, im, ...) to and from planar vectors, whole vectors at
// once: `lo` holds the complex values of lanes [0, kLanes / 2), `hi` those of the other half.
template <typename Real, size_t... T>
inline void Interleave(const typename Simd<Real>::Vec& re, const typename Simd<Real>::Vec& im,
                       typename Simd<Real>::Vec* lo, typename Simd<Real>::Vec* hi,
                       std::index_sequence<T...>) {
  constexpr int kLanes = sizeof...(T);
  *lo = __builtin_shufflevector(re, im, (T / 2 + (T % 2) * kLanes)...);
  *hi = __builtin_shufflevector(re, im, (kLanes / 2 + T / 2 + (T % 2) * kLanes)...);
}

template <typename Real, size_t... T>
inline void Deinterleave(const typename Simd<Real>::Vec& lo, const typename Simd<Real>::Vec& hi,
                         typename Simd<Real>::Vec* re, typename Simd<Real>::Vec* im,
                         std::index_sequence<T...>) {
  *re = __builtin_shufflevector(lo, hi, (2 * T)...);
  *im = __builtin_shufflevector(lo, hi, (2 * T + 1)...);
}

// Transposes the kLanes x kLanes block rows[r][l] in place: log2(kLanes) rounds of interleaving
// row i with row i + kLanes / 2.
template <typename Real>
inline void TransposeLanes(typename Simd<Real>::Vec* rows) {
  using Vec = typename Simd<Real>::Vec;
  constexpr int kLanes = Simd<Real>::kLanes;
  for (int round = 1; round < kLanes; round *= 2) {
    Vec next[kLanes];
    for (int i = 0; i < kLanes / 2; ++i) {
      Interleave<Real>(rows[i], rows[i + kLanes / 2], &next[2 * i], &next[2 * i + 1],
                       std::make_index_sequence<kLanes>());
    }
    for (int i = 0; i < kLanes; ++i) rows[i] = next[i];
  }
}

// `lanes` consecutive complex values from planar vectors; pairs: [lanes][re, im] of Io.
template <typename Real, typename Io>
inline void StoreComplexLanes(const typename Simd<Real>::Vec& re,
                              const typename Simd<Real>::Vec& im, int lanes, Io* pairs) {
  using S = Simd<Real>;
  if (lanes == S::kLanes) {
    typename S::Vec lo, hi;
    Interleave<Real>(re, im, &lo, &hi, std::make_index_sequence<S::kLanes>());
    StoreVec<Real, Io>(lo, pairs);
    StoreVec<Real, Io>(hi, pairs + S::kLanes);
  } else {
    const Real* re_lanes = reinterpret_cast<const Real*>(&re);
    const Real* im_lanes = reinterpret_cast<const Real*>(&im);
    for (int l = 0; l < lanes; ++l) {
      pairs[2 * l] = ToStorage<Io>(re_lanes[l]);
      pairs[2 * l + 1] = ToStorage<Io>(im_lanes[l]);
    }
  }
}

// `lanes` consecutive complex values to planar vectors; lanes past `lanes` are set to zero.
// pairs: [lanes][re, im] of Io.
template <typename Real, typename Io>
inline void LoadComplexLanes(const Io* pairs, int lanes, typename Simd<Real>::Vec* re,
                             typename Simd<Real>::Vec* im) {
  using S = Simd<Real>;
  if (lanes == S::kLanes) {
    Deinterleave<Real>(LoadVec<Real, Io>(pairs), LoadVec<Real, Io>(pairs + S::kLanes), re, im,
                       std::make_index_sequence<S::kLanes>());
  } else {
    *re = typename S::Vec{};
    *im = typename S::Vec{};
    Real* re_lanes = reinterpret_cast<Real*>(re);
    Real* im_lanes = reinterpret_cast<Real*>(im);
    for (int l = 0; l < lanes; ++l) {
      re_lanes[l] = ToCompute<Real>(pairs[2 * l]);
      im_lanes[l] = ToCompute<Real>(pairs[2 * l + 1]);
    }
  }
}

// Where each lane's image starts in an NCHW or NHWC tensor and how a pixel steps from there, for
// the images first .. first + lanes - 1 of the [batch, channels] order.
struct LaneImages {
  static constexpr int kMaxLanes = 64;

  LaneImages(bool nhwc, int channels, int height, int width, int64_t first, int lanes)
      : lanes(lanes) {
    h_stride = ImageElementOffset(nhwc, channels, height, width, 0, 0, 1, 0);
    w_stride = ImageElementOffset(nhwc, channels, height, width, 0, 0, 0, 1);
    for (int l = 0; l < lanes; ++l) {
      const int64_t image = first + l;
      base[l] = ImageElementOffset(nhwc, channels, height, width, image / channels,
                                   image % channels, 0, 0);
    }
    // NHWC with the group inside one batch item: the lanes are adjacent channels.
    contiguous = true;
    for (int l = 1; l < lanes; ++l) contiguous = contiguous && base[l] == base[0] + l;
    // The images follow each other in memory, so every offset is >= 0, and below 2^31: a tensor
    // holds at most kMaxElements elements.
    for (int l = 0; l < lanes; ++l) offset[l] = static_cast<int32_t>(base[l] - base[0]);
    // Runs of lanes adjacent in memory (NHWC with fewer channels than lanes: each batch item's
    // channels), up to kMaxRuns of them; more, and runs = 0.
    runs = 0;
    for (int l = 0; l < lanes && runs <= kMaxRuns; ++l) {
      if (l == 0 || base[l] != base[l - 1] + 1) {
        if (runs < kMaxRuns) run_first[runs] = l;
        ++runs;
      }
    }
    if (runs > kMaxRuns) runs = 0;
    for (int r = 0; r < runs; ++r) {
      const int end = r + 1 < runs ? run_first[r + 1] : lanes;
      run_lanes[r] = ((uint64_t{1} << (end - run_first[r])) - 1) << run_first[r];
      // Where lane 0 would sit if every lane of the run's batch item were in the run.
      run_origin[r] = static_cast<int32_t>(offset[run_first[r]] - run_first[r]);
    }
  }

  // Runs that a masked load or store per run reads or writes (MaskedLoadLanes).
  static constexpr int kMaxRuns = 4;

  int lanes;
  bool contiguous;
  int runs;
  int run_first[kMaxRuns];
  uint64_t run_lanes[kMaxRuns];  // the run's lanes as a bit mask
  int32_t run_origin[kMaxRuns];  // offset of the run's first lane minus its lane index
  int64_t base[kMaxLanes];
  int32_t offset[kMaxLanes];  // base[l] - base[0]: the lanes' indices for a gather or a scatter
  int64_t h_stride, w_stride;
};

// One pixel of every lane's image: at[offset[l]] into lane l (GatherLanes), and back
// (ScatterLanes). One gather instruction in the AVX2 and AVX-512 copies and one scatter in the
// AVX-512 copy, for float32 and float64 stored; one element per lane otherwise. For a group whose
// lanes are neither adjacent nor rows of their own (NHWC with fewer channels than lanes: LeNet's 6
// channels under AVX-512's 16 lanes), one element at a time in lane order was 40% of the forward
// transform's time (rfft2d of [128, 28, 28, 6] in a 32 frame, one thread: 1.76 us per image
// against 1.06 in NCHW).
template <typename Real, typename Io>
inline typename Simd<Real>::Vec GatherLanes(const Io* at, const int32_t* offset) {
  using S = Simd<Real>;
#if FFTCONV_CPU_VECTOR_BYTES == 64
  if constexpr (std::is_same<Real, float>::value && std::is_same<Io, float>::value) {
    return (typename S::Vec)_mm512_i32gather_ps(_mm512_loadu_si512(offset), at, 4);
  } else if constexpr (std::is_same<Real, double>::value && std::is_same<Io, double>::value) {
    return (typename S::Vec)_mm512_i32gather_pd(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset)), at, 8);
  }
#elif FFTCONV_CPU_VECTOR_BYTES == 32
  if constexpr (std::is_same<Real, float>::value && std::is_same<Io, float>::value) {
    return (typename S::Vec)_mm256_i32gather_ps(
        at, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset)), 4);
  } else if constexpr (std::is_same<Real, double>::value && std::is_same<Io, double>::value) {
    // The masked form with every lane on: GCC 12's _mm256_i32gather_pd starts from an undefined
    // vector, which -Wmaybe-uninitialized reports.
    return (typename S::Vec)_mm256_mask_i32gather_pd(
        _mm256_setzero_pd(), at, _mm_loadu_si128(reinterpret_cast<const __m128i*>(offset)),
        _mm256_castsi256_pd(_mm256_set1_epi64x(-1)), 8);
  }
#endif
  typename S::Vec v;
  Real* lanes = reinterpret_cast<Real*>(&v);
  for (int l = 0; l < S::kLanes; ++l) lanes[l] = ToCompute<Real>(at[offset[l]]);
  return v;
}
template <typename Real, typename Io>
inline void ScatterLanes(const typename Simd<Real>::Vec& v, Io* at, const int32_t* offset) {
#if FFTCONV_CPU_VECTOR_BYTES == 64
  if constexpr (std::is_same<Real, float>::value && std::is_same<Io, float>::value) {
    _mm512_i32scatter_ps(at, _mm512_loadu_si512(offset), (__m512)v, 4);
    return;
  } else if constexpr (std::is_same<Real, double>::value && std::is_same<Io, double>::value) {
    _mm512_i32scatter_pd(at, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset)),
                         (__m512d)v, 8);
    return;
  }
#endif
  const Real* lanes = reinterpret_cast<const Real*>(&v);
  for (int l = 0; l < Simd<Real>::kLanes; ++l) at[offset[l]] = ToStorage<Io>(lanes[l]);
}

// One pixel of every lane's image, as GatherLanes and ScatterLanes, by one masked load (store)
// per run of lanes adjacent in memory: lane l of run r at at[run_origin[r] + l] (the run's lanes
// only: a masked access touches no other lane's address). The AVX-512 copy, float32 and float64
// stored, where the images have runs (LaneImages::runs); true when it took the pixel.
template <typename Real, typename Io>
inline bool MaskedLoadLanes(const Io* at, const LaneImages& images, typename Simd<Real>::Vec* v) {
#if FFTCONV_CPU_VECTOR_BYTES == 64
  if constexpr (std::is_same<Real, float>::value && std::is_same<Io, float>::value) {
    if (images.runs == 0) return false;
    __m512 out = _mm512_setzero_ps();
    for (int r = 0; r < images.runs; ++r) {
      out = _mm512_mask_loadu_ps(out, static_cast<__mmask16>(images.run_lanes[r]),
                                 at + images.run_origin[r]);
    }
    *v = (typename Simd<Real>::Vec)out;
    return true;
  } else if constexpr (std::is_same<Real, double>::value && std::is_same<Io, double>::value) {
    if (images.runs == 0) return false;
    __m512d out = _mm512_setzero_pd();
    for (int r = 0; r < images.runs; ++r) {
      out = _mm512_mask_loadu_pd(out, static_cast<__mmask8>(images.run_lanes[r]),
                                 at + images.run_origin[r]);
    }
    *v = (typename Simd<Real>::Vec)out;
    return true;
  }
#endif
  (void)at, (void)images, (void)v;
  return false;
}
template <typename Real, typename Io>
inline bool MaskedStoreLanes(const typename Simd<Real>::Vec& v, Io* at, const LaneImages& images) {
#if FFTCONV_CPU_VECTOR_BYTES == 64
  if constexpr (std::is_same<Real, float>::value && std::is_same<Io, float>::value) {
    if (images.runs == 0) return false;
    for (int r = 0; r < images.runs; ++r) {
      _mm512_mask_storeu_ps(at + images.run_origin[r], static_cast<__mmask16>(images.run_lanes[r]),
                            (__m512)v);
    }
    return true;
  } else if constexpr (std::is_same<Real, double>::value && std::is_same<Io, double>::value) {
    if (images.runs == 0) return false;
    for (int r = 0; r < images.runs; ++r) {
      _mm512_mask_storeu_pd(at + images.run_origin[r], static_cast<__mmask8>(images.run_lanes[r]),
                            (__m512d)v);
    }
    return true;
  }
#endif
  (void)v, (void)at, (void)images;
  return false;
}

// Row h of every lane's image, pixels [0, width), to and from vectors line[w * stride]. Four ways:
// lanes adjacent in memory (NHWC, adjacent channels of one batch item): one vector per pixel;
// every lane's row contiguous (NCHW, or NHWC with one channel): kLanes x kLanes transposes;
// otherwise a masked load (store) per run of adjacent lanes (MaskedLoadLanes, the AVX-512 copy:
// LeNet's 6 channels under 16 lanes are 3 or 4 runs; rfft2d of [64, 28, 28, 6] in a 32 frame on
// one EPYC thread 0.320 -> 0.254 ms against one gather per pixel, irfft2d 0.328 -> 0.261), else
// one GatherLanes (ScatterLanes) per pixel; a partial group, and the pixels the transposes leave
// over, one element at a time.
template <typename Real, typename Io>
inline void LoadRow(const LaneImages& images, const Io* input, int h, int width,
                    typename Simd<Real>::Vec* line, int64_t stride) {
  using S = Simd<Real>;
  const bool full = images.lanes == S::kLanes;
  const int64_t row = h * images.h_stride;
  int w = 0;
  if (full && images.contiguous) {
    for (; w < width; ++w) {
      line[w * stride] = LoadVec<Real, Io>(input + images.base[0] + row + w * images.w_stride);
    }
  } else if (full && images.w_stride == 1) {
    for (; w + S::kLanes <= width; w += S::kLanes) {
      typename S::Vec block[S::kLanes];
      for (int l = 0; l < S::kLanes; ++l) {
        block[l] = LoadVec<Real, Io>(input + images.base[l] + row + w);
      }
      TransposeLanes<Real>(block);
      for (int t = 0; t < S::kLanes; ++t) line[(w + t) * stride] = block[t];
    }
  } else if (full) {
    for (; w < width; ++w) {
      const Io* at = input + images.base[0] + row + w * images.w_stride;
      if (!MaskedLoadLanes<Real, Io>(at, images, &line[w * stride])) {
        line[w * stride] = GatherLanes<Real, Io>(at, images.offset);
      }
    }
  }
  for (int l = 0; l < images.lanes; ++l) {
    const Io* in = input + images.base[l] + row;
    Real* out = reinterpret_cast<Real*>(line) + l;
    for (int x = w; x < width; ++x) {
      out[x * stride * S::kLanes] = ToCompute<Real>(in[x * images.w_stride]);
    }
  }
}

// line: [width] vectors, pixel w of row h of every lane's image.
template <typename Real, typename Io>
inline void StoreRow(const LaneImages& images, const typename Simd<Real>::Vec* line, int h,
                     int width, Io* output) {
  using S = Simd<Real>;
  const bool full = images.lanes == S::kLanes;
  const int64_t row = h * images.h_stride;
  int w = 0;
  if (full && images.contiguous) {
    for (; w < width; ++w) {
      StoreVec<Real, Io>(line[w], output + images.base[0] + row + w * images.w_stride);
    }
  } else if (full && images.w_stride == 1) {
    for (; w + S::kLanes <= width; w += S::kLanes) {
      typename S::Vec block[S::kLanes];
      for (int t = 0; t < S::kLanes; ++t) block[t] = line[w + t];
      TransposeLanes<Real>(block);
      for (int l = 0; l < S::kLanes; ++l) StoreVec<Real, Io>(block[l], output + images.base[l] + row + w);
    }
  } else if (full) {
    for (; w < width; ++w) {
      Io* at = output + images.base[0] + row + w * images.w_stride;
      if (!MaskedStoreLanes<Real, Io>(line[w], at, images)) {
        ScatterLanes<Real, Io>(line[w], at, images.offset);
      }
    }
  }
  for (int l = 0; l < images.lanes; ++l) {
    Io* out = output + images.base[l] + row;
    const Real* in = reinterpret_cast<const Real*>(line) + l;
    for (int x = w; x < width; ++x) out[x * images.w_stride] = ToStorage<Io>(in[x * S::kLanes]);
  }
}

// ---------------------------------------------------------------------------------------------
// FFT.

// *re + i *im = (ur + i ui) (c + i s): a butterfly output times its twiddle.
template <typename Vec, typename Real>
inline void StoreTwiddled(const Vec& ur, const Vec& ui, Real c, Real s, Vec* re, Vec* im) {
  *re = ur * c - ui * s;
  *im = ur * s + ui * c;
}

// The rows of points first, first + span, ..., first + (kRadix - 1) span of every transform (the
// inputs of one butterfly column): r[k] = re + (first + k span) stride, i[k] likewise.
template <int kRadix, typename Vec>
inline void ButterflyRows(Vec* re, Vec* im, int64_t stride, int first, int span,
                          Vec* (&r)[kRadix], Vec* (&i)[kRadix]) {
  for (int k = 0; k < kRadix; ++k) {
    r[k] = re + (first + k * span) * stride;
    i[k] = im + (first + k * span) * stride;
  }
}

// In-place complex FFT of `batch` transforms of size n = tables.size, each point a vector of lanes:
// point p of transform t is (re, im)[p * stride + t]. Decimation in frequency: natural order in,
// output k at position tables.output_position[k]. For n = m * 2^k (m = tables.odd_radix, 3 or 5)
// a radix-m pass comes first: it turns the transform into m of length n / m (points
// [r n/m, (r+1) n/m) give outputs m q + r), which the power-of-two passes below then run side by
// side, as they run the blocks of their own later stages. Radix-2^2 passes (two radix-2 stages per
// pass over the data, three twiddle products per four points), then one radix-2 pass, which needs
// no twiddle, when log2 of the power-of-two length is odd. Every twiddle is exp(-2 pi i t / n) from
// the size-n table (a length-len stage uses t = j n / len). The loop over transforms is innermost,
// so each twiddle is loaded once per butterfly column. The inverse (unscaled) transform is the
// same call with re and im swapped.
template <typename Real>
void FftDif(typename Simd<Real>::Vec* re, typename Simd<Real>::Vec* im, int64_t stride, int batch,
            const FftTables<Real>& tables) {
  using Vec = typename Simd<Real>::Vec;
  const int n = tables.size;
  const Real* cos = tables.cos.data();
  const Real* sin = tables.sin.data();
  int len = n;
  if (tables.odd_radix == 3) {
    // x0, x1, x2 = points j, j + n/3, j + 2n/3; with w = exp(-2 pi i / 3) = -1/2 - i sqrt(3)/2:
    //   y0 = x0 + x1 + x2, y1 = (x0 + w x1 + w^2 x2) W^j, y2 = (x0 + w^2 x1 + w x2) W^2j,
    // W = exp(-2 pi i / n); x0 + w x1 + w^2 x2 = (x0 - (x1 + x2) / 2) - i sqrt(3)/2 (x1 - x2).
    const int third = n / 3;
    const Real half_sqrt3 = -sin[third];  // sqrt(3)/2, from the double-built table
    for (int j = 0; j < third; ++j) {
      const Real c1 = cos[j], s1 = sin[j];
      const Real c2 = cos[2 * j], s2 = sin[2 * j];
      Vec *r[3], *i[3];
      ButterflyRows(re, im, stride, j, third, r, i);
      Vec *r0 = r[0], *i0 = i[0], *r1 = r[1], *i1 = i[1], *r2 = r[2], *i2 = i[2];
      for (int t = 0; t < batch; ++t) {
        const Vec sr = r1[t] + r2[t], si = i1[t] + i2[t];
        const Vec dr = (r1[t] - r2[t]) * half_sqrt3, di = (i1[t] - i2[t]) * half_sqrt3;
        const Vec mr = r0[t] - sr * Real(0.5), mi = i0[t] - si * Real(0.5);
        r0[t] = r0[t] + sr;
        i0[t] = i0[t] + si;
        // -i sqrt(3)/2 (x1 - x2) = (di, -dr).
        StoreTwiddled(mr + di, mi - dr, c1, s1, &r1[t], &i1[t]);
        StoreTwiddled(mr - di, mi + dr, c2, s2, &r2[t], &i2[t]);
      }
    }
    len = third;
  } else if (tables.odd_radix == 5) {
    // x0 .. x4 = points j + m n/5; with w = exp(-2 pi i / 5) = c1 - i s1, w^2 = c2 - i s2
    // (c1 = cos(2 pi/5), s1 = sin(2 pi/5), c2 = cos(4 pi/5), s2 = sin(4 pi/5)), w^3 and w^4 their
    // conjugates, a1 = x1 + x4, b1 = x1 - x4, a2 = x2 + x3, b2 = x2 - x3:
    //   y0 = x0 + a1 + a2,
    //   y1, y4 = x0 + c1 a1 + c2 a2 -+ i (s1 b1 + s2 b2),
    //   y2, y3 = x0 + c2 a1 + c1 a2 -+ i (s2 b1 - s1 b2),
    // each y_m stored times W^mj, W = exp(-2 pi i / n): 16 real multiplies before the twiddles,
    // where the plain 5-point sums of products take 64.
    const int fifth = n / 5;
    // From the double-built table, like the twiddles.
    const Real c1 = cos[fifth], s1 = -sin[fifth], c2 = cos[2 * fifth], s2 = -sin[2 * fifth];
    for (int j = 0; j < fifth; ++j) {
      // W^mj for m = 1 .. 4 (mj < 4n/5).
      Real wc[5], ws[5];
      for (int m = 1; m < 5; ++m) wc[m] = cos[m * j], ws[m] = sin[m * j];
      Vec *r[5], *i[5];
      ButterflyRows(re, im, stride, j, fifth, r, i);
      for (int t = 0; t < batch; ++t) {
        const Vec x0r = r[0][t], x0i = i[0][t];
        const Vec a1r = r[1][t] + r[4][t], a1i = i[1][t] + i[4][t];
        const Vec b1r = r[1][t] - r[4][t], b1i = i[1][t] - i[4][t];
        const Vec a2r = r[2][t] + r[3][t], a2i = i[2][t] + i[3][t];
        const Vec b2r = r[2][t] - r[3][t], b2i = i[2][t] - i[3][t];
        const Vec m1r = x0r + a1r * c1 + a2r * c2, m1i = x0i + a1i * c1 + a2i * c2;
        const Vec m2r = x0r + a1r * c2 + a2r * c1, m2i = x0i + a1i * c2 + a2i * c1;
        const Vec n1r = b1r * s1 + b2r * s2, n1i = b1i * s1 + b2i * s2;
        const Vec n2r = b1r * s2 - b2r * s1, n2i = b1i * s2 - b2i * s1;
        r[0][t] = x0r + a1r + a2r;
        i[0][t] = x0i + a1i + a2i;
        // -i (n_r + i n_i) = (n_i, -n_r).
        StoreTwiddled(m1r + n1i, m1i - n1r, wc[1], ws[1], &r[1][t], &i[1][t]);
        StoreTwiddled(m2r + n2i, m2i - n2r, wc[2], ws[2], &r[2][t], &i[2][t]);
        StoreTwiddled(m2r - n2i, m2i + n2r, wc[3], ws[3], &r[3][t], &i[3][t]);
        StoreTwiddled(m1r - n1i, m1i + n1r, wc[4], ws[4], &r[4][t], &i[4][t]);
      }
    }
    len = fifth;
  }
  for (; len >= 4; len /= 4) {
    const int quarter = len / 4, step = n / len;
    for (int start = 0; start < n; start += len) {
      for (int j = 0; j < quarter; ++j) {
        // W^j, W^2j, W^3j with W = exp(-2 pi i / len).
        const Real c1 = cos[j * step], s1 = sin[j * step];
        const Real c2 = cos[2 * j * step], s2 = sin[2 * j * step];
        const Real c3 = cos[3 * j * step], s3 = sin[3 * j * step];
        Vec *r[4], *i[4];
        ButterflyRows(re, im, stride, start + j, quarter, r, i);
        Vec *r0 = r[0], *i0 = i[0], *r1 = r[1], *i1 = i[1], *r2 = r[2], *i2 = i[2];
        Vec *r3 = r[3], *i3 = i[3];
        for (int t = 0; t < batch; ++t) {
          const Vec t0r = r0[t] + r2[t], t0i = i0[t] + i2[t];
          const Vec t1r = r1[t] + r3[t], t1i = i1[t] + i3[t];
          const Vec t2r = r0[t] - r2[t], t2i = i0[t] - i2[t];
          const Vec t3r = i1[t] - i3[t], t3i = r3[t] - r1[t];  // -i (x1 - x3)
          r0[t] = t0r + t1r;
          i0[t] = t0i + t1i;
          StoreTwiddled(t0r - t1r, t0i - t1i, c2, s2, &r1[t], &i1[t]);
          StoreTwiddled(t2r + t3r, t2i + t3i, c1, s1, &r2[t], &i2[t]);
          StoreTwiddled(t2r - t3r, t2i - t3i, c3, s3, &r3[t], &i3[t]);
        }
      }
    }
  }
  if (len == 2) {
    for (int start = 0; start < n; start += 2) {
      Vec* r0 = re + start * stride;
      Vec* i0 = im + start * stride;
      Vec* r1 = r0 + stride;
      Vec* i1 = i0 + stride;
      for (int t = 0; t < batch; ++t) {
        const Vec ar = r0[t], ai = i0[t];
        r0[t] = ar + r1[t];
        i0[t] = ai + i1[t];
        r1[t] = ar - r1[t];
        i1[t] = ai - i1[t];
      }
    }
  }
}

// Cost of one group's transform for the thread pool, in about instructions.
inline int64_t FftGroupCost(int n) { return int64_t{6} * n * n * Log2(n); }

// ---------------------------------------------------------------------------------------------
// FftconvRfft2d.

// One task per group of kLanes consecutive images. Row pass: only the frame rows that hold image
// rows, two real rows packed into one complex line (row 2q the real part, 2q + 1 the imaginary
// part), all pairs transformed together, then unpacked into the rows' half spectra. Column pass:
// the S/2 + 1 columns over the whole frame, all together.
// input: the images in Io; spectrum: [bins, batch, channels][re, im] of Io. A half-precision
// spectrum is stored divided by S^2 (mean-normalised: no bin exceeds the largest input magnitude,
// so it overflows only where the input itself would); float32 and float64 ones are not scaled.
// gradient (FftconvRfft2dActivationGradient): with ReLU, each input row is loaded with the same row
// of the activation's output (input's layout) and kept where that is > 0, zero elsewhere, before
// the row transform: the spectrum of dy * relu'(z) with no pass of its own over dy.
template <typename Real, typename Io>
void Rfft2d(const ParallelRunner& parallel, const Rfft2dParams& p, const Io* input,
            Io* spectrum, const ActivationGradient<Io>& gradient) {
  using Vec = typename Simd<Real>::Vec;
  constexpr int kLanes = Simd<Real>::kLanes;
  const int n = p.fft_size;
  const int half = static_cast<int>(HalfWidth(n));
  const int pairs = (p.height + 1) / 2;
  const int64_t images = static_cast<int64_t>(p.batch) * p.channels;
  const FftTables<Real>& tables = GetFftTables<Real>(n);
  const int* position = tables.output_position.data();
  const Real scale = kSameType<Real, Io> ? Real(1) : Real(1) / (Real(n) * Real(n));
  // Frame rows [image_begin, image_end) hold the image; points [window_begin, window_end) of a line.
  const size_t image_begin = static_cast<size_t>(p.offset_h) * half;
  const size_t image_end = static_cast<size_t>(p.offset_h + p.height) * half;
  const size_t window_begin = static_cast<size_t>(p.offset_w) * pairs;
  const size_t window_end = static_cast<size_t>(p.offset_w + p.width) * pairs;
  const bool relu_gradient =
      gradient.activation_output != nullptr && gradient.activation == Activation::kRelu;
  auto work = [&](int64_t begin, int64_t end) {
    // lines_re, lines_im: [n points w][pairs], the packed row pairs of the frame; after the row
    // transform, point kx at position position[kx].
    VecArray<Real> lines_re(static_cast<size_t>(n) * pairs), lines_im(lines_re.size());
    // frame_re, frame_im: [n rows ky][half columns kx]: each frame row's half spectrum after the
    // row pass, the spectrum after the column pass (row ky at position position[ky]).
    VecArray<Real> frame_re(static_cast<size_t>(n) * half), frame_im(frame_re.size());
    // activation_row: [width], one row of the activation's output of every lane's image.
    VecArray<Real> activation_row(relu_gradient ? p.width : 0);
    for (int64_t group = begin; group < end; ++group) {
      const int64_t first = group * kLanes;
      const LaneImages lanes(p.nhwc, p.channels, p.height, p.width, first,
                             static_cast<int>(std::min<int64_t>(kLanes, images - first)));
      // The transforms of the previous group overwrote the zeros around the window, and the
      // imaginary part of the last pair when the image has an odd number of rows.
      for (VecArray<Real>* lines : {&lines_re, &lines_im}) {
        lines->Zero(0, window_begin);
        lines->Zero(window_end, lines->size());
      }
      if (p.height % 2 == 1) {
        for (size_t at = window_begin + pairs - 1; at < window_end; at += pairs) lines_im[at] = Vec{};
      }
      for (int h = 0; h < p.height; ++h) {
        Vec* line = (h % 2 == 0 ? lines_re.data() : lines_im.data()) + h / 2;
        LoadRow<Real, Io>(lanes, input, h, p.width, line + window_begin, pairs);
        if (relu_gradient) {
          // As ReluGrad: the gradient where the output is > 0, zero where it is not (or NaN).
          LoadRow<Real, Io>(lanes, gradient.activation_output, h, p.width, activation_row.data(),
                            1);
          for (int w = 0; w < p.width; ++w) {
            Vec& value = line[window_begin + static_cast<size_t>(w) * pairs];
            value = activation_row[w] > Vec{} ? value : Vec{};
          }
        }
      }
      FftDif<Real>(lines_re.data(), lines_im.data(), pairs, pairs, tables);

      // Unpack z = r1 + i r2: R1[k] = (Z[k] + conj Z[-k]) / 2, R2[k] = (Z[k] - conj Z[-k]) / 2i.
      for (VecArray<Real>* frame : {&frame_re, &frame_im}) {
        frame->Zero(0, image_begin);
        frame->Zero(image_end, frame->size());
      }
      for (int kx = 0; kx < half; ++kx) {
        const int64_t at = static_cast<int64_t>(position[kx]) * pairs;
        const int64_t mirror = static_cast<int64_t>(position[(n - kx) % n]) * pairs;
        for (int q = 0; q < pairs; ++q) {
          const Vec zr = lines_re[at + q], zi = lines_im[at + q];
          const Vec mr = lines_re[mirror + q], mi = lines_im[mirror + q];
          const size_t row = image_begin + static_cast<size_t>(2 * q) * half + kx;
          frame_re[row] = (zr + mr) * Real(0.5);
          frame_im[row] = (zi - mi) * Real(0.5);
          if (2 * q + 1 < p.height) {
            frame_re[row + half] = (zi + mi) * Real(0.5);
            frame_im[row + half] = (mr - zr) * Real(0.5);
          }
        }
      }
      FftDif<Real>(frame_re.data(), frame_im.data(), half, half, tables);

      for (int ky = 0; ky < n; ++ky) {
        const int64_t row = static_cast<int64_t>(position[ky]) * half;
        for (int kx = 0; kx < half; ++kx) {
          if constexpr (kSameType<Real, Io>) {
            StoreComplexLanes<Real, Io>(frame_re[row + kx], frame_im[row + kx], lanes.lanes,
                                        spectrum + 2 * (BinIndex(n, ky, kx) * images + first));
          } else {
            StoreComplexLanes<Real, Io>(frame_re[row + kx] * scale, frame_im[row + kx] * scale,
                                        lanes.lanes,
                                        spectrum + 2 * (BinIndex(n, ky, kx) * images + first));
          }
        }
      }
    }
  };
  parallel((images + kLanes - 1) / kLanes, FftGroupCost(n), work);
}

// ---------------------------------------------------------------------------------------------
// FftconvIrfft2d.

// One task per group of kLanes consecutive images. Column pass: inverse transforms over ky of all
// S/2 + 1 columns together. Row pass: only the window rows, two packed into one complex line as
// e1 + i e2 of their Hermitian extensions, so that one inverse gives y1 + i y2; only the window
// columns are stored, scaled by 1 / S^2.
// spectrum: [bins, batch, channels][re, im] of Io; output: the window in Io. A half-precision
// spectrum is mean-normalised (see Rfft2d): its inverse is the unscaled sum, irfft(S^2 Z).
// epilogue (FftconvIrfft2dBiasActivation): each scaled window value gets its channel's bias, then
// the activation, in Real before it is rounded to Io once: the layer's bias and activation with no
// pass of their own over the output.
template <typename Real, typename Io>
void Irfft2d(const ParallelRunner& parallel, const Irfft2dParams& p, const Io* spectrum,
             Io* output, const BiasActivation<Io>& epilogue) {
  using Vec = typename Simd<Real>::Vec;
  constexpr int kLanes = Simd<Real>::kLanes;
  const int n = p.fft_size;
  const int half = static_cast<int>(HalfWidth(n));
  const int pairs = (p.out_h + 1) / 2;
  const int64_t images = static_cast<int64_t>(p.batch) * p.channels;
  const Real scale = kSameType<Real, Io> ? Real(1) / (Real(n) * Real(n)) : Real(1);
  const FftTables<Real>& tables = GetFftTables<Real>(n);
  const int* position = tables.output_position.data();
  const bool add_bias = epilogue.bias != nullptr;
  const bool relu = epilogue.activation == Activation::kRelu;
  auto work = [&](int64_t begin, int64_t end) {
    // frame_re, frame_im: [n rows ky][half columns kx], the group's spectrum in bin order; after the
    // column pass, frame row h of the inverse at position position[h].
    VecArray<Real> frame_re(static_cast<size_t>(n) * half), frame_im(frame_re.size());
    // lines_re, lines_im: [n points kx][pairs], the window rows packed in pairs; after the row pass,
    // window column j at point position[offset_w + j] (real part: row 2q, imaginary: row 2q + 1).
    VecArray<Real> lines_re(static_cast<size_t>(n) * pairs), lines_im(lines_re.size());
    // window_row: [out_w], one output row of the group, scaled, in natural order.
    VecArray<Real> window_row(p.out_w);
    for (int64_t group = begin; group < end; ++group) {
      const int64_t first = group * kLanes;
      const LaneImages lanes(p.nhwc, p.channels, p.out_h, p.out_w, first,
                             static_cast<int>(std::min<int64_t>(kLanes, images - first)));
      // Lane l holds image first + l of the [batch, channels] order, so channel (first + l) % C.
      Vec bias{};
      if (add_bias) {
        Real* bias_lanes = reinterpret_cast<Real*>(&bias);
        for (int l = 0; l < lanes.lanes; ++l) {
          bias_lanes[l] = ToCompute<Real>(epilogue.bias[(first + l) % p.channels]);
        }
      }
      for (int64_t bin = 0; bin < static_cast<int64_t>(n) * half; ++bin) {
        LoadComplexLanes<Real, Io>(spectrum + 2 * (bin * images + first), lanes.lanes,
                                   &frame_re[bin], &frame_im[bin]);
      }
      FftDif<Real>(frame_im.data(), frame_re.data(), half, half, tables);

      // Hermitian extension of rows e1 = a + ib, e2 = c + id as e1 + i e2: (a - d, b + c) at kx and
      // (a + d, c - b) at n - kx; the kx = 0 and n/2 columns keep their real parts only.
      for (int q = 0; q < pairs; ++q) {
        const int64_t first_row = static_cast<int64_t>(position[p.offset_h + 2 * q]) * half;
        const bool pair = 2 * q + 1 < p.out_h;
        const int64_t second_row =
            pair ? static_cast<int64_t>(position[p.offset_h + 2 * q + 1]) * half : 0;
        for (int kx = 0; kx <= n / 2; ++kx) {
          const Vec a = frame_re[first_row + kx], b = frame_im[first_row + kx];
          const Vec c = pair ? frame_re[second_row + kx] : Vec{};
          const Vec d = pair ? frame_im[second_row + kx] : Vec{};
          const int64_t at = static_cast<int64_t>(kx) * pairs + q;
          if (kx == 0 || kx == n / 2) {
            lines_re[at] = a;
            lines_im[at] = c;
          } else {
            const int64_t mirror = static_cast<int64_t>(n - kx) * pairs + q;
            lines_re[at] = a - d;
            lines_im[at] = b + c;
            lines_re[mirror] = a + d;
            lines_im[mirror] = c - b;
          }
        }
      }
      FftDif<Real>(lines_im.data(), lines_re.data(), pairs, pairs, tables);

      for (int i = 0; i < p.out_h; ++i) {
        const Vec* line = (i % 2 == 0 ? lines_re.data() : lines_im.data()) + i / 2;
        for (int j = 0; j < p.out_w; ++j) {
          Vec value = line[static_cast<int64_t>(position[p.offset_w + j]) * pairs] * scale;
          if (add_bias) value += bias;
          // max(value, 0) that keeps a NaN, as TensorFlow's Relu does.
          if (relu) value = value < Vec{} ? Vec{} : value;
          window_row[j] = value;
        }
        StoreRow<Real, Io>(lanes, window_row.data(), i, p.out_w, output);
      }
    }
  };
  parallel((images + kLanes - 1) / kLanes, FftGroupCost(n), work);
}

// ---------------------------------------------------------------------------------------------
// FftconvSpectralMatmul.

// The register tile of the matmul: kTileM x kTileN complex outputs, each a vector of kLanes bins,
// accumulated over k with four multiply-adds per complex product (planar real and imaginary parts):
// 2 x kTileM x kTileN accumulators plus 2 x (kTileM + kTileN) operands fit the 16 vector registers
// (2 x 2 was the fastest of 1x4 ... 4x2 on the CPU cases: docs/performance.md).
constexpr int kTileM = 2;
constexpr int kTileN = 2;

// acc += a_panel * b_panel over k_count: a_panel [k][kTileM][re, im], b_panel [k][kTileN][re, im].
template <typename Real>
inline void MultiplyPanels(int k_count, const typename Simd<Real>::Vec* a_panel,
                           const typename Simd<Real>::Vec* b_panel,
                           typename Simd<Real>::Vec (&acc_re)[kTileM][kTileN],
                           typename Simd<Real>::Vec (&acc_im)[kTileM][kTileN]) {
  for (int k = 0; k < k_count; ++k) {
    const typename Simd<Real>::Vec* a = a_panel + 2 * kTileM * k;
    const typename Simd<Real>::Vec* b = b_panel + 2 * kTileN * k;
#pragma GCC unroll 4
    for (int i = 0; i < kTileM; ++i) {
#pragma GCC unroll 4
      for (int j = 0; j < kTileN; ++j) {
        // One multiply-add each (written apart so that each contracts to an FMA).
        acc_re[i][j] += a[2 * i] * b[2 * j];
        acc_re[i][j] -= a[2 * i + 1] * b[2 * j + 1];
        acc_im[i][j] += a[2 * i] * b[2 * j + 1];
        acc_im[i][j] += a[2 * i + 1] * b[2 * j];
      }
    }
  }
}

// One operand of the matmul as seen through its flags: element (row, col) of op(x) for one bin is
// x[row * row_stride + col * col_stride] of that bin's matrix, conjugated when `conjugate`. One of
// the two strides is 1.
struct OperandView {
  int64_t row_stride, col_stride, bin_stride;
  bool conjugate;
};

// Packs rows [row0, row0 + panels * tile) x cols [0, cols) of op(x) for the group's bins into
// panels [panel][col][tile rows][re, im] (rows past `rows` and lanes past `lanes` are zero). A full
// group reads kLanes / 2 complex values along the stride-1 dimension from each bin as one vector
// and transposes the kLanes vectors into the planar re, im lanes of those values.
// x: [bins, rows, cols][re, im] of Io; strides of the view in complex values.
template <typename Real, typename Io>
void PackPanels(const Io* x, const OperandView& view, int64_t first_bin, int lanes,
                int row0, int rows, int cols, int panels, int tile,
                typename Simd<Real>::Vec* packed) {
  using S = Simd<Real>;
  constexpr int kRun = S::kLanes / 2;
  std::fill(packed, packed + static_cast<int64_t>(panels) * cols * tile * 2, typename S::Vec{});
  const int row_end = std::min(rows, row0 + panels * tile);
  const Real sign = view.conjugate ? Real(-1) : Real(1);
  auto at = [&](int row, int col) {  // the (re, im) vectors of element (row, col)
    return packed + ((static_cast<int64_t>((row - row0) / tile) * cols + col) * tile +
                     (row - row0) % tile) * 2;
  };
  const bool along_cols = view.col_stride == 1;
  const int outer_begin = along_cols ? row0 : 0, outer_end = along_cols ? row_end : cols;
  const int inner_begin = along_cols ? 0 : row0, inner_end = along_cols ? cols : row_end;
  const int64_t outer_stride = along_cols ? view.row_stride : view.col_stride;
  const Io* group = x + 2 * (first_bin * view.bin_stride);
  for (int outer = outer_begin; outer < outer_end; ++outer) {
    const int64_t outer_at = 2 * (outer * outer_stride);
    int inner = inner_begin;
    if (lanes == S::kLanes) {
      for (; inner + kRun <= inner_end; inner += kRun) {
        typename S::Vec block[S::kLanes];
        for (int l = 0; l < S::kLanes; ++l) {
          block[l] = LoadVec<Real, Io>(group + 2 * (l * view.bin_stride) + outer_at + 2 * inner);
        }
        TransposeLanes<Real>(block);  // block[2t], block[2t + 1]: re, im of value inner + t
        for (int t = 0; t < kRun; ++t) {
          typename S::Vec* out = along_cols ? at(outer, inner + t) : at(inner + t, outer);
          out[0] = block[2 * t];
          out[1] = block[2 * t + 1] * sign;
        }
      }
    }
    for (; inner < inner_end; ++inner) {
      Real* out = reinterpret_cast<Real*>(along_cols ? at(outer, inner) : at(inner, outer));
      for (int l = 0; l < lanes; ++l) {
        const Io* value = group + 2 * (l * view.bin_stride) + outer_at + 2 * inner;
        out[l] = ToCompute<Real>(value[0]);
        out[S::kLanes + l] = sign * ToCompute<Real>(value[1]);
      }
    }
  }
}

// Columns [0, cols) of one row of c for each of the group's bins: lane l of (re, im)[col] goes to
// out[l * bin_stride + col]. A full group transposes kLanes columns at a time, so that every bin's
// row is written with whole vectors.
// out: [re, im] pairs of Io; bin_stride in complex values.
template <typename Real, typename Io>
inline void StoreMatrixRow(const typename Simd<Real>::Vec* re, const typename Simd<Real>::Vec* im,
                           int cols, int lanes, Io* out, int64_t bin_stride) {
  using S = Simd<Real>;
  int col = 0;
  if (lanes == S::kLanes) {
    for (; col + S::kLanes <= cols; col += S::kLanes) {
      typename S::Vec block_re[S::kLanes], block_im[S::kLanes];
      for (int t = 0; t < S::kLanes; ++t) {
        block_re[t] = re[col + t];
        block_im[t] = im[col + t];
      }
      TransposeLanes<Real>(block_re);
      TransposeLanes<Real>(block_im);
      for (int l = 0; l < S::kLanes; ++l) {
        typename S::Vec lo, hi;
        Interleave<Real>(block_re[l], block_im[l], &lo, &hi, std::make_index_sequence<S::kLanes>());
        Io* pairs = out + 2 * (l * bin_stride + col);
        StoreVec<Real, Io>(lo, pairs);
        StoreVec<Real, Io>(hi, pairs + S::kLanes);
      }
    }
  }
  for (int l = 0; l < lanes; ++l) {
    const Real* re_lanes = reinterpret_cast<const Real*>(re) + l;
    const Real* im_lanes = reinterpret_cast<const Real*>(im) + l;
    Io* bin = out + 2 * (l * bin_stride);
    for (int x = col; x < cols; ++x) {
      bin[2 * x] = ToStorage<Io>(re_lanes[x * S::kLanes]);
      bin[2 * x + 1] = ToStorage<Io>(im_lanes[x * S::kLanes]);
    }
  }
}

// One task per group of kLanes consecutive bins. op(a) and op(b) are packed into lane-major panels
// (the flags are applied while packing, so one kernel serves every transpose and conjugation), in
// blocks of rows of op(a) and columns of op(b) of about 128 KiB each; every kTileM x kTileN tile of
// c is accumulated in registers over the whole k, staged per panel of rows, and written once.
// a, b, c: [bins, rows, cols][re, im] of Io; c = alpha op(a) op(b), alpha applied in Real before
// c is rounded to Io.
template <typename Real, typename Io>
void SpectralMatmul(const ParallelRunner& parallel, const SpectralMatmulParams& p, const Io* a,
                    const Io* b, Io* c) {
  using Vec = typename Simd<Real>::Vec;
  constexpr int kLanes = Simd<Real>::kLanes;
  if (static_cast<int64_t>(p.bins) * p.m * p.n == 0) return;
  const bool swap_a = p.transpose_a || p.adjoint_a, swap_b = p.transpose_b || p.adjoint_b;
  const int64_t a_cols = swap_a ? p.m : p.k, b_cols = swap_b ? p.k : p.n;
  // op(a) is m x k; op(b) is packed as its transpose, n x k, so that both are packed by rows.
  const OperandView a_view{swap_a ? 1 : a_cols, swap_a ? a_cols : 1, int64_t{p.m} * p.k,
                           p.adjoint_a || p.conjugate_a};
  const OperandView b_view{swap_b ? b_cols : 1, swap_b ? 1 : b_cols, int64_t{p.k} * p.n,
                           p.adjoint_b || p.conjugate_b};
  const int64_t c_size = int64_t{p.m} * p.n;
  const int64_t panel_bytes = std::max<int64_t>(1, int64_t{p.k} * 2 * sizeof(Vec));
  const int m_panels = (p.m + kTileM - 1) / kTileM, n_panels = (p.n + kTileN - 1) / kTileN;
  const int block_m = static_cast<int>(
      std::clamp<int64_t>((int64_t{128} << 10) / (panel_bytes * kTileM), 1, m_panels));
  const int block_n = static_cast<int>(
      std::clamp<int64_t>((int64_t{128} << 10) / (panel_bytes * kTileN), 1, n_panels));
  const int block_cols = block_n * kTileN;
  const Real alpha = static_cast<Real>(p.alpha);
  auto work = [&](int64_t begin, int64_t end) {
    // a_packed: [block_m panels][k][kTileM][re, im]; b_packed: [block_n panels][k][kTileN][re, im].
    VecArray<Real> a_packed(static_cast<size_t>(block_m) * p.k * kTileM * 2);
    VecArray<Real> b_packed(static_cast<size_t>(block_n) * p.k * kTileN * 2);
    // rows_re, rows_im: [kTileM][block_cols], one panel of rows of c for the block's columns.
    VecArray<Real> rows_re(static_cast<size_t>(kTileM) * block_cols), rows_im(rows_re.size());
    for (int64_t group = begin; group < end; ++group) {
      const int64_t first = group * kLanes;
      const int lanes = static_cast<int>(std::min<int64_t>(kLanes, p.bins - first));
      for (int m_block = 0; m_block < m_panels; m_block += block_m) {
        const int m_count = std::min(block_m, m_panels - m_block);
        PackPanels<Real, Io>(a, a_view, first, lanes, m_block * kTileM, p.m, p.k, m_count, kTileM,
                   a_packed.data());
        for (int n_block = 0; n_block < n_panels; n_block += block_n) {
          const int n_count = std::min(block_n, n_panels - n_block);
          PackPanels<Real, Io>(b, b_view, first, lanes, n_block * kTileN, p.n, p.k, n_count, kTileN,
                     b_packed.data());
          const int n0 = n_block * kTileN, n_end = std::min(p.n, (n_block + n_count) * kTileN);
          for (int mi = 0; mi < m_count; ++mi) {
            for (int ni = 0; ni < n_count; ++ni) {
              Vec acc_re[kTileM][kTileN] = {}, acc_im[kTileM][kTileN] = {};
              MultiplyPanels<Real>(p.k, a_packed.data() + static_cast<size_t>(mi) * p.k * kTileM * 2,
                                   b_packed.data() + static_cast<size_t>(ni) * p.k * kTileN * 2,
                                   acc_re, acc_im);
              for (int i = 0; i < kTileM; ++i) {
                for (int j = 0; j < kTileN; ++j) {
                  rows_re[i * block_cols + ni * kTileN + j] = acc_re[i][j] * alpha;
                  rows_im[i * block_cols + ni * kTileN + j] = acc_im[i][j] * alpha;
                }
              }
            }
            const int m0 = (m_block + mi) * kTileM;
            for (int i = 0; i < kTileM && m0 + i < p.m; ++i) {
              StoreMatrixRow<Real, Io>(rows_re.data() + i * block_cols, rows_im.data() + i * block_cols,
                             n_end - n0, lanes,
                             c + 2 * (first * c_size + int64_t{m0 + i} * p.n + n0), c_size);
            }
          }
        }
      }
    }
  };
  parallel((p.bins + kLanes - 1) / kLanes, int64_t{4} * kLanes * p.m * p.n * (p.k + 2), work);
}
