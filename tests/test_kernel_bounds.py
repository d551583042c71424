"""No CPU kernel touches a byte outside its arrays.

Every array of a call (inputs, outputs and statistics) is placed against a page that the
process may neither read nor write: once ending where that page begins, once beginning where
it ends. A load or store of one element past either end then faults. Rows end in partial
vectors (the AVX-512 build's masked loads and stores, whose masked-off lanes must not touch
memory; the other builds' lane-by-lane tails), so every tail length is run, in every build,
dtype and operator, with cached and streamed stores, on 1 thread (and on 2, splitting
even the smallest call, in the exhaustive tier). Each call must also
give the bits it gives with ordinary arrays.

The calls run in a child process, so that a fault fails one test instead of ending the run."""
import ctypes
import mmap
import subprocess
import sys

import numpy as np
import pytest

from kernel_placed_calls import OPERATORS, call_placed, operator_inputs

PAGE = mmap.PAGESIZE
PROT_NONE = 0  # <sys/mman.h>; the mmap module names only the other protections
# (N, C, HxW, G): every tail length of a 16-element vector and of a 32-element pair, the
# points of HxW = 1 (any C), and rows across a 2048-element block and the one-pass statistics
SIZES = ([(2, 4, hxw, 2) for hxw in range(1, 34)] + [(3, 2, 37, 1), (2, 2, 49, 2), (5, 6, 1, 3), (3, 13, 1, 1),
                                                     (7, 24, 1, 8), (1, 2, 2048 + 37, 1), (1, 4, 1300, 2)])


class GuardedPlacement:
    """Arrays against an inaccessible page: after it (``before=True``) or before it."""

    def __init__(self, before):
        self.before = before
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.maps = []  # kept alive until the call is over

    def __call__(self, name, like):
        data_pages = -(-like.nbytes // PAGE)
        region = mmap.mmap(-1, (data_pages + 1) * PAGE)
        self.maps.append(region)
        address = ctypes.addressof(ctypes.c_char.from_buffer(region))
        guard = address if self.before else address + data_pages * PAGE
        assert self.libc.mprotect(guard, PAGE, PROT_NONE) == 0, ctypes.get_errno()
        start = PAGE if self.before else data_pages * PAGE - like.nbytes
        view = np.frombuffer(region, np.uint8, like.nbytes, start).view(like.dtype).reshape(like.shape)
        view[...] = like
        return view


def check_operator(op, dtype, threads):
    """Runs every size, build and store kind; returns the number of checked calls and of builds."""
    from ms_groupnorm.backends import cpu_kernels

    lib = cpu_kernels.cdll()
    lib.MsGroupNormSetMinElementsPerThread(1)  # two threads split even the smallest call
    isas = [isa for isa in ("portable", "avx2", "avx512") if lib.MsGroupNormSelectIsa(isa.encode()) == 0]
    rng = np.random.default_rng(3)
    checked = 0
    for sizes in SIZES:
        inputs = operator_inputs(rng, sizes, dtype)
        for isa in isas:
            lib.MsGroupNormSelectIsa(isa.encode())
            lib.MsGroupNormSetNumThreads(threads)
            for stream_min in (0, 1):
                lib.MsGroupNormSetStreamMinBytes(stream_min)
                want = call_placed(lib, op, sizes, dtype, inputs, lambda name, a: a.copy())
                for before in (False, True):
                    got = call_placed(lib, op, sizes, dtype, inputs, GuardedPlacement(before))
                    assert got == want, (isa, threads, stream_min, sizes, "guard before" if before else "after")
                    checked += 1
    return checked, len(isas)


# Each case is a process of its own (~2.5 s): the default run takes every operator once and every
# dtype at least once; the exhaustive tier runs the whole matrix.
@pytest.mark.default_sample(op=list(OPERATORS), dtype=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("threads", [1, pytest.param(2, marks=pytest.mark.exhaustive)])
@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_no_kernel_touches_memory_outside_its_arrays(op, dtype, threads):
    result = subprocess.run([sys.executable, __file__, op, dtype, str(threads)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, f"exit {result.returncode} (a negative one is the signal that killed it)\n{result.stderr[-3000:]}"
    checked, builds = (int(word) for word in result.stdout.split())
    assert checked == len(SIZES) * builds * 2 * 2


if __name__ == "__main__":
    print(*check_operator(sys.argv[1], sys.argv[2], int(sys.argv[3])))
