// Drives the CPU kernel library's entry points over many shapes, dtypes and masks with
// exactly-sized heap buffers, for AddressSanitizer/UBSan builds (see
// scripts/sanitize_kernels.sh). Also calls them with broken arguments. Exits non-zero on
// a wrong status or a wrong dbeta (a cheap end-to-end sanity check).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "c_api.h"  // kernels/cpu: the entry points

namespace {

size_t ElementSize(const char *dtype) { return std::strcmp(dtype, "float32") == 0 ? 4 : 2; }

// An exactly-sized heap buffer (nullptr when empty, like a framework would pass).
struct Buffer {
  std::unique_ptr<unsigned char[]> bytes;
  Buffer(int64_t count, const char *dtype, std::mt19937 &rng) {
    if (count == 0) return;
    const size_t size = ElementSize(dtype);
    bytes.reset(new unsigned char[count * size]);
    std::normal_distribution<float> normal;
    for (int64_t i = 0; i < count; ++i) {
      const float v = normal(rng);
      if (size == 4) {
        std::memcpy(bytes.get() + 4 * i, &v, 4);
      } else {  // any finite 16-bit pattern near v: bf16 truncation, valid for fp16 as a small number too
        uint32_t u;
        std::memcpy(&u, &v, 4);
        uint16_t h = std::strcmp(dtype, "bfloat16") == 0 ? uint16_t(u >> 16) : uint16_t(0x3c00 | (u >> 22 & 0x1ff));
        std::memcpy(bytes.get() + 2 * i, &h, 2);
      }
    }
  }
  void *get() { return bytes.get(); }
};

float ReadFloat(const void *data, const char *dtype, int64_t i) {
  if (ElementSize(dtype) == 4) return static_cast<const float *>(data)[i];
  uint16_t h = static_cast<const uint16_t *>(data)[i];
  if (std::strcmp(dtype, "bfloat16") == 0) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float mag = e == 0 ? std::ldexp(float(m), -24) : std::ldexp(1.0f + m / 1024.0f, e - 15);
  return (h & 0x8000) ? -mag : mag;
}

int failures = 0;

void Expect(bool ok, const char *what, int64_t N, int64_t C, int64_t HxW, int64_t G, const char *dt) {
  if (!ok) {
    std::printf("FAIL %s N=%lld C=%lld HxW=%lld G=%lld %s\n", what, (long long)N, (long long)C, (long long)HxW,
                (long long)G, dt);
    ++failures;
  }
}

void RunCase(int64_t N, int64_t C, int64_t HxW, int64_t G, const char *data, const char *stat, int mask_bits,
             bool with_gamma, std::mt19937 &rng) {
  const int64_t numel = N * C * HxW;
  Buffer x(numel, data, rng), dy(numel, data, rng), gamma(with_gamma ? C : 0, stat, rng), beta(C, stat, rng);
  Buffer y(numel, data, rng), mean(N * G, stat, rng), rstd(N * G, stat, rng);
  int status = MsGroupNormForward(x.get(), gamma.get(), beta.get(), y.get(), mean.get(), rstd.get(), N, C, HxW, G,
                                  1e-5f, data, stat);
  Expect(status == 0, "forward status", N, C, HxW, G, data);
  const bool mdx = mask_bits & 1, mdg = mask_bits & 2, mdb = mask_bits & 4;
  Buffer dx(mdx ? numel : 0, data, rng), dgamma(mdg ? C : 0, stat, rng), dbeta(mdb ? C : 0, stat, rng);
  status = MsGroupNormBackward(dy.get(), x.get(), mean.get(), rstd.get(), gamma.get(), dx.get(), dgamma.get(),
                               dbeta.get(), N, C, HxW, G, data, stat, mdx, mdg, mdb);
  Expect(status == 0, "backward status", N, C, HxW, G, data);
  // The fused GroupNorm + swish kernels on the same buffers (swish scale != 1), beta absent
  // where gamma is.
  const void *fused_beta = with_gamma ? beta.get() : nullptr;
  status = MsGroupNormSiluForward(x.get(), gamma.get(), fused_beta, y.get(), mean.get(), rstd.get(), N, C, HxW, G,
                                  1e-5f, 1.3f, data, stat);
  Expect(status == 0, "fused forward status", N, C, HxW, G, data);
  Buffer fdx(mdx ? numel : 0, data, rng), fdgamma(mdg ? C : 0, stat, rng), fdbeta(mdb ? C : 0, stat, rng);
  status = MsGroupNormSiluBackward(dy.get(), x.get(), mean.get(), rstd.get(), gamma.get(), fused_beta, fdx.get(),
                                   fdgamma.get(), fdbeta.get(), N, C, HxW, G, 1.3f, data, stat, mdx, mdg, mdb);
  Expect(status == 0, "fused backward status", N, C, HxW, G, data);
  if (mdb) {  // dbeta[c] = sum over n, hw of dy
    for (int64_t c = 0; c < C; ++c) {
      double want = 0.0, scale = 0.0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < HxW; ++i) {
          const double v = ReadFloat(dy.get(), data, (n * C + c) * HxW + i);
          want += v;
          scale += std::fabs(v);
        }
      const double got = ReadFloat(dbeta.get(), stat, c);
      Expect(std::fabs(got - want) <= 1e-2 * scale + 1e-6, "dbeta value", N, C, HxW, G, data);
    }
  }
}

}  // namespace

int main() {
  std::mt19937 rng(42);
  const char *combos[][2] = {{"float32", "float32"}, {"float16", "float16"}, {"bfloat16", "bfloat16"},
                             {"float16", "float32"}, {"bfloat16", "float32"}};
  const int64_t shapes[][4] = {{1, 1, 1, 1},  {1, 3, 50000, 1}, {2, 6, 7, 3}, {3, 15, 77, 5},  {4, 8, 1, 2},
                               {11, 6, 9, 3}, {2, 64, 33, 32},  {0, 4, 5, 2}, {2, 4, 0, 2},    {1, 32, 2049, 4},
                               {5, 1, 17, 1}, {2, 4, 16, 4},    {3, 9, 1, 9}, {1, 2, 4097, 2}, {7, 10, 5, 5}};
  int cases = 0;
  // Twice: with the default schedule and stores, then with every call threaded (as far
  // as the thread count allows) and every output streamed (non-temporal stores with
  // their alignment heads), which the default sizes here would never reach.
  for (int forced = 0; forced < 2; ++forced) {
    MsGroupNormSetMinElementsPerThread(forced ? 1 : 0);
    MsGroupNormSetStreamMinBytes(forced ? 1 : 0);
    for (auto &shape : shapes)
      for (auto &combo : combos)
        for (int mask = 0; mask < 8; ++mask) {
          RunCase(shape[0], shape[1], shape[2], shape[3], combo[0], combo[1], mask, mask != 5, rng);
          ++cases;
        }
  }
  MsGroupNormSetMinElementsPerThread(0);
  MsGroupNormSetStreamMinBytes(0);
  // Broken calls must return an error without touching memory.
  float one = 1.0f;
  Expect(MsGroupNormBackward(&one, &one, &one, &one, nullptr, &one, &one, &one, 1, 1, 1, 0, "float32", "float32", 1,
                             1, 1) != 0, "group 0 rejected", 1, 1, 1, 0, "float32");
  Expect(MsGroupNormBackward(&one, &one, &one, &one, nullptr, &one, &one, &one, 1, 3, 1, 2, "float32", "float32", 1,
                             1, 1) != 0, "C % G rejected", 1, 3, 1, 2, "float32");
  Expect(MsGroupNormBackward(nullptr, &one, &one, &one, nullptr, &one, &one, &one, 1, 1, 1, 1, "float32", "float32", 1,
                             1, 1) != 0, "null dy rejected", 1, 1, 1, 1, "float32");
  Expect(MsGroupNormForward(&one, nullptr, nullptr, &one, &one, &one, int64_t(1) << 40, int64_t(1) << 40, 1, 1, 1e-5f,
                            "float32", "float32") != 0, "overflow rejected", 1, 1, 1, 1, "float32");
  Expect(MsGroupNormForward(&one, nullptr, nullptr, &one, &one, &one, 1, 1, 1, 1, 1e-5f, "float64", "float32") != 0,
         "float64 rejected", 1, 1, 1, 1, "float64");
  Expect(MsGroupNormSiluBackward(&one, &one, &one, &one, nullptr, nullptr, &one, &one, &one, 1, 3, 1, 2, 1.0f,
                                 "float32", "float32", 1, 1, 1) != 0, "fused C % G rejected", 1, 3, 1, 2, "float32");
  Expect(MsGroupNormSiluForward(&one, nullptr, nullptr, &one, &one, &one, 1, 1, 1, 1, 1e-5f, 1.0f, "float64",
                                "float64") != 0, "fused float64 rejected", 1, 1, 1, 1, "float64");
  std::printf("%d kernel cases, %d failures\n", cases, failures);
  return failures == 0 ? 0 : 1;
}
