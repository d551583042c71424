"""SHA-256 digests of every output of the CPU kernel library over a table of calls, per
thread configuration and ISA build: a refactoring of kernels/cpu that must not change a
bit is checked by comparing the digests of the build before and after.

    python scripts/bench/output_digests.py --lib OLD.so --out /tmp/old.json
    python scripts/bench/output_digests.py --lib NEW.so --out /tmp/new.json --compare /tmp/old.json

The table: the shapes of the kernel tests (tests/cases.py), the benchmark's small anchor
shapes and 2-D (N, C) inputs whose C leaves vector tails (the sample-by-sample schedule), every (data, statistics) dtype pair, with and without gamma/beta, the output masks,
GroupNorm and the fused GroupNorm + swish (k = 1 and 0.7), and inputs that take the double
(wide-range) loops: huge and tiny spreads, dy near the float32 maximum, inf/NaN, rstd outside
[2^-32, 2^32]. Each configuration (threads, minimum elements per thread, streamed stores)
must give the same digests; the script exits non-zero if one differs, or if --compare finds
a difference from the other file. It loads the library with ctypes only (no package import),
so a build of any commit can be measured.
"""
import argparse
import ctypes
import hashlib
import json
import sys

import numpy as np

SHAPES = [((1, 1, 3), 1), ((2, 8, 5, 3), 8), ((2, 6, 4, 5), 1), ((4, 12), 3), ((3, 15, 7, 11), 5), ((2, 4, 9), 2),
          ((2, 4, 2, 3, 2), 2), ((2, 4, 2, 1, 3, 1, 2, 2), 4), ((11, 6, 3, 3), 3), ((2, 32, 48, 40), 4),
          ((2, 64, 32, 32), 32), ((4, 1280, 8, 8), 32), ((1, 3, 224, 224), 1), ((3, 60, 17, 19), 6),
          ((1, 4, 300, 300), 1), ((2, 4, 0, 5), 2), ((0, 4, 3), 2), ((37, 21), 3), ((5, 76), 19), ((9, 40, 1), 8)]
DTYPES = [("float32", "float32"), ("float16", "float16"), ("bfloat16", "bfloat16"), ("float16", "float32"),
          ("bfloat16", "float32"), ("float64", "float64")]
MASKS = [(1, 1, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 1, 1)]
# (threads, minimum elements per thread (0 = default), stream every output)
CONFIGS = [(1, 0, False), (1, 1, True), (2, 0, False), (2, 1, False), (2, 1, True), (3, 1, False), (4, 1, False)]
STORAGE = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16, "float64": np.float64}


def load(path):
    lib = ctypes.CDLL(path)
    p, i64, f32, s, i = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_char_p, ctypes.c_int
    lib.MsGroupNormForward.argtypes = [p] * 6 + [i64] * 4 + [f32, s, s]
    lib.MsGroupNormBackward.argtypes = [p] * 8 + [i64] * 4 + [s, s] + [i] * 3
    lib.MsGroupNormSiluForward.argtypes = [p] * 6 + [i64] * 4 + [f32, f32, s, s]
    lib.MsGroupNormSiluBackward.argtypes = [p] * 9 + [i64] * 4 + [f32, s, s] + [i] * 3
    lib.MsGroupNormSetNumThreads.argtypes = [i]
    lib.MsGroupNormSetMinElementsPerThread.argtypes = [i64]
    lib.MsGroupNormSetStreamMinBytes.argtypes = [i64]
    lib.MsGroupNormSelectIsa.argtypes = [s]
    lib.MsGroupNormActiveIsa.restype = s
    return lib


def stored(values, dtype):
    """float64 values in the kernel's storage (bfloat16 as the top half of the float32 bits)."""
    if dtype == "bfloat16":
        return (np.ascontiguousarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return np.ascontiguousarray(values, STORAGE[dtype])


def ptr(a):
    return None if a is None else a.ctypes.data


class Inputs:
    """One shape and dtype pair's inputs, with a variant that reaches the double loops."""

    def __init__(self, shape, G, data, stat, variant, seed):
        rng = np.random.default_rng(seed)
        C = shape[1]
        scale, offset = {"plain": (1.5, 0.5), "huge": (3e19, 1e20), "tiny": (1e-25, 1.0), "big-dy": (1.0, 0.5),
                         "nonfinite": (1.5, 0.5)}[variant]
        x = rng.standard_normal(shape) * scale + offset
        dy = rng.standard_normal(shape) * (3e38 if variant == "big-dy" and data != "float16" else 1.0)
        if variant == "nonfinite" and x.size > 3:
            x.flat[1], x.flat[x.size // 2] = np.inf, np.nan
        self.x, self.dy = stored(x, data), stored(dy, data)
        self.gamma, self.beta = stored(rng.standard_normal(C), stat), stored(rng.standard_normal(C), stat)
        self.N, self.C, self.HxW, self.G = shape[0], C, int(np.prod(shape[2:], dtype=np.int64)), G
        self.data, self.stat = data, stat
        self.eps = 0.0 if variant == "tiny" else 1e-5


def run_case(lib, inp, digest_of):
    """Every call of the table on one input set; digest_of(name, arrays) records the outputs."""
    N, C, HxW, G, d, s = inp.N, inp.C, inp.HxW, inp.G, inp.data.encode(), inp.stat.encode()
    sizes = (N, C, HxW, G)
    fused = inp.data != "float64"
    for affine in (True, False):
        gamma, beta = (inp.gamma, inp.beta) if affine else (None, None)
        for k in ([None] + ([1.0, 0.7] if fused else [])):
            y = np.empty_like(inp.x)
            mean = np.empty((N, G), STORAGE[inp.stat])
            rstd = np.empty((N, G), STORAGE[inp.stat])
            if k is None:
                st = lib.MsGroupNormForward(ptr(inp.x), ptr(gamma), ptr(beta), ptr(y), ptr(mean), ptr(rstd), *sizes,
                                            inp.eps, d, s)
            else:
                st = lib.MsGroupNormSiluForward(ptr(inp.x), ptr(gamma), ptr(beta), ptr(y), ptr(mean), ptr(rstd),
                                                *sizes, inp.eps, k, d, s)
            tag = f"{'fused' + str(k) if k else 'gn'}-{'affine' if affine else 'plain'}"
            digest_of(f"{tag}-forward-st{st}", (y, mean, rstd))
            for mask in MASKS:
                dx = np.empty_like(inp.x) if mask[0] else None
                dgamma = np.empty(C, STORAGE[inp.stat]) if mask[1] else None
                dbeta = np.empty(C, STORAGE[inp.stat]) if mask[2] else None
                if k is None:
                    st = lib.MsGroupNormBackward(ptr(inp.dy), ptr(inp.x), ptr(mean), ptr(rstd), ptr(gamma), ptr(dx),
                                                 ptr(dgamma), ptr(dbeta), *sizes, d, s, *mask)
                else:
                    st = lib.MsGroupNormSiluBackward(ptr(inp.dy), ptr(inp.x), ptr(mean), ptr(rstd), ptr(gamma),
                                                     ptr(beta), ptr(dx), ptr(dgamma), ptr(dbeta), *sizes, k, d, s,
                                                     *mask)
                digest_of(f"{tag}-backward-{''.join(map(str, mask))}-st{st}", (dx, dgamma, dbeta))
            # rstd outside [2^-32, 2^32]: the backward's double loops
            if inp.N * inp.G > 0 and inp.stat != "float16":
                far = stored(np.full((N, G), 2.0 ** 40), inp.stat)
                dx = np.empty_like(inp.x)
                dgamma, dbeta = np.empty(C, STORAGE[inp.stat]), np.empty(C, STORAGE[inp.stat])
                if k is None:
                    st = lib.MsGroupNormBackward(ptr(inp.dy), ptr(inp.x), ptr(mean), ptr(far), ptr(gamma), ptr(dx),
                                                 ptr(dgamma), ptr(dbeta), *sizes, d, s, 1, 1, 1)
                else:
                    st = lib.MsGroupNormSiluBackward(ptr(inp.dy), ptr(inp.x), ptr(mean), ptr(far), ptr(gamma),
                                                     ptr(beta), ptr(dx), ptr(dgamma), ptr(dbeta), *sizes, k, d, s,
                                                     1, 1, 1)
                digest_of(f"{tag}-backward-far-rstd-st{st}", (dx, dgamma, dbeta))


def canonical_nans(a):
    """a with every NaN given one bit pattern: which NaN an operation returns when both of its
    operands are NaNs is the compiler's choice of operand order, not a property of the schedule."""
    if a.dtype == np.uint16:  # bfloat16 bits
        nan = ((a & 0x7F80) == 0x7F80) & ((a & 0x007F) != 0)
        return np.where(nan, np.uint16(0x7FC0), a)
    return np.where(np.isnan(a), np.array(np.nan, a.dtype), a)


def digests(lib, variants, nan_canonical=False):
    out = {}
    inputs = []
    for i, (shape, G) in enumerate(SHAPES):
        for data, stat in DTYPES:
            for variant in variants:
                if variant != "plain" and (np.prod(shape) > 200_000 or data == "float64"):
                    continue
                inputs.append((f"{'x'.join(map(str, shape))}/G{G}/{data}-{stat}/{variant}",
                               Inputs(shape, G, data, stat, variant, seed=i)))
    for name, inp in inputs:
        def record(call, arrays, name=name):
            h = hashlib.sha256()
            for a in arrays:
                h.update(b"-" if a is None else (canonical_nans(a) if nan_canonical else a).tobytes())
            out[f"{name}/{call}"] = h.hexdigest()
        run_case(lib, inp, record)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lib", required=True)
    parser.add_argument("--out", required=True, help='JSON file: {"isa (threads, minimum, stream)": {call: digest}}')
    parser.add_argument("--compare", help="a JSON file of another build to compare with")
    parser.add_argument("--isas", default="portable,active")
    parser.add_argument("--variants", default="plain,huge,tiny,big-dy,nonfinite")
    parser.add_argument("--nan-canonical", action="store_true", help="hash every NaN as one bit pattern")
    parser.add_argument("--configs", default=",".join(str(i) for i in range(len(CONFIGS))),
                        help="indices into CONFIGS")
    args = parser.parse_args()
    lib = load(args.lib)
    result, failed = {}, False
    for isa in args.isas.split(","):
        names = [b"avx512", b"avx2", b"portable"] if isa == "active" else [isa.encode()]
        if not any(lib.MsGroupNormSelectIsa(name) == 0 for name in names):
            raise SystemExit(f"ISA build {isa} is not available on this CPU")
        isa_name = lib.MsGroupNormActiveIsa().decode()
        first = None
        for index in map(int, args.configs.split(",")):
            threads, minimum, stream = CONFIGS[index]
            lib.MsGroupNormSetNumThreads(threads)
            lib.MsGroupNormSetMinElementsPerThread(minimum)
            lib.MsGroupNormSetStreamMinBytes(1 if stream else 0)
            got = digests(lib, args.variants.split(","), args.nan_canonical)
            result[f"{isa_name} {CONFIGS[index]}"] = got
            if first is None:
                first = got
                print(f"{isa_name}: {len(got)} calls, config {CONFIGS[index]}", flush=True)
                continue
            diff = [k for k in got if got[k] != first[k]]
            print(f"{isa_name}: config {CONFIGS[index]}: {len(diff)} calls differ from the first config", flush=True)
            for k in diff[:10]:
                print("   ", k)
            failed |= bool(diff)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=0, sort_keys=True)
    if args.compare:
        with open(args.compare) as f:
            other = json.load(f)
        for config, table in result.items():
            theirs = other.get(config, {})
            diff = [k for k in table if theirs.get(k) != table[k]]
            print(f"{config}: {len(table)} calls, {len(diff)} differ from {args.compare}")
            for k in diff[:20]:
                print("   ", k)
            failed |= bool(diff) or not theirs
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
