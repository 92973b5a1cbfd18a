// TVM's extern random kernels (TVM 0.18 and 0.27 names and arguments), on the CPU:
//   tvm.contrib.random.randint(low, high, out)             integers in [low, high)
//   tvm.contrib.random.uniform([seed, seed2,] low, high, out)   float32 in [low, high)
//   tvm.contrib.random.normal([seed, seed2,] loc, scale, out)   float32, N(loc, scale^2)
//   tvm.contrib.random.random_fill(out)                    values in [1, 10) (any 8-64 bit dtype)
//   tvm.contrib.random.random_fill_for_measure(out)        the same, for measurement inputs
// As TVM's: a Mersenne Twister (mt19937) per thread, seeded from the clock, drawn through the
// standard library's distributions; uniform and normal with a seed pair (not both 0) are
// stateless: the engine is reseeded from the pair on every call, so equal seeds give equal
// outputs (the TFLite frontend's seeded random ops). Bad arguments are InternalErrors as there.
#include <algorithm>
#include <cstring>
#include <ctime>
#include <limits>
#include <random>

#include "contrib.h"
#include "polyffi/error.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace contrib {
namespace {

std::mt19937& ThreadEngine() {
  static thread_local std::mt19937 engine(static_cast<unsigned>(time(nullptr)));
  return engine;
}

/*! \brief One 32-bit seed from a seed pair (a splitmix64-style mix of both, as TVM's). */
unsigned MixSeeds(int64_t seed, int64_t seed2) {
  auto mix = [](uint64_t v) {
    v += 0x9e3779b97f4a7c15ULL;
    v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ULL;
    v = (v ^ (v >> 27)) * 0x94d049bb133111ebULL;
    return v ^ (v >> 31);
  };
  const auto a = static_cast<uint64_t>(seed), b = static_cast<uint64_t>(seed2);
  const uint64_t combined = mix(a) ^ (mix(b) + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  return static_cast<unsigned>((combined >> 32) ^ combined);
}

/*! \brief The engine for a (seed, seed2) call: the thread's, or one reseeded from the pair. */
std::mt19937& EngineFor(int64_t seed, int64_t seed2) {
  if (seed == 0 && seed2 == 0) return ThreadEngine();  // 0, 0: not deterministic (as TF)
  static thread_local std::mt19937 seeded;
  seeded.seed(MixSeeds(seed, seed2));
  return seeded;
}

DLTensor* Float32Out(const Args& args, int i) {
  DLTensor* out = CpuTensor(args, i, "output");
  if (!Is(out->dtype, kDLFloat, 32)) {
    Throw("InternalError", args.fname(), ": Check failed: dtype.code == kDLFloat && dtype.bits == ",
          "32 && dtype.lanes == 1: the output is ", DataTypeName(out->dtype),
          ", float32 is needed");
  }
  return out;
}

/*! \brief uniform / normal: 3 arguments (thread engine) or 5 (seed pair first). */
template <typename Dist>
void Sample(const Args& args) {
  if (args.size() != 3 && args.size() != 5) {
    Throw("InternalError", args.fname(), " expects either 3 or 5 arguments, but got ", args.size());
  }
  const int p = args.size() == 5 ? 2 : 0;
  std::mt19937& engine = p == 0 ? ThreadEngine() : EngineFor(args.Int(0), args.Int(1));
  // TVM narrows both parameters to float before checking them.
  const auto a = static_cast<float>(args.Float(p)), b = static_cast<float>(args.Float(p + 1));
  DLTensor* out = Float32Out(args, p + 2);
  Dist dist = Dist::Make(a, b, args);
  auto* dst = reinterpret_cast<float*>(DataOf(out));
  const int64_t n = NumElements(out);
  for (int64_t i = 0; i < n; ++i) dst[i] = dist(engine);
}

struct Uniform : std::uniform_real_distribution<float> {
  using std::uniform_real_distribution<float>::uniform_real_distribution;
  static Uniform Make(float low, float high, const Args& args) {
    if (!(high > low)) {
      Throw("InternalError", args.fname(), ": Check failed: high > low (", high, " vs. ", low,
            "): high must be bigger than low");
    }
    return Uniform(low, high);
  }
};
struct Normal : std::normal_distribution<float> {
  using std::normal_distribution<float>::normal_distribution;
  static Normal Make(float loc, float scale, const Args& args) {
    if (!(scale > 0)) {
      Throw("InternalError", args.fname(), ": Check failed: scale > 0 (", scale,
            " vs. 0): standard deviation must be positive");
    }
    return Normal(loc, scale);
  }
};

POLYFFI_CORE_GLOBAL("tvm.contrib.random.uniform",
                    [](const Args& args, RetValue*) { Sample<Uniform>(args); });
POLYFFI_CORE_GLOBAL("tvm.contrib.random.normal",
                    [](const Args& args, RetValue*) { Sample<Normal>(args); });

template <typename T>
void FillInts(char* data, int64_t n, int64_t low, int64_t high, std::mt19937& engine) {
  low = std::max<int64_t>(low, std::numeric_limits<T>::min());
  high = std::min<int64_t>(high, int64_t{std::numeric_limits<T>::max()} + 1);
  const auto span = static_cast<uint64_t>(high - low);
  for (int64_t i = 0; i < n; ++i) {
    const unsigned r = engine();
    T v = static_cast<T>(low + static_cast<int64_t>(r % span));
    std::memcpy(data + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
  }
}

POLYFFI_CORE_GLOBAL("tvm.contrib.random.randint", [](const Args& args, RetValue*) {
  args.CheckArity(3);
  int64_t low = args.Int(0), high = args.Int(1);
  DLTensor* out = CpuTensor(args, 2, "output");
  if (!(high > low)) {
    Throw("InternalError", args.fname(), ": Check failed: high > low (", high, " vs. ", low,
          "): high must be bigger than low");
  }
  char* d = DataOf(out);
  const int64_t n = NumElements(out);
  std::mt19937& e = ThreadEngine();
  const DLDataType t = out->dtype;
  if (Is(t, kDLInt, 32)) return FillInts<int32_t>(d, n, low, high, e);
  if (Is(t, kDLInt, 16)) return FillInts<int16_t>(d, n, low, high, e);
  if (Is(t, kDLInt, 8)) return FillInts<int8_t>(d, n, low, high, e);
  if (Is(t, kDLUInt, 32)) return FillInts<uint32_t>(d, n, low, high, e);
  if (Is(t, kDLUInt, 16)) return FillInts<uint16_t>(d, n, low, high, e);
  if (Is(t, kDLUInt, 8)) return FillInts<uint8_t>(d, n, low, high, e);
  Throw("InternalError", args.fname(), ": unknown data type ", DataTypeName(t));
});

// random_fill: draws from U[1, 10) in double and stores by element width whatever the type code
// (as TVM: 8 bits the truncated integer, 16 bits a float16, 32 bits a float, 64 bits a double),
// so quantized inputs are never all zero.
void Fill(const Args& args) {
  args.CheckArity(1);
  DLTensor* out = CpuTensor(args, 0, "output");
  const int bits = out->dtype.bits * out->dtype.lanes;
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) {
    Throw("InternalError", args.fname(), ": Doesn't support dtype code ", int(out->dtype.code),
          " dtype bits ", int(out->dtype.bits));
  }
  std::uniform_real_distribution<double> dist(1.0, 10.0);
  std::mt19937& e = ThreadEngine();
  char* d = DataOf(out);
  const int64_t n = NumElements(out);
  for (int64_t i = 0; i < n; ++i) {
    const double v = dist(e);
    if (bits == 8) {
      d[i] = static_cast<char>(static_cast<uint8_t>(v));
    } else if (bits == 16) {
      uint16_t h = FloatToHalf(static_cast<float>(v));
      std::memcpy(d + 2 * i, &h, 2);
    } else if (bits == 32) {
      float f = static_cast<float>(v);
      std::memcpy(d + 4 * i, &f, 4);
    } else {
      std::memcpy(d + 8 * i, &v, 8);
    }
  }
}

POLYFFI_CORE_GLOBAL("tvm.contrib.random.random_fill",
                    [](const Args& args, RetValue*) { Fill(args); });
POLYFFI_CORE_GLOBAL("tvm.contrib.random.random_fill_for_measure",
                    [](const Args& args, RetValue*) { Fill(args); });

}  // namespace
}  // namespace contrib
}  // namespace polyffi
