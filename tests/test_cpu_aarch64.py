"""The CPU kernel library as an aarch64 host builds it (the Kunpeng hosts of Ascend servers):
cross-compiled with setup.py's flags and run under user-mode emulation, it gives the bits of
this machine's AVX2/AVX-512 build on every entry point, dtype pair and schedule.

The portable row loops, the only ones an aarch64 build has, fuse a * b + c where the target
has a hardware FMA (kernels/cpu/portable_mul_add.h), and every build adds the same numbers in
the same order, so the bits must be equal, not merely close. Needs aarch64-linux-gnu-g++ and
qemu-aarch64 (Debian: g++-aarch64-linux-gnu qemu-user); skipped with the reason otherwise,
unless MS_GROUPNORM_REQUIRE_AARCH64=1 (.ci/run sets it after installing them)."""
import ast
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ms_groupnorm.backends import cpu_kernels

ROOT = Path(__file__).resolve().parents[1]
COMPILER, EMULATOR, SYSROOT = "aarch64-linux-gnu-g++", "qemu-aarch64", "/usr/aarch64-linux-gnu"
REQUIRED = os.environ.get("MS_GROUPNORM_REQUIRE_AARCH64") == "1"

pytestmark = pytest.mark.exhaustive


def _setup_compile_args():
    """setup.py's extra_compile_args, read from its source (so this build is the one pip makes)."""
    for node in ast.walk(ast.parse((ROOT / "setup.py").read_text())):
        if isinstance(node, ast.keyword) and node.arg == "extra_compile_args":
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py names no extra_compile_args")


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    """Path of the aarch64 replay program, linked against the aarch64 kernel library."""
    missing = [tool for tool in (COMPILER, EMULATOR) if shutil.which(tool) is None]
    if missing:
        reason = f"no {' or '.join(missing)} on PATH (Debian: apt-get install g++-aarch64-linux-gnu qemu-user)"
        if REQUIRED:
            pytest.fail(reason)
        pytest.skip(reason)
    if cpu_kernels.cdll().MsGroupNormActiveIsa().decode() == "portable":
        pytest.skip("this CPU runs only the portable build, which rounds a * b + c twice here")
    out = tmp_path_factory.mktemp("aarch64")
    library = out / "libms_groupnorm_cpu.so"
    sources = sorted(str(p) for p in (ROOT / "kernels" / "cpu").glob("*.cc"))
    _compile(*_setup_compile_args(), "-fPIC", "-shared", "-Werror", *sources, "-o", str(library))
    program = out / "replay_calls"
    _compile("-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'kernels' / 'cpu'}",
             str(ROOT / "tests" / "cross_build" / "replay_calls.cc"), "-L", str(out), "-lms_groupnorm_cpu",
             "-Wl,-rpath,$ORIGIN", "-o", str(program))
    return program


def _compile(*args):
    """The cross compiler run on ``args``; a failure (any warning, with -Werror) shows its output."""
    done = subprocess.run([COMPILER, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


# (N, C, HxW, G): vector, 2048-block and row tails, the channel-wise schedule (N * G below
# the thread count), tiny channels, 2-D inputs (HxW = 1, one-element groups among them),
# G = 1, and a group of a quarter million elements.
SIZES = [(2, 6, 37, 3), (1, 4, 4096 + 2048 + 19, 2), (3, 8, 5, 4), (1, 3, 1000, 1), (2, 64, 16, 32),
         (2, 8, 56, 4), (5, 76, 1, 19), (3, 21, 1, 1), (2, 40, 1, 8), (4, 6, 1, 6), (1, 4, 65536, 1)]
# data kinds: mean 1 and spread 3 with fp16 subnormals; a large mean with a small spread;
# magnitudes 10^-6..10^6 with random signs; magnitudes near float32's top (the wide-range rows).
KINDS = ["normal", "large mean", "wide", "huge"]
DTYPE_PAIRS = [("float32", "float32"), ("float16", "float16"), ("float16", "float32"), ("bfloat16", "bfloat16"),
               ("bfloat16", "float32")]
STORAGE = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}


def _to_dtype(values, dtype):
    values = np.ascontiguousarray(values, np.float32)
    if dtype == "bfloat16":
        bits = values.view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    with np.errstate(over="ignore"):
        return values.astype(STORAGE[dtype])


def _values(rng, shape, kind, dtype):
    if kind == "normal":
        values = rng.standard_normal(shape) * 3 + 1
        if dtype == "float16":
            values.reshape(-1)[::97] = 3e-6
    elif kind == "large mean":
        values = 1e4 + 1e-2 * rng.standard_normal(shape)
    elif kind == "wide":
        top = 4 if dtype == "float16" else 6  # fp16 overflows above 65504
        values = np.sign(rng.standard_normal(shape)) * 10.0 ** rng.uniform(-6, top, shape)
    else:
        values = rng.uniform(-3e38, 3e38, shape) if dtype != "float16" else rng.uniform(-6e4, 6e4, shape)
    return _to_dtype(values, dtype)


def _calls(seed):
    """(header line, input arrays, native outputs) for every call of the table."""
    rng = np.random.default_rng(seed)
    calls = []
    for index, (N, C, hxw, G) in enumerate(SIZES):
        for pair_index, (data, stat) in enumerate(DTYPE_PAIRS):
            kind = KINDS[(index + pair_index) % len(KINDS)]
            affine = (index + pair_index) % 5 != 4  # every fifth call without gamma and beta
            threads = 1 + (index + pair_index) % 3
            x = _values(rng, (N, C, hxw), kind, data)
            dy = _values(rng, (N, C, hxw), "normal", data)
            gamma = _to_dtype(1 + 0.2 * rng.standard_normal(C), stat) if affine else None
            beta = _to_dtype(0.3 * rng.standard_normal(C), stat) if affine else None
            kw = dict(data_dtype=data, stat_dtype=stat)
            for op, forward, backward in (("", cpu_kernels.forward, cpu_kernels.backward),
                                          ("silu_", cpu_kernels.silu_forward, cpu_kernels.silu_backward)):
                line = f"{{}} {data} {stat} {N} {C} {hxw} {G} 1e-05 1.0 {threads} {int(affine)}"
                stats_kw = dict(kw, eps=1e-5) if op == "" else dict(kw, eps=1e-5, swish_scale=1.0)
                y, mean, rstd = forward(x, gamma, beta, G, **stats_kw)
                calls.append((line.format(op + "forward") + " 1 1 1", [x, gamma, beta], [y, mean, rstd]))
                mask = [(True, True, True), (True, False, True), (False, True, False)][index % 3]
                params = [gamma] if op == "" else [gamma, beta]
                grads = backward(dy, x, mean, rstd, *params, G, mask, **kw) if op == "" else \
                    backward(dy, x, mean, rstd, *params, G, mask, 1.0, **kw)
                masks = " ".join(str(int(m)) for m in mask)
                calls.append((line.format(op + "backward") + " " + masks, [dy, x, mean, rstd, *params],
                              [g for g in grads if g is not None]))
    return calls


def _run(program, calls):
    stdin = b"".join(line.encode() + b"\n" + b"".join(a.tobytes() for a in inputs if a is not None)
                     for line, inputs, _ in calls)
    done = subprocess.run([EMULATOR, "-L", SYSROOT, str(program)], input=stdin, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def _is_nan(array):
    if array.dtype == np.uint16:  # bfloat16 bits
        return (array & 0x7FFF) > 0x7F80
    return np.isnan(array)


def _same_bits(got, want):
    """Equal bits, except that a NaN may differ in sign and payload: an invalid operation gives
    x86's negative default NaN and Arm's positive one."""
    nan = _is_nan(want)
    return np.array_equal(nan, _is_nan(got)) and np.array_equal(got.view(np.uint8).reshape(got.shape + (-1,))[~nan],
                                                                want.view(np.uint8).reshape(want.shape + (-1,))[~nan])


def test_aarch64_build_gives_the_native_bits(replay):
    calls = _calls(seed=11)
    stdout, offset = _run(replay, calls), 0
    for line, _, native in calls:
        status = int.from_bytes(stdout[offset:offset + 4], "little", signed=True)
        offset += 4
        assert status == 0, f"{line}: status {status}"
        for index, want in enumerate(native):
            got = np.frombuffer(stdout[offset:offset + want.nbytes], want.dtype).reshape(want.shape)
            offset += want.nbytes
            assert _same_bits(got, want), f"{line}: output {index} differs from this machine's build"
    assert offset == len(stdout)


def test_replay_refuses_what_the_native_library_refuses(replay):
    """A wrong call gets the native status on aarch64 too (C % G != 0: status 5), and a call the
    replay cannot read stops it with a message instead of running on garbage."""
    x = np.zeros((1, 6, 4), np.float32)
    stdout = _run(replay, [("forward float32 float32 1 6 4 4 1e-05 1.0 1 0 1 1 1", [x], [])])
    assert int.from_bytes(stdout[:4], "little") == 5
    done = subprocess.run([EMULATOR, "-L", SYSROOT, str(replay)], input=b"forward float32 float32 1 6 4\n",
                          capture_output=True, timeout=60)
    assert done.returncode == 2 and b"bad call line" in done.stderr
