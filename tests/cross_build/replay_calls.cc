// Replays calls of the CPU kernel library's four C entry points: reads each call's
// sizes and input bytes from stdin and writes its status and output bytes to stdout.
// Built for another architecture and run under an emulator, it lets a test compare that
// build's bits with the native library's (tests/test_cpu_aarch64.py). Inputs come from the
// test, so both libraries see the same bytes.
//
// Each call: one text line
//   <op> <data dtype> <stat dtype> <N> <C> <HxW> <G> <eps> <swish scale> <threads> <affine> <m0> <m1> <m2>
// with op one of forward, backward, silu_forward, silu_backward, then the inputs' bytes in
// the C API's order (gamma and beta, C statistics-dtype values each, only where affine is
// 1). Output: a 4-byte status, then every requested output's bytes in the API's order.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "c_api.h"  // kernels/cpu: the entry points

namespace {

using Bytes = std::vector<unsigned char>;

size_t ElementSize(const std::string &dtype) {
  if (dtype == "float64") return 8;
  return dtype == "float32" ? 4 : 2;
}

Bytes Read(size_t count) {
  Bytes bytes(count);
  if (count != 0 && std::fread(bytes.data(), 1, count, stdin) != count) {
    std::fprintf(stderr, "replay_calls: input ended inside a call\n");
    std::exit(2);
  }
  return bytes;
}

void Write(const Bytes &bytes) { std::fwrite(bytes.data(), 1, bytes.size(), stdout); }

// nullptr for an absent (empty) buffer, as the C API expects for a missing gamma/beta.
const void *In(const Bytes &bytes) { return bytes.empty() ? nullptr : bytes.data(); }
void *Out(Bytes &bytes) { return bytes.empty() ? nullptr : bytes.data(); }

struct Call {
  char op[32], data[16], stat[16];
  int64_t N, C, HxW, G;
  float eps, swish_scale;
  int threads, affine, mask[3];
};

bool ReadCall(Call &c) {
  char line[512];
  if (!std::fgets(line, sizeof line, stdin)) return false;
  const char *format = "%31s %15s %15s %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %f %f %d %d %d %d %d";
  const int fields = std::sscanf(line, format, c.op, c.data, c.stat, &c.N, &c.C, &c.HxW, &c.G, &c.eps,
                                 &c.swish_scale, &c.threads, &c.affine, &c.mask[0], &c.mask[1], &c.mask[2]);
  if (fields != 14) {
    std::fprintf(stderr, "replay_calls: bad call line: %s", line);
    std::exit(2);
  }
  return true;
}

int Replay(const Call &c) {
  const size_t data_bytes = c.N * c.C * c.HxW * ElementSize(c.data);
  const size_t stat_bytes = c.N * c.G * ElementSize(c.stat);
  const size_t param_bytes = c.affine ? c.C * ElementSize(c.stat) : 0;
  const std::string op = c.op;
  MsGroupNormSetNumThreads(c.threads);
  if (op == "forward" || op == "silu_forward") {
    const Bytes x = Read(data_bytes), gamma = Read(param_bytes), beta = Read(param_bytes);
    Bytes y(data_bytes), mean(stat_bytes), rstd(stat_bytes);
    const int status =
        op == "forward"
            ? MsGroupNormForward(x.data(), In(gamma), In(beta), y.data(), mean.data(), rstd.data(), c.N, c.C, c.HxW,
                                 c.G, c.eps, c.data, c.stat)
            : MsGroupNormSiluForward(x.data(), In(gamma), In(beta), y.data(), mean.data(), rstd.data(), c.N, c.C,
                                     c.HxW, c.G, c.eps, c.swish_scale, c.data, c.stat);
    std::fwrite(&status, sizeof status, 1, stdout);
    for (const Bytes *out : {&y, &mean, &rstd}) Write(*out);
    return 0;
  }
  if (op == "backward" || op == "silu_backward") {
    const Bytes dy = Read(data_bytes), x = Read(data_bytes), mean = Read(stat_bytes), rstd = Read(stat_bytes);
    const Bytes gamma = Read(param_bytes), beta = op == "silu_backward" ? Read(param_bytes) : Bytes();
    Bytes dx(c.mask[0] ? data_bytes : 0), dgamma(c.mask[1] ? c.C * ElementSize(c.stat) : 0);
    Bytes dbeta(c.mask[2] ? c.C * ElementSize(c.stat) : 0);
    const int status =
        op == "backward"
            ? MsGroupNormBackward(dy.data(), x.data(), mean.data(), rstd.data(), In(gamma), Out(dx), Out(dgamma),
                                  Out(dbeta), c.N, c.C, c.HxW, c.G, c.data, c.stat, c.mask[0], c.mask[1], c.mask[2])
            : MsGroupNormSiluBackward(dy.data(), x.data(), mean.data(), rstd.data(), In(gamma), In(beta), Out(dx),
                                      Out(dgamma), Out(dbeta), c.N, c.C, c.HxW, c.G, c.swish_scale, c.data, c.stat,
                                      c.mask[0], c.mask[1], c.mask[2]);
    std::fwrite(&status, sizeof status, 1, stdout);
    for (const Bytes *out : {&dx, &dgamma, &dbeta}) Write(*out);
    return 0;
  }
  std::fprintf(stderr, "replay_calls: unknown op %s\n", c.op);
  return 2;
}

}  // namespace

int main() {
  MsGroupNormSetMinElementsPerThread(1);  // small calls still run the multi-threaded schedules
  Call call;
  while (ReadCall(call)) {
    if (Replay(call) != 0) return 2;
  }
  return std::fflush(stdout) == 0 ? 0 : 2;
}
